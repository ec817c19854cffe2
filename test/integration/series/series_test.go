/*
Copyright The events-apiserver Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package series tests the EventSeries admission plugin and its sweeper in
// the real server: unmodified client-go tools/events recorders, client-go
// clients and kubectl against a standalone events-apiserver (one per
// configuration: defaults, short thresholds, plugin disabled), and one
// aggregated behind kube-apiserver (envtest).
//
// Run with the envtest assets of hack/envtest-assets.sh (for kubectl):
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test ./test/integration/series/
package series

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/events"

	ourv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// hotLoopSize is how often the tests' reporters record the same event.
const hotLoopSize = 50

// TestEventSeriesWithDefaults runs a server with the plugin's default
// thresholds (client-go's 6m finish time, 30m+6m heartbeat).
func TestEventSeriesWithDefaults(t *testing.T) {
	t.Parallel()
	srv := framework.StartServer(t)
	c := clientsFor(t, srv.RestConfig)

	t.Run("client-go hot loop yields one Ongoing series", func(t *testing.T) {
		const namespace = "hot-loop"
		rec := startRecorder(t, srv.RestConfig)
		regarding := pod(namespace)
		for range hotLoopSize {
			rec.Eventf(regarding, nil, corev1.EventTypeWarning, "BackOff", "Restarting", "Back-off restarting failed container app")
		}

		// client-go writes the first occurrence (create) and the second (a
		// count-2 patch) concurrently. When the patch comes first, it gets
		// NotFound, client-go creates the series, that create then gets
		// AlreadyExists, and client-go patches again about 10s later: the
		// wait covers both orders.
		items := waitForEvents(t, c, namespace, "one event with a series of count 2, Ongoing", func(items []ourv1.Event) bool {
			return len(items) == 1 && items[0].Series != nil && items[0].Series.Count == 2 &&
				items[0].Series.State == ourv1.EventSeriesStateOngoing
		})
		// client-go sends count 2 when the second occurrence turns the
		// singleton into a series, then only counts in its cache until a
		// heartbeat (30m) or the final write (6m after the last occurrence).
		// Nothing more arrives in the meantime.
		expectNoWrite(t, c, namespace, items[0].ResourceVersion, time.Second)
		event := items[0]
		if event.Series == nil || event.Series.Count != 2 || event.Series.State != ourv1.EventSeriesStateOngoing {
			t.Fatalf("stored %s, want a series with count 2 and state Ongoing", describe(items))
		}
		if event.Regarding.Name != regarding.Name || event.ReportingController != reportingController || event.Reason != "BackOff" {
			t.Errorf("stored event is about %s by %s for %s, want %s by %s for BackOff",
				event.Regarding.Name, event.ReportingController, event.Reason, regarding.Name, reportingController)
		}
		if event.Series.LastObservedTime.Before(&event.EventTime) {
			t.Errorf("lastObservedTime %s before eventTime %s", event.Series.LastObservedTime, event.EventTime)
		}
	})

	t.Run("client-go final write more than 6m after the last occurrence finishes the series", func(t *testing.T) {
		ctx := testContext(t)
		const namespace = "final-write"
		sink := &events.EventSinkImpl{Interface: c.upstream.EventsV1()}
		// The event as client-go's recorder builds it, but first observed
		// ten minutes ago: its recorder's clock cannot be set, ours can.
		now := time.Now()
		event := recorderEvent(namespace, "web-0.final", now.Add(-10*time.Minute))
		if _, err := sink.Create(ctx, event); err != nil {
			t.Fatal(err)
		}
		// Second occurrence just under 6m ago: client-go's count-2 write
		// arrives while the series is still fresh.
		event.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(now.Add(-6*time.Minute + 4*time.Second))}
		framework.PatchSeries(ctx, t, sink, event)
		if got := getState(ctx, t, c, event); got.Count != 2 || got.State != ourv1.EventSeriesStateOngoing {
			t.Fatalf("after the count-2 write: %+v, want count 2, Ongoing", got)
		}

		// 48 more occurrences, the last one observed a millisecond later;
		// client-go sends its final write once that is more than 6m old.
		event.Series = &eventsv1.EventSeries{Count: hotLoopSize, LastObservedTime: metav1.NewMicroTime(event.Series.LastObservedTime.Add(time.Millisecond))}
		time.Sleep(time.Until(event.Series.LastObservedTime.Add(6*time.Minute + 200*time.Millisecond)))
		framework.PatchSeries(ctx, t, sink, event)
		if got := getState(ctx, t, c, event); got.Count != hotLoopSize || got.State != ourv1.EventSeriesStateFinished {
			t.Fatalf("after the final write: %+v, want count %d, Finished", got, hotLoopSize)
		}
	})

	t.Run("invalid transitions are refused", func(t *testing.T) {
		testInvalidTransitions(t, srv)
	})
}

// TestEventSeriesWithShortThresholds runs a server whose admission
// configuration file shortens every threshold, so that the final write and
// an abandoned series happen within seconds.
func TestEventSeriesWithShortThresholds(t *testing.T) {
	t.Parallel()
	const (
		finishAfter    = framework.SeriesFinishAfter
		abandonedAfter = framework.SeriesHeartbeatInterval + framework.SeriesHeartbeatSlack
	)
	config, err := framework.WriteSeriesAdmissionConfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := framework.StartServer(t, framework.WithServerArgs("--admission-control-config-file="+config))
	c := clientsFor(t, srv.RestConfig)

	t.Run("replayed client-go final write finishes a recorded series with its final count", func(t *testing.T) {
		ctx := testContext(t)
		const namespace = "finish"
		rec := startRecorder(t, srv.RestConfig)
		stored := recordHotLoop(t, c, rec, namespace)

		// client-go's final write: its cached event with the final count and
		// the time of the last occurrence (after the stored one), sent once
		// that time is more than finishAfter old (client-go: 6m, constant).
		final, err := c.upstream.EventsV1().Events(namespace).Get(ctx, stored.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		final.Series = &eventsv1.EventSeries{Count: hotLoopSize, LastObservedTime: metav1.NewMicroTime(stored.Series.LastObservedTime.Add(time.Millisecond))}
		framework.WriteFinalSeries(ctx, t, &events.EventSinkImpl{Interface: c.upstream.EventsV1()}, final, 30*time.Second)

		got := getState(ctx, t, c, final)
		if got.Count != hotLoopSize || got.State != ourv1.EventSeriesStateFinished {
			t.Fatalf("after the final write: %+v, want count %d, Finished", got, hotLoopSize)
		}
		// The sweeper leaves Finished series alone, even once abandoned.
		time.Sleep(time.Until(final.Series.LastObservedTime.Add(abandonedAfter + time.Second)))
		if got := getState(ctx, t, c, final); got.State != ourv1.EventSeriesStateFinished {
			t.Fatalf("later: %+v, want it still Finished", got)
		}
	})

	t.Run("a reporter that dies mid-series leaves it Unknown, never Finished", func(t *testing.T) {
		ctx := testContext(t)
		const namespace = "dies"
		rec := startRecorder(t, srv.RestConfig)
		stored := recordHotLoop(t, c, rec, namespace)

		watcher, err := c.ours.EventsV1().Events(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: stored.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer watcher.Stop()
		rec.stop() // no heartbeat, no final write

		var states []ourv1.EventSeriesState
		deadline := time.After(30 * time.Second)
		for done := false; !done; {
			select {
			case ev, ok := <-watcher.ResultChan():
				if !ok {
					t.Fatalf("watch closed; states seen: %v", states)
				}
				if ev.Type != watch.Modified {
					t.Fatalf("unexpected watch event %s: %+v", ev.Type, ev.Object)
				}
				event := ev.Object.(*ourv1.Event)
				states = append(states, event.Series.State)
				if event.Series.Count != 2 {
					t.Errorf("series count %d, want 2 (the last count the dead reporter sent)", event.Series.Count)
				}
				done = event.Series.State == ourv1.EventSeriesStateUnknown
			case <-deadline:
				t.Fatalf("series not Unknown after 30s; states seen: %v", states)
			}
		}
		if !slices.Equal(states, []ourv1.EventSeriesState{ourv1.EventSeriesStateUnknown}) {
			t.Errorf("states seen %v, want exactly one change, to Unknown", states)
		}
		// Quiet for longer than finishAfter: still Unknown; only a reporter's
		// write finishes a series.
		time.Sleep(finishAfter + time.Second)
		if got := getState(ctx, t, c, &stored); got.State != ourv1.EventSeriesStateUnknown {
			t.Fatalf("later: %+v, want it still Unknown", got)
		}
	})
}

// recordHotLoop records one event, waits until the server has it (so that
// client-go's count-2 write does not race its create, which would make
// client-go retry ten seconds later, beyond the short thresholds), then
// records it hotLoopSize-1 more times, and returns the stored Ongoing
// series with count 2.
func recordHotLoop(t *testing.T, c clients, rec *recorder, namespace string) ourv1.Event {
	t.Helper()
	regarding := pod(namespace)
	rec.Eventf(regarding, nil, corev1.EventTypeWarning, "BackOff", "Restarting", "Back-off restarting failed container app")
	waitForEvents(t, c, namespace, "the first occurrence", func(items []ourv1.Event) bool { return len(items) == 1 })
	for range hotLoopSize - 1 {
		rec.Eventf(regarding, nil, corev1.EventTypeWarning, "BackOff", "Restarting", "Back-off restarting failed container app")
	}
	items := waitForEvents(t, c, namespace, "one series", func(items []ourv1.Event) bool {
		return len(items) == 1 && items[0].Series != nil
	})
	if s := items[0].Series; s.Count != 2 || s.State != ourv1.EventSeriesStateOngoing {
		t.Fatalf("stored %s, want count 2, Ongoing", describe(items))
	}
	return items[0]
}

// recorderEvent is an event as client-go's tools/events recorder makes it.
func recorderEvent(namespace, name string, eventTime time.Time) *eventsv1.Event {
	regarding := pod(namespace)
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: namespace, Name: name},
		EventTime:           metav1.NewMicroTime(eventTime),
		ReportingController: reportingController,
		ReportingInstance:   reportingController + "-test",
		Action:              "Restarting",
		Reason:              "BackOff",
		Regarding:           corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: regarding.Name, UID: regarding.UID},
		Note:                "Back-off restarting failed container app",
		Type:                corev1.EventTypeWarning,
	}
}

// getState reads the series of the stored event.
func getState(ctx context.Context, t *testing.T, c clients, event metav1.Object) ourv1.EventSeries {
	t.Helper()
	stored, err := c.ours.EventsV1().Events(event.GetNamespace()).Get(ctx, event.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Series == nil {
		t.Fatalf("%s has no series", event.GetName())
	}
	return *stored.Series
}
