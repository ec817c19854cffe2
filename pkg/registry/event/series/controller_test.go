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

package series_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	ourcorev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/load"
	"github.com/kube-events/events-apiserver/pkg/apiserver"
	"github.com/kube-events/events-apiserver/pkg/mirror"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	"github.com/kube-events/events-apiserver/pkg/registry/event/series"
	"github.com/kube-events/events-apiserver/test/eventstore"
)

// upstreamSeries is a series as kube-apiserver holds it: client-go's
// recorder wrote it through core/v1, which knows no series.state.
func upstreamSeries(name string, lastObserved time.Time) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("upstream-" + name), ResourceVersion: "7"},
		InvolvedObject:      corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", APIVersion: "v1"},
		Reason:              "BackOff",
		Action:              "Restarting",
		Message:             "Back-off restarting failed container",
		Type:                corev1.EventTypeWarning,
		EventTime:           metav1.NewMicroTime(lastObserved.Add(-time.Minute)),
		ReportingController: "kubelet",
		ReportingInstance:   "kubelet-node-1",
		Series:              &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(lastObserved)},
	}
}

// TestMirroredSeriesGetStates writes series the way the mirror writes
// them (in-process, no admission) and checks that the controller gives them
// the state a write through our API gets.
func TestMirroredSeriesGetStates(t *testing.T) {
	store := eventstore.Start(t, true)
	thresholds := load.Default().Series
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		series.NewStateController(store, thresholds, clock.RealClock{}).Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })

	m := mirror.New(fake.NewClientset(), store, apiserver.Codecs.UniversalDecoder(), mirror.Options{}, clock.RealClock{})
	now := time.Now()
	for _, tc := range []struct {
		name     string
		upstream *corev1.Event
		want     core.EventSeriesState
	}{
		{"a series kept alive reads Ongoing", upstreamSeries("alive", now), core.EventSeriesStateOngoing},
		{"the reporter's final write finishes it", upstreamSeries("final", now.Add(-2*thresholds.FinishAfter.Duration)), core.EventSeriesStateFinished},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := m.Sync(t.Context(), tc.upstream); err != nil {
				t.Fatal(err)
			}
			var got core.EventSeriesState
			err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				obj, err := store.Get(eventregistry.InternalWriteContext(ctx, "default", ourcorev1.SchemeGroupVersion), tc.upstream.Name, &metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				got = obj.(*core.Event).Series.State
				return got != "", nil
			})
			if err != nil {
				t.Fatalf("state of the mirrored series: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("series.state (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSweepOnTheStore sweeps the server's store, behind its watch cache,
// holding many more singletons than series: the sweeper finds the
// abandoned series among them, stored Ongoing or without a state, and
// leaves the rest alone.
func TestSweepOnTheStore(t *testing.T) {
	store := eventstore.Start(t, true)
	thresholds := load.Default().Series
	ctx := eventregistry.InternalWriteContext(t.Context(), "default", ourcorev1.SchemeGroupVersion)
	now := time.Now()
	event := func(name string, series *core.EventSeries) *core.Event {
		return &core.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: name, Namespace: "default"},
			InvolvedObject:      core.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", APIVersion: "v1"},
			Reason:              "BackOff",
			Type:                core.EventTypeWarning,
			EventTime:           metav1.NewMicroTime(now.Add(-2 * time.Hour)),
			ReportingController: "kubelet",
			ReportingInstance:   "kubelet-node-1",
			Action:              "Restarting",
			Series:              series,
		}
	}
	seriesObserved := func(ago time.Duration, state core.EventSeriesState) *core.EventSeries {
		return &core.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(now.Add(-ago)), State: state}
	}
	abandoned := thresholds.AbandonedAfter() + time.Minute
	want := map[string]core.EventSeriesState{
		"abandoned":               core.EventSeriesStateUnknown,
		"abandoned-without-state": core.EventSeriesStateUnknown,
		"alive":                   core.EventSeriesStateOngoing,
		"finished":                core.EventSeriesStateFinished,
	}
	for name, series := range map[string]*core.EventSeries{
		"abandoned":               seriesObserved(abandoned, core.EventSeriesStateOngoing),
		"abandoned-without-state": seriesObserved(abandoned, ""),
		"alive":                   seriesObserved(time.Second, core.EventSeriesStateOngoing),
		"finished":                seriesObserved(abandoned, core.EventSeriesStateFinished),
	} {
		if _, err := store.Create(ctx, event(name, series), nil, &metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	for i := range 1200 {
		if _, err := store.Create(ctx, event(fmt.Sprintf("singleton-%d", i), nil), nil, &metav1.CreateOptions{}); err != nil {
			t.Fatalf("create singleton %d: %v", i, err)
		}
	}

	sweeper, err := series.NewSweeper(store, thresholds)
	if err != nil {
		t.Fatal(err)
	}
	marked, err := sweeper.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if marked != 2 {
		t.Errorf("marked %d series Unknown, want 2", marked)
	}
	got := map[string]core.EventSeriesState{}
	for name := range want {
		obj, err := store.Get(ctx, name, &metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got[name] = obj.(*core.Event).Series.State
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series states after the sweep (-want +got):\n%s", diff)
	}
}
