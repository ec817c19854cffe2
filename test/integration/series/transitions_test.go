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

package series

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	ourv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// The resources as the dynamic client names them.
var (
	eventsV1GVR = schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}
	coreV1GVR   = schema.GroupVersionResource{Version: "v1", Resource: "events"}
)

// kubectlResource is how kubectl is told which API serves the write.
func kubectlResource(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return "events" // core/v1: kubectl's first match
	}
	return "events.v1.events.k8s.io"
}

// writeKind is how a test case writes.
type writeKind int

const (
	// patchWrite is a JSON merge patch: kubectl patch --type=merge, a typed
	// client's Patch.
	patchWrite writeKind = iota
	// updateWrite reads, changes and writes back: kubectl get + replace, the
	// dynamic client's Get + Update.
	updateWrite
	// createWrite writes a new event: kubectl create, a typed client's Create.
	createWrite
)

// fixture is the stored event an update or patch case starts from.
type fixture int

const (
	noFixture      fixture = iota
	ongoingSeries          // count 5, observed from 60s to 30s ago, Ongoing
	finishedSeries         // the same, Finished
)

const fixtureCount = 5

// seriesTimes are the eventTime and series.lastObservedTime of a fixture.
type seriesTimes struct {
	eventTime, lastObserved time.Time
}

func newSeriesTimes() seriesTimes {
	now := time.Now().UTC().Truncate(time.Microsecond)
	return seriesTimes{eventTime: now.Add(-time.Minute), lastObserved: now.Add(-30 * time.Second)}
}

func micro(t time.Time) string { return t.UTC().Format(metav1.RFC3339Micro) }

// seriesEvent is an events.k8s.io/v1 event with a series, as a manifest.
func seriesEvent(namespace, name string, count int, times seriesTimes, state ourv1.EventSeriesState) map[string]any {
	series := map[string]any{"count": int64(count), "lastObservedTime": micro(times.lastObserved)}
	if state != "" {
		series["state"] = string(state)
	}
	return map[string]any{
		"apiVersion":          "events.k8s.io/v1",
		"kind":                "Event",
		"metadata":            map[string]any{"namespace": namespace, "name": name},
		"eventTime":           micro(times.eventTime),
		"series":              series,
		"reportingController": reportingController,
		"reportingInstance":   reportingController + "-0",
		"action":              "Restarting",
		"reason":              "BackOff",
		"regarding":           map[string]any{"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": "web-0"},
		"note":                "Back-off restarting failed container app",
		"type":                corev1.EventTypeWarning,
	}
}

// coreSeriesEvent is the same event as a core/v1 manifest.
func coreSeriesEvent(namespace, name string, count int, times seriesTimes) map[string]any {
	return map[string]any{
		"apiVersion":         "v1",
		"kind":               "Event",
		"metadata":           map[string]any{"namespace": namespace, "name": name},
		"eventTime":          micro(times.eventTime),
		"series":             map[string]any{"count": int64(count), "lastObservedTime": micro(times.lastObserved)},
		"reportingComponent": reportingController,
		"reportingInstance":  reportingController + "-0",
		"action":             "Restarting",
		"reason":             "BackOff",
		"involvedObject":     map[string]any{"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": "web-0"},
		"message":            "Back-off restarting failed container app",
		"type":               corev1.EventTypeWarning,
	}
}

// transition is one invalid write, tried through client-go and kubectl.
type transition struct {
	name    string
	fixture fixture
	kind    writeKind
	gvr     schema.GroupVersionResource
	// patch is the merge patch of a patchWrite.
	patch string
	// mutate changes the stored event of an updateWrite.
	mutate func(t *testing.T, obj map[string]any, times seriesTimes)
	// object is the new event of a createWrite.
	object func(namespace, name string, times seriesTimes) map[string]any
	// want are the parts of the refusal's message, besides its first line.
	want func(times seriesTimes) []string
}

