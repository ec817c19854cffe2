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

package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	applyeventsv1 "k8s.io/client-go/applyconfigurations/events/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// forEachVersionAndClient runs f as a parallel subtest for every served
// version with the JSON and the protobuf client, each in its own namespace.
func forEachVersionAndClient(t *testing.T, f func(t *testing.T, version apiVersion, c client, namespace string)) {
	t.Helper()
	for _, version := range allVersions {
		for _, c := range clientsFor(t, shared) {
			t.Run(version.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				f(t, version, c, namespaceFor(t))
			})
		}
	}
}

// createEvents creates n legacy events named <prefix>-<i> through core/v1.
func createEvents(t *testing.T, namespace, prefix string, n int) []string {
	t.Helper()
	c := jsonClient(t)
	var created []string
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if _, err := c.CoreV1().Events(namespace).Create(ctxFor(t), coreEventOf(legacyEvent(namespace, name)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		created = append(created, name)
	}
	return created
}

// createIn creates the event v through version with c.
func createIn(t *testing.T, version apiVersion, c client, v eventView) eventView {
	t.Helper()
	created, err := version.create(ctxFor(t), c, v)
	if err != nil {
		t.Fatalf("create %s/%s through %s (%s): %v", v.Namespace, v.Name, version.name, c.name, err)
	}
	return created
}

// validFor is an event version accepts on create.
func validFor(version apiVersion, namespace, name string) eventView {
	if version.legacy {
		return legacyEvent(namespace, name)
	}
	return newEvent(namespace, name)
}

func TestListWithLimitAndContinue(t *testing.T) {
	t.Parallel()
	forEachVersionAndClient(t, func(t *testing.T, version apiVersion, c client, namespace string) {
		ctx := ctxFor(t)
		want := createEvents(t, namespace, "page", 7)
		var got []string
		var pages []int
		opts := metav1.ListOptions{Limit: 3}
		for {
			items, meta, err := version.list(ctx, c, namespace, opts)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, len(items))
			for _, i := range items {
				got = append(got, i.Name)
			}
			if meta.Continue == "" {
				break
			}
			if meta.RemainingItemCount == nil || *meta.RemainingItemCount != int64(7-len(got)) {
				t.Errorf("after %d items remainingItemCount is %v, want %d", len(got), meta.RemainingItemCount, 7-len(got))
			}
			opts.Continue = meta.Continue
		}
		if fmt.Sprint(pages) != "[3 3 1]" {
			t.Errorf("page sizes %v, want [3 3 1]", pages)
		}
		if !equalStrings(got, want) {
			t.Errorf("paged through %v, want %v", got, want)
		}
	})
}

