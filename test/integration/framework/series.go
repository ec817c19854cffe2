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

package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/events"

	ourv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	"github.com/kube-events/events-apiserver/pkg/generated/clientset/versioned"
)

// Short EventSeries thresholds for tests of series states, so that a
// series finishes and is abandoned within seconds.
const (
	SeriesFinishAfter       = 4 * time.Second
	SeriesHeartbeatInterval = 6 * time.Second
	SeriesHeartbeatSlack    = 2 * time.Second
	SeriesSweepInterval     = 500 * time.Millisecond
)

// WriteSeriesAdmissionConfig writes, in dir, an admission configuration
// file (--admission-control-config-file) that gives the EventSeries plugin
// and the server's series controllers the short thresholds above, and
// returns its path.
func WriteSeriesAdmissionConfig(dir string) (string, error) {
	config := fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: EventSeries
  configuration:
    apiVersion: eventseries.admission.events.k8s.io/v1alpha1
    kind: EventSeriesConfiguration
    finishAfter: %s
    heartbeatInterval: %s
    heartbeatSlack: %s
    sweepInterval: %s
`, SeriesFinishAfter, SeriesHeartbeatInterval, SeriesHeartbeatSlack, SeriesSweepInterval)
	path := filepath.Join(dir, "admission.yaml")
	return path, os.WriteFile(path, []byte(config), 0o600)
}

// PatchSeries writes event's series through sink as client-go's
// tools/events recorder does (its createPatchBytesForSeries): the strategic
// merge patch from event without its series to event. It fails t if the
// write fails.
func PatchSeries(ctx context.Context, t testing.TB, sink *events.EventSinkImpl, event *eventsv1.Event) {
	t.Helper()
	patch, err := SeriesPatch(event)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Patch(ctx, event, patch); err != nil {
		t.Fatalf("client-go's series patch of %s (%s): %v", event.Name, patch, err)
	}
}

// SeriesPatch is the strategic merge patch client-go's tools/events recorder
// sends for event's series: from event without its series to event.
func SeriesPatch(event *eventsv1.Event) ([]byte, error) {
	withoutSeries := event.DeepCopy()
	withoutSeries.Series = nil
	oldData, err := json.Marshal(withoutSeries)
	if err != nil {
		return nil, err
	}
	newData, err := json.Marshal(event)
	if err != nil {
		return nil, err
	}
	return strategicpatch.CreateTwoWayMergePatch(oldData, newData, eventsv1.Event{})
}

// ReceiveSeries reads n ADDED events from w, a watch of our events.k8s.io/v1
// (a series.state selection), and returns them by regarding name; any other
// watch event, or fewer than n within the timeout, fails t.
func ReceiveSeries(t testing.TB, w watch.Interface, n int, within time.Duration) map[string]*ourv1.Event {
	t.Helper()
	delivered := map[string]*ourv1.Event{}
	deadline := time.After(within)
	for len(delivered) < n {
		select {
		case e := <-w.ResultChan():
			event, ok := e.Object.(*ourv1.Event)
			if !ok || e.Type != watch.Added {
				t.Fatalf("series watch: %s %T, want ADDED events", e.Type, e.Object)
			}
			delivered[event.Regarding.Name] = event
		case <-deadline:
			t.Fatalf("series watch: delivered %d series within %v, want %d", len(delivered), within, n)
		}
	}
	return delivered
}

// WriteFinalSeries sends event's series the way client-go's tools/events
// recorder sends its final write: once the series is older than
// SeriesFinishAfter, as the series patch through sink. It fails t if the
// write fails or timeout passes first.
func WriteFinalSeries(ctx context.Context, t testing.TB, sink *events.EventSinkImpl, event *eventsv1.Event, timeout time.Duration) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return time.Since(event.Series.LastObservedTime.Time) > SeriesFinishAfter, nil
	}); err != nil {
		t.Fatal(err)
	}
	PatchSeries(ctx, t, sink, event)
}

// WaitForSeriesState waits until our events.k8s.io/v1 event namespace/name
// has a series in state want and returns it; it fails t after timeout.
func WaitForSeriesState(ctx context.Context, t testing.TB, ours versioned.Interface, namespace, name string, want ourv1.EventSeriesState, timeout time.Duration) *ourv1.Event {
	t.Helper()
	var got *ourv1.Event
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		event, err := ours.EventsV1().Events(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // not readable yet: keep waiting
		}
		got = event
		return got.Series != nil && got.Series.State == want, nil
	})
	if err != nil {
		series := "no event"
		if got != nil {
			series = fmt.Sprintf("%+v", got.Series)
		}
		t.Fatalf("series of %s/%s: %s, want %s: %v", namespace, name, series, want, err)
	}
	return got
}