func invalidTransitions() []transition {
	return []transition{
		{
			name: "lowering series.count", fixture: ongoingSeries, kind: patchWrite, gvr: eventsV1GVR,
			patch: `{"series":{"count":3}}`,
			want: func(seriesTimes) []string {
				return []string{"series.count: Invalid value: 3: may not decrease (was 5)"}
			},
		},
		{
			name: "lowering series.count through core/v1", fixture: ongoingSeries, kind: patchWrite, gvr: coreV1GVR,
			patch: `{"series":{"count":4}}`,
			want: func(seriesTimes) []string {
				return []string{"series.count: Invalid value: 4: may not decrease (was 5)"}
			},
		},
		{
			name: "moving lastObservedTime backwards", fixture: ongoingSeries, kind: updateWrite, gvr: eventsV1GVR,
			mutate: func(t *testing.T, obj map[string]any, times seriesTimes) {
				setField(t, obj, micro(times.lastObserved.Add(-10*time.Second)), "series", "lastObservedTime")
			},
			want: func(times seriesTimes) []string {
				return []string{`series.lastObservedTime: Invalid value: "` + micro(times.lastObserved.Add(-10*time.Second)) +
					`": may not move backwards (was ` + micro(times.lastObserved) + `)`}
			},
		},
		{
			name: "changing action", fixture: ongoingSeries, kind: patchWrite, gvr: eventsV1GVR,
			patch: `{"action":"Killing"}`,
			want: func(seriesTimes) []string {
				return []string{`action: Invalid value: "Killing": field is immutable`}
			},
		},
		{
			name: "changing regarding.name", fixture: ongoingSeries, kind: updateWrite, gvr: coreV1GVR,
			mutate: func(t *testing.T, obj map[string]any, _ seriesTimes) {
				setField(t, obj, "web-1", "involvedObject", "name")
			},
			want: func(seriesTimes) []string {
				return []string{`involvedObject.name: Invalid value: "web-1": field is immutable: it is part of the event series' identity`}
			},
		},
		{
			name: "changing reportingController", fixture: ongoingSeries, kind: patchWrite, gvr: eventsV1GVR,
			patch: `{"reportingController":"other"}`,
			want: func(seriesTimes) []string {
				return []string{`reportingController: Invalid value: "other": field is immutable`}
			},
		},
		{
			name: "Finished back to Ongoing", fixture: finishedSeries, kind: patchWrite, gvr: eventsV1GVR,
			patch: `{"series":{"state":"Ongoing"}}`,
			want: func(seriesTimes) []string {
				return []string{`series.state: Invalid value: "Ongoing": may not change once the series is Finished: a Finished series is final; report a new occurrence as a new event`}
			},
		},
		{
			name: "count change after Finished", fixture: finishedSeries, kind: patchWrite, gvr: eventsV1GVR,
			patch: `{"series":{"count":6}}`,
			want: func(seriesTimes) []string {
				return []string{"series.count: Invalid value: 6: may not change once the series is Finished (was 5): a Finished series is final"}
			},
		},
		{
			name: "new series with count 1", kind: createWrite, gvr: eventsV1GVR,
			object: func(namespace, name string, times seriesTimes) map[string]any {
				return seriesEvent(namespace, name, 1, times, "")
			},
			want: func(seriesTimes) []string {
				return []string{"series.count: Invalid value: 1: must be at least 2"}
			},
		},
		{
			name: "new core/v1 series with count 1", kind: createWrite, gvr: coreV1GVR,
			object: func(namespace, name string, times seriesTimes) map[string]any {
				return coreSeriesEvent(namespace, name, 1, times)
			},
			want: func(seriesTimes) []string {
				return []string{"series.count: Invalid value: 1: must be at least 2: an event observed once is a singleton and has no series"}
			},
		},
	}
}

// testInvalidTransitions tries every invalid transition through client-go
// and through kubectl, and checks that both are refused with 422 Invalid,
// naming the rule and the fields, and that the stored event is unchanged.
func testInvalidTransitions(t *testing.T, srv *framework.Server) {
	c := clientsFor(t, srv.RestConfig)
	dyn, err := dynamic.NewForConfig(srv.RestConfig)
	if err != nil {
		t.Fatal(err)
	}
	const namespace = "transitions"
	for i, tc := range invalidTransitions() {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			name := "transition-" + string(rune('a'+i))
			times := newSeriesTimes()
			var stored *ourv1.Event
			if tc.fixture != noFixture {
				stored = createFixture(ctx, t, c, namespace, name, tc.fixture, times)
			}

			t.Run("client-go", func(t *testing.T) {
				err := clientGoWrite(ctx, t, c, dyn, tc, namespace, name, times)
				status, ok := err.(apierrors.APIStatus)
				if !ok {
					t.Fatalf("got %v, want a refusal", err)
				}
				if got := status.Status(); got.Code != http.StatusUnprocessableEntity || got.Reason != metav1.StatusReasonInvalid {
					t.Errorf("status %d %s, want 422 Invalid", got.Code, got.Reason)
				}
				// The message starts with the kind, group-qualified or not:
				// the plugin names the request's group, the store's
				// validation the core group.
				for _, part := range append([]string{`"` + name + `" is invalid: `}, tc.want(times)...) {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("message %q does not contain %q", err.Error(), part)
					}
				}
			})

			t.Run("kubectl", func(t *testing.T) {
				stdout, stderr, err := kubectlWrite(t, srv, tc, namespace, name, times)
				if err == nil {
					t.Fatalf("kubectl accepted the write: %s", stdout)
				}
				// -v=6 logs every response's status.
				if !strings.Contains(stderr, "422 Unprocessable Entity") {
					t.Errorf("no 422 in kubectl's log:\n%s", stderr)
				}
				for _, part := range append([]string{`The Event "` + name + `" is invalid: `}, tc.want(times)...) {
					if !strings.Contains(stderr, part) {
						t.Errorf("kubectl's error does not contain %q:\n%s", part, stderr)
					}
				}
			})

			if stored != nil {
				after, err := c.ours.EventsV1().Events(namespace).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if after.ResourceVersion != stored.ResourceVersion {
					t.Errorf("stored event changed: %s -> %s", describe([]ourv1.Event{*stored}), describe([]ourv1.Event{*after}))
				}
			} else if _, err := c.ours.EventsV1().Events(namespace).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("refused event exists: %v", err)
			}
		})
	}
}