func TestWatchFromResourceVersion(t *testing.T) {
	t.Parallel()
	forEachVersionAndClient(t, func(t *testing.T, version apiVersion, c client, namespace string) {
		ctx := ctxFor(t)
		writer := jsonClient(t).CoreV1().Events(namespace)
		first, err := writer.Create(ctx, coreEventOf(legacyEvent(namespace, "first")), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// What happens after first was created is what the watch shows.
		if _, err := writer.Create(ctx, coreEventOf(legacyEvent(namespace, "second")), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := writer.Patch(ctx, "second", types.MergePatchType, []byte(`{"count":4}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := writer.Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}

		w, err := version.watch(ctx, c, namespace, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		want := []struct {
			typ   watch.EventType
			name  string
			count int32
		}{{watch.Added, "second", 3}, {watch.Modified, "second", 4}, {watch.Deleted, "first", 3}}
		for _, expected := range want {
			e := nextEvent(t, w)
			v, ok := version.view(e.Object)
			if !ok || e.Type != expected.typ || v.Name != expected.name || v.Count != expected.count {
				t.Fatalf("got %s %s (count %d), want %s %s (count %d)", e.Type, v.Name, v.Count, expected.typ, expected.name, expected.count)
			}
		}
	})
}

func TestWatchBookmarks(t *testing.T) {
	t.Parallel()
	forEachVersionAndClient(t, func(t *testing.T, version apiVersion, c client, namespace string) {
		ctx := ctxFor(t)
		createEvents(t, namespace, "bookmarked", 2)
		// A watch from resourceVersion 0 starts from whatever the watch
		// cache holds: wait until it holds both events, as a list from 0
		// shows, so that the watch must begin with both.
		eventually(t, requestTimeout, "the store's cache holds both events", func() (bool, error) {
			items, _, err := version.list(ctx, c, namespace, metav1.ListOptions{ResourceVersion: "0"})
			return len(items) == 2, err
		})

		// The periodic bookmark, which the server sends at the latest 2s
		// before the watch times out.
		timeout := int64(4)
		w, err := version.watch(ctx, c, namespace, metav1.ListOptions{AllowWatchBookmarks: true, TimeoutSeconds: &timeout, ResourceVersion: "0"})
		if err != nil {
			t.Fatal(err)
		}
		var added int
		for e := nextEvent(t, w); ; e = nextEvent(t, w) {
			if e.Type == watch.Added {
				added++
				continue
			}
			if e.Type != watch.Bookmark {
				t.Fatalf("got %s, want ADDED or BOOKMARK", e.Type)
			}
			if v, _ := version.view(e.Object); v.ResourceVersion == "" {
				t.Errorf("bookmark without resourceVersion: %#v", e.Object)
			}
			break
		}
		w.Stop()
		if added != 2 {
			t.Errorf("%d ADDED before the bookmark, want 2", added)
		}

		// The bookmark that ends the initial events of a streaming list
		// (sendInitialEvents), as client-go's reflector asks for it.
		send := true
		w, err = version.watch(ctx, c, namespace, metav1.ListOptions{AllowWatchBookmarks: true, SendInitialEvents: &send,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		added = 0
		for e := nextEvent(t, w); ; e = nextEvent(t, w) {
			if e.Type == watch.Added {
				added++
				continue
			}
			if e.Type != watch.Bookmark {
				t.Fatalf("got %s, want ADDED or BOOKMARK", e.Type)
			}
			accessor, err := meta.Accessor(e.Object)
			if err != nil {
				t.Fatal(err)
			}
			if accessor.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
				continue
			}
			break
		}
		if added != 2 {
			t.Errorf("%d initial events, want 2", added)
		}
	})
}

func TestUpdateWithStaleResourceVersionConflicts(t *testing.T) {
	t.Parallel()
	forEachVersionAndClient(t, func(t *testing.T, version apiVersion, c client, namespace string) {
		ctx := ctxFor(t)
		created := createIn(t, version, c, validFor(version, namespace, "contended"))
		update := func(labels map[string]string, resourceVersion string) error {
			switch version.name {
			case coreV1.name:
				e := coreEventOf(created)
				e.Labels, e.ResourceVersion = labels, resourceVersion
				_, err := c.CoreV1().Events(namespace).Update(ctx, e, metav1.UpdateOptions{})
				return err
			case eventsV1beta1.name:
				e := v1beta1EventOf(created)
				e.Labels, e.ResourceVersion = labels, resourceVersion
				_, err := c.EventsV1beta1().Events(namespace).Update(ctx, e, metav1.UpdateOptions{})
				return err
			default:
				e := v1EventOf(created)
				e.Labels, e.ResourceVersion = labels, resourceVersion
				_, err := c.EventsV1().Events(namespace).Update(ctx, e, metav1.UpdateOptions{})
				return err
			}
		}
		if err := update(map[string]string{"seen": "once"}, created.ResourceVersion); err != nil {
			t.Fatalf("update at the current resourceVersion: %v", err)
		}
		err := update(map[string]string{"seen": "twice"}, created.ResourceVersion)
		if !apierrors.IsConflict(err) {
			t.Fatalf("update at a stale resourceVersion: %v, want 409 Conflict", err)
		}
		if want := "the object has been modified; please apply your changes to the latest version and try again"; !strings.Contains(err.Error(), want) {
			t.Errorf("conflict message %q does not say %q", err.Error(), want)
		}
	})
}

func TestDryRunCreateDoesNotPersist(t *testing.T) {
	t.Parallel()
	forEachVersionAndClient(t, func(t *testing.T, version apiVersion, c client, namespace string) {
		ctx := ctxFor(t)
		v := validFor(version, namespace, "dry")
		var err error
		switch version.name {
		case coreV1.name:
			_, err = c.CoreV1().Events(namespace).Create(ctx, coreEventOf(v), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		case eventsV1beta1.name:
			_, err = c.EventsV1beta1().Events(namespace).Create(ctx, v1beta1EventOf(v), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		default:
			_, err = c.EventsV1().Events(namespace).Create(ctx, v1EventOf(v), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		}
		if err != nil {
			t.Fatalf("dry-run create: %v", err)
		}
		if _, err := version.get(ctx, c, namespace, "dry"); !apierrors.IsNotFound(err) {
			t.Fatalf("get after dry-run create: %v, want 404 Not Found", err)
		}
		// A dry run is validated like a real write.
		v.Reason = ""
		if version.legacy {
			v.EventTime, v.ReportingController, v.ReportingInstance, v.Action = microTimeString(microNow()), "", "", ""
		}
		switch version.name {
		case coreV1.name:
			_, err = c.CoreV1().Events(namespace).Create(ctx, coreEventOf(v), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		case eventsV1beta1.name:
			_, err = c.EventsV1beta1().Events(namespace).Create(ctx, v1beta1EventOf(v), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		default:
			_, err = c.EventsV1().Events(namespace).Create(ctx, v1EventOf(v), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		}
		if !apierrors.IsInvalid(err) {
			t.Fatalf("dry-run create of an invalid event: %v, want 422 Invalid", err)
		}
	})
}

func TestDeleteAndDeleteCollection(t *testing.T) {
	t.Parallel()
	forEachVersionAndClient(t, func(t *testing.T, version apiVersion, c client, namespace string) {
		ctx := ctxFor(t)
		createEvents(t, namespace, "doomed", 3)
		kept := legacyEvent(namespace, "kept")
		kept.Reason = "Pulled"
		createIn(t, coreV1, c, kept)

		var deleteOne func(name string) error
		var deleteMatching func(selector string) error
		switch version.name {
		case coreV1.name:
			deleteOne = func(name string) error { return c.CoreV1().Events(namespace).Delete(ctx, name, metav1.DeleteOptions{}) }
			deleteMatching = func(selector string) error {
				return c.CoreV1().Events(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: selector})
			}
		case eventsV1beta1.name:
			deleteOne = func(name string) error {
				return c.EventsV1beta1().Events(namespace).Delete(ctx, name, metav1.DeleteOptions{})
			}
			deleteMatching = func(selector string) error {
				return c.EventsV1beta1().Events(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: selector})
			}
		default:
			deleteOne = func(name string) error {
				return c.EventsV1().Events(namespace).Delete(ctx, name, metav1.DeleteOptions{})
			}
			deleteMatching = func(selector string) error {
				return c.EventsV1().Events(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: selector})
			}
		}

		if err := deleteOne("doomed-0"); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if _, err := version.get(ctx, c, namespace, "doomed-0"); !apierrors.IsNotFound(err) {
			t.Fatalf("get after delete: %v, want 404", err)
		}
		if err := deleteOne("doomed-0"); !apierrors.IsNotFound(err) {
			t.Fatalf("second delete: %v, want 404", err)
		}
		// With each version's own label for the object the events are about.
		selector := "regarding.kind=Pod,reason=BackOff"
		if version.legacy {
			selector = "involvedObject.kind=Pod,reason=BackOff"
		}
		if err := deleteMatching(selector); err != nil {
			t.Fatalf("deletecollection %s: %v", selector, err)
		}
		items, _, err := version.list(ctx, c, namespace, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(items); !equalStrings(got, []string{"kept"}) {
			t.Errorf("after deletecollection %s: %v, want [kept]", selector, got)
		}
	})
}

// TestPatches patches counts and timestamps of core/v1 events and the series
// of events.k8s.io events with every patch type, in JSON and protobuf.
func TestPatches(t *testing.T) {
	t.Parallel()
	for _, c := range clientsFor(t, shared) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			namespace := namespaceFor(t)
			ctx := ctxFor(t)
			events := c.CoreV1().Events(namespace)
			createIn(t, coreV1, c, legacyEvent(namespace, "patched"))
			later := now().Add(time.Minute)

			e, err := events.Patch(ctx, "patched", types.JSONPatchType,
				[]byte(`[{"op":"test","path":"/count","value":3},{"op":"replace","path":"/count","value":4},{"op":"replace","path":"/message","value":"json patched"}]`),
				metav1.PatchOptions{})
			if err != nil || e.Count != 4 || e.Message != "json patched" {
				t.Fatalf("JSON patch: %v, count %d, message %q", err, e.Count, e.Message)
			}
			e, err = events.Patch(ctx, "patched", types.MergePatchType,
				fmt.Appendf(nil, `{"count":5,"lastTimestamp":%q}`, later.Format(time.RFC3339)), metav1.PatchOptions{})
			if err != nil || e.Count != 5 || !e.LastTimestamp.Equal(&metav1.Time{Time: later}) {
				t.Fatalf("merge patch: %v, count %d, lastTimestamp %v", err, e.Count, e.LastTimestamp)
			}
			e, err = events.Patch(ctx, "patched", types.StrategicMergePatchType,
				fmt.Appendf(nil, `{"count":6,"lastTimestamp":%q}`, later.Add(time.Minute).Format(time.RFC3339)), metav1.PatchOptions{})
			if err != nil || e.Count != 6 || !e.LastTimestamp.Equal(&metav1.Time{Time: later.Add(time.Minute)}) {
				t.Fatalf("strategic merge patch: %v, count %d, lastTimestamp %v", err, e.Count, e.LastTimestamp)
			}
			if _, err := events.Patch(ctx, "patched", types.MergePatchType, []byte(`{"count":`), metav1.PatchOptions{}); !apierrors.IsBadRequest(err) {
				t.Errorf("malformed merge patch: %v, want 400", err)
			}
			// As kube-apiserver (k8s.io/apiserver's patch handler): 422.
			_, err = events.Patch(ctx, "patched", types.JSONPatchType, []byte(`[{"op":"test","path":"/count","value":1}]`), metav1.PatchOptions{})
			if !apierrors.IsInvalid(err) {
				t.Errorf("failing JSON patch test: %v, want 422", err)
			}

			// events.k8s.io: a series advances by patch.
			createIn(t, eventsV1, c, newEvent(namespace, "series"))
			observed := microNow()
			v1, err := c.EventsV1().Events(namespace).Patch(ctx, "series", types.StrategicMergePatchType,
				fmt.Appendf(nil, `{"series":{"count":5,"lastObservedTime":%q}}`, observed.Format(metav1.RFC3339Micro)), metav1.PatchOptions{})
			if err != nil || v1.Series == nil || v1.Series.Count != 5 || !v1.Series.LastObservedTime.Equal(&observed) {
				t.Fatalf("strategic merge patch of series: %v, %+v", err, v1)
			}
			v1beta1, err := c.EventsV1beta1().Events(namespace).Patch(ctx, "series", types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"patched":"merge"}},"series":{"count":6}}`), metav1.PatchOptions{})
			if err != nil || v1beta1.Series == nil || v1beta1.Series.Count != 6 || v1beta1.Labels["patched"] != "merge" {
				t.Fatalf("merge patch of series: %v, %+v", err, v1beta1)
			}
			v1, err = c.EventsV1().Events(namespace).Patch(ctx, "series", types.JSONPatchType,
				[]byte(`[{"op":"replace","path":"/series/count","value":7}]`), metav1.PatchOptions{})
			if err != nil || v1.Series.Count != 7 {
				t.Fatalf("JSON patch of series: %v, %+v", err, v1)
			}
			// What identifies an events.k8s.io event does not change.
			_, err = c.EventsV1().Events(namespace).Patch(ctx, "series", types.MergePatchType, []byte(`{"note":"rewritten"}`), metav1.PatchOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "note") {
				t.Errorf("patch of note through events.k8s.io/v1: %v, want 422 naming note", err)
			}
		})
	}
}

// TestStrategicMergePatchAsToolsRecordSendsIt repeats an event through
// client-go's tools/record correlator and sends the patch it computes
// through the core/v1 EventSinkImpl, exactly as the legacy recorder does.
func TestStrategicMergePatchAsToolsRecordSendsIt(t *testing.T) {
	t.Parallel()
	for _, c := range clientsFor(t, shared) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			namespace := namespaceFor(t)
			sink := &typedcorev1.EventSinkImpl{Interface: c.CoreV1().Events("")}
			correlator := record.NewEventCorrelator(clock.RealClock{})

			occurrence := func(at time.Time) *corev1.Event {
				return &corev1.Event{
					ObjectMeta:     metav1.ObjectMeta{Name: "web.17a2b3c4d5e6f708", Namespace: namespace},
					InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: "web", UID: "uid-web", APIVersion: "v1"},
					Reason:         "BackOff", Message: "Back-off restarting failed container", Type: corev1.EventTypeWarning,
					Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
					FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at), Count: 1,
				}
			}
			first := now().Add(-time.Minute)
			result, err := correlator.EventCorrelate(occurrence(first))
			if err != nil || result.Skip || result.Patch != nil {
				t.Fatalf("first occurrence: %v %+v", err, result)
			}
			created, err := sink.Create(result.Event)
			if err != nil {
				t.Fatal(err)
			}
			correlator.UpdateState(created)

			last := first
			for count := int32(2); count <= 3; count++ {
				last = last.Add(20 * time.Second)
				result, err := correlator.EventCorrelate(occurrence(last))
				if err != nil || result.Skip || result.Patch == nil {
					t.Fatalf("occurrence %d: %v %+v", count, err, result)
				}
				var patch map[string]any
				if err := json.Unmarshal(result.Patch, &patch); err != nil {
					t.Fatal(err)
				}
				if _, ok := patch["count"]; !ok {
					t.Fatalf("tools/record's patch %s has no count", result.Patch)
				}
				patched, err := sink.Patch(result.Event, result.Patch)
				if err != nil {
					t.Fatalf("patch %s: %v", result.Patch, err)
				}
				correlator.UpdateState(patched)
				if patched.Count != count || !patched.LastTimestamp.Equal(&metav1.Time{Time: last}) ||
					!patched.FirstTimestamp.Equal(&metav1.Time{Time: first}) || patched.Message != created.Message || patched.UID != created.UID {
					t.Fatalf("after patch %s: count %d lastTimestamp %v firstTimestamp %v message %q, want count %d lastTimestamp %v firstTimestamp %v",
						result.Patch, patched.Count, patched.LastTimestamp, patched.FirstTimestamp, patched.Message, count, last, first)
				}
			}
			// events.k8s.io sees the repetitions as deprecatedCount.
			v1, err := c.EventsV1().Events(namespace).Get(ctxFor(t), created.Name, metav1.GetOptions{})
			if err != nil || v1.DeprecatedCount != 3 || v1.ReportingController != "kubelet" {
				t.Fatalf("read through events.k8s.io/v1: %v %+v", err, v1)
			}
		})
	}
}