// createFixture stores the event a case starts from through the generated
// clientset, which can set series.state.
func createFixture(ctx context.Context, t *testing.T, c clients, namespace, name string, f fixture, times seriesTimes) *ourv1.Event {
	t.Helper()
	state := ourv1.EventSeriesStateOngoing
	if f == finishedSeries {
		state = ourv1.EventSeriesStateFinished
	}
	var event ourv1.Event
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(seriesEvent(namespace, name, fixtureCount, times, state), &event); err != nil {
		t.Fatal(err)
	}
	created, err := c.ours.EventsV1().Events(namespace).Create(ctx, &event, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the fixture: %v", err)
	}
	if created.Series == nil || created.Series.State != state {
		t.Fatalf("fixture stored as %s, want state %s", describe([]ourv1.Event{*created}), state)
	}
	return created
}

// clientGoWrite makes the case's write with client-go: typed upstream
// clients for patches and creates, the dynamic client for updates.
func clientGoWrite(ctx context.Context, t *testing.T, c clients, dyn dynamic.Interface, tc transition, namespace, name string, times seriesTimes) error {
	t.Helper()
	switch tc.kind {
	case patchWrite:
		if tc.gvr.Group == "" {
			_, err := c.upstream.CoreV1().Events(namespace).Patch(ctx, name, types.MergePatchType, []byte(tc.patch), metav1.PatchOptions{})
			return err
		}
		_, err := c.upstream.EventsV1().Events(namespace).Patch(ctx, name, types.MergePatchType, []byte(tc.patch), metav1.PatchOptions{})
		return err
	case updateWrite:
		obj, err := dyn.Resource(tc.gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tc.mutate(t, obj.Object, times)
		_, err = dyn.Resource(tc.gvr).Namespace(namespace).Update(ctx, obj, metav1.UpdateOptions{})
		return err
	default:
		object := tc.object(namespace, name, times)
		if tc.gvr.Group == "" {
			var event corev1.Event
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object, &event); err != nil {
				t.Fatal(err)
			}
			_, err := c.upstream.CoreV1().Events(namespace).Create(ctx, &event, metav1.CreateOptions{})
			return err
		}
		var event eventsv1.Event
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object, &event); err != nil {
			t.Fatal(err)
		}
		_, err := c.upstream.EventsV1().Events(namespace).Create(ctx, &event, metav1.CreateOptions{})
		return err
	}
}

// kubectlWrite makes the case's write with kubectl, logging responses.
func kubectlWrite(t *testing.T, srv *framework.Server, tc transition, namespace, name string, times seriesTimes) (stdout, stderr string, err error) {
	t.Helper()
	resource := kubectlResource(tc.gvr)
	switch tc.kind {
	case patchWrite:
		return framework.Kubectl(t, srv.KubeconfigPath, "-v=6", "patch", resource, name, "-n", namespace, "--type=merge", "-p", tc.patch)
	case updateWrite:
		stdout, stderr, err := framework.Kubectl(t, srv.KubeconfigPath, "get", resource, name, "-n", namespace, "-o", "json")
		if err != nil {
			t.Fatalf("kubectl get: %v: %s", err, stderr)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(stdout), &obj); err != nil {
			t.Fatal(err)
		}
		tc.mutate(t, obj, times)
		return framework.Kubectl(t, srv.KubeconfigPath, "-v=6", "replace", "-f", manifest(t, obj))
	default:
		return framework.Kubectl(t, srv.KubeconfigPath, "-v=6", "create", "-f", manifest(t, tc.object(namespace, name, times)))
	}
}

// manifest writes obj to a JSON file for kubectl -f.
func manifest(t *testing.T, obj map[string]any) string {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, t.TempDir(), "event.json", string(data))
}

func setField(t *testing.T, obj map[string]any, value any, fields ...string) {
	t.Helper()
	if err := unstructured.SetNestedField(obj, value, fields...); err != nil {
		t.Fatal(err)
	}
}