// TestServerSideApply creates and updates events with apply patches through
// core/v1 and events.k8s.io/v1.
func TestServerSideApply(t *testing.T) {
	t.Parallel()
	for _, c := range clientsFor(t, shared) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			namespace := namespaceFor(t)
			ctx := ctxFor(t)
			opts := metav1.ApplyOptions{FieldManager: "integration-test", Force: true}

			at := now()
			legacy := applycorev1.Event("applied", namespace).
				WithInvolvedObject(applycorev1.ObjectReference().WithKind("Pod").WithNamespace(namespace).WithName("web").WithAPIVersion("v1")).
				WithReason("BackOff").WithMessage("Back-off restarting failed container").WithType(corev1.EventTypeWarning).
				WithSource(applycorev1.EventSource().WithComponent("kubelet")).
				WithCount(1).WithFirstTimestamp(metav1.NewTime(at)).WithLastTimestamp(metav1.NewTime(at))
			e, err := c.CoreV1().Events(namespace).Apply(ctx, legacy, opts)
			if err != nil {
				t.Fatalf("apply (create) through core/v1: %v", err)
			}
			if !managedBy(e.ManagedFields, "integration-test", metav1.ManagedFieldsOperationApply) {
				t.Errorf("managedFields %+v have no Apply entry of integration-test", e.ManagedFields)
			}
			e, err = c.CoreV1().Events(namespace).Apply(ctx, legacy.WithCount(2).WithLastTimestamp(metav1.NewTime(at.Add(time.Minute))), opts)
			if err != nil || e.Count != 2 || !e.LastTimestamp.Equal(&metav1.Time{Time: at.Add(time.Minute)}) {
				t.Fatalf("apply (update) through core/v1: %v, %+v", err, e)
			}

			eventTime := microNow()
			series := applyeventsv1.Event("applied-series", namespace).
				WithRegarding(applycorev1.ObjectReference().WithKind("Deployment").WithNamespace(namespace).WithName("web").WithAPIVersion("apps/v1")).
				WithReason("ScalingReplicaSet").WithAction("Scale").WithNote("Scaled up").WithType(corev1.EventTypeNormal).
				WithReportingController("example.com/deployment-controller").WithReportingInstance("controller-0").
				WithEventTime(eventTime)
			v1, err := c.EventsV1().Events(namespace).Apply(ctx, series, opts)
			if err != nil || v1.Series != nil {
				t.Fatalf("apply (create) through events.k8s.io/v1: %v, %+v", err, v1)
			}
			observed := metav1.NewMicroTime(eventTime.Add(time.Second))
			v1, err = c.EventsV1().Events(namespace).Apply(ctx,
				series.WithSeries(applyeventsv1.EventSeries().WithCount(2).WithLastObservedTime(observed)).WithLabels(map[string]string{"applied": "twice"}), opts)
			if err != nil || v1.Series == nil || v1.Series.Count != 2 || !v1.Series.LastObservedTime.Equal(&observed) || v1.Labels["applied"] != "twice" {
				t.Fatalf("apply (update) through events.k8s.io/v1: %v, %+v", err, v1)
			}
			if !managedBy(v1.ManagedFields, "integration-test", metav1.ManagedFieldsOperationApply) {
				t.Errorf("managedFields %+v have no Apply entry of integration-test", v1.ManagedFields)
			}
		})
	}
}

func managedBy(entries []metav1.ManagedFieldsEntry, manager string, op metav1.ManagedFieldsOperationType) bool {
	for _, e := range entries {
		if e.Manager == manager && e.Operation == op {
			return true
		}
	}
	return false
}
