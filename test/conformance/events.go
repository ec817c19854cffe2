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

// Package conformance is a port of Kubernetes' four Events [Conformance]
// tests, those of k8s.io/kubernetes v1.37.2 (the release of the k8s.io/*
// v0.37.2 modules the server builds on):
//
//   - test/e2e/instrumentation/core_events.go: "Events should manage the
//     lifecycle of an event" and "Events should delete a collection of
//     events" (core/v1);
//   - test/e2e/instrumentation/events.go: "Events API should ensure that
//     an event can be fetched, patched, deleted, and listed" and "Events API
//     should delete a collection of events" (events.k8s.io/v1).
//
// Each test keeps upstream's steps, objects and assertions in upstream's
// order, with the ginkgo framework replaced by testing.T: framework.Failf
// and a failed gomega expectation are t.Fatalf, ginkgo.By a t.Log. The
// namespace the upstream framework creates for each test comes from the
// Cluster. Run runs them against any cluster given its client: the
// integration tests (test/integration/server on the embedded default,
// test/integration/conformance in takeover through kube-apiserver's
// aggregator), go test ./test/conformance -conformance.kubeconfig=PATH
// against a cluster, and the e2e suite, which may call Run in each mode it
// installs.
package conformance

import (
	"context"
	"encoding/json"
	"math/big"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	typedeventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"
)

// Upstream's poll of the collection delete in core_events.go.
const (
	eventRetryPeriod  = 1 * time.Second
	eventRetryTimeout = 1 * time.Minute
)

// Cluster is the cluster under test.
type Cluster struct {
	// Client is an unmodified client-go clientset of the cluster, allowed
	// to create, read, patch, update and delete events in the namespaces
	// NewNamespace returns.
	Client kubernetes.Interface
	// NewNamespace returns a namespace no other test uses, created if the
	// cluster has namespaces, as upstream's framework does for each test.
	NewNamespace func(ctx context.Context, t testing.TB, baseName string) string
}

// Test is one upstream conformance test.
type Test struct {
	// Name is upstream's full name, its Describe and It joined.
	Name string
	// Run runs it in namespace.
	Run func(ctx context.Context, t testing.TB, client kubernetes.Interface, namespace string)
}

// Tests are the four Events [Conformance] tests.
var Tests = []Test{
	{Name: "Events should manage the lifecycle of an event", Run: coreEventLifecycle},
	{Name: "Events should delete a collection of events", Run: coreEventDeleteCollection},
	{Name: "Events API should ensure that an event can be fetched, patched, deleted, and listed", Run: eventsAPILifecycle},
	{Name: "Events API should delete a collection of events", Run: eventsAPIDeleteCollection},
}

// Run runs every test of Tests as a subtest of t, each in a namespace of its
// own ("events", upstream's base name), within timeout.
func Run(t *testing.T, c Cluster, timeout time.Duration) {
	for _, test := range Tests {
		t.Run(test.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), timeout)
			defer cancel()
			test.Run(ctx, t, c.Client, c.NewNamespace(ctx, t, "events"))
		})
	}
}

// By marks a step, as ginkgo.By does.
func by(t testing.TB, step string) {
	t.Helper()
	t.Logf("STEP: %s", step)
}

func expectNoError(t testing.TB, err error, explain string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", explain, err)
	}
}

// expectValidResourceVersion is upstream's HaveValidResourceVersion
// (test/e2e/common/apimachinery): a non-zero unsigned integer of at most
// 128 bits.
func expectValidResourceVersion(t testing.TB, o metav1.Object) {
	t.Helper()
	val, ok := new(big.Int).SetString(o.GetResourceVersion(), 10)
	switch {
	case !ok:
		t.Fatalf("Expected resource version to be a valid uint128, but got %q: the resource version is not a valid integer", o.GetResourceVersion())
	case val.Sign() < 0:
		t.Fatalf("Expected resource version to be a valid uint128, but got %q: the resource version is a negative number", o.GetResourceVersion())
	case val.BitLen() > 128:
		t.Fatalf("Expected resource version to be a valid uint128, but got %q: resource version requires %d bits (more than 128)", o.GetResourceVersion(), val.BitLen())
	case val.Sign() == 0:
		t.Fatalf("Expected resource version to be a valid uint128, but got %q: the resource version is zero which is not valid", o.GetResourceVersion())
	}
}

// coreEventLifecycle is core_events.go's "should manage the lifecycle of an
// event" (Release v1.25).
func coreEventLifecycle(ctx context.Context, t testing.TB, c kubernetes.Interface, namespace string) {
	eventTestName := "event-test"

	by(t, "creating a test event")
	_, err := c.CoreV1().Events(namespace).Create(ctx, &v1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name: eventTestName,
			Labels: map[string]string{
				"testevent-constant": "true",
			},
		},
		Message: "This is a test event",
		Reason:  "Test",
		Type:    "Normal",
		Count:   1,
		InvolvedObject: v1.ObjectReference{
			Namespace: namespace,
		},
	}, metav1.CreateOptions{})
	expectNoError(t, err, "failed to create test event")

	by(t, "listing all events in all namespaces")
	eventsList, err := c.CoreV1().Events("").List(ctx, metav1.ListOptions{
		LabelSelector: "testevent-constant=true",
	})
	expectNoError(t, err, "failed list all events")

	foundCreatedEvent := false
	var eventCreatedName string
	for _, val := range eventsList.Items {
		if val.Name == eventTestName && val.Namespace == namespace {
			foundCreatedEvent = true
			eventCreatedName = val.Name
			break
		}
	}
	if !foundCreatedEvent {
		t.Fatalf("unable to find test event %s in namespace %s, full list of events is %+v", eventTestName, namespace, eventsList.Items)
	}

	by(t, "patching the test event")
	eventPatchMessage := "This is a test event - patched"
	eventPatch, err := json.Marshal(map[string]any{
		"message": eventPatchMessage,
	})
	expectNoError(t, err, "failed to marshal the patch JSON payload")

	_, err = c.CoreV1().Events(namespace).Patch(ctx, eventTestName, types.StrategicMergePatchType, eventPatch, metav1.PatchOptions{})
	expectNoError(t, err, "failed to patch the test event")

	by(t, "fetching the test event")
	event, err := c.CoreV1().Events(namespace).Get(ctx, eventCreatedName, metav1.GetOptions{})
	expectNoError(t, err, "failed to fetch the test event")
	if event.Message != eventPatchMessage {
		t.Fatalf("test event message does not match patch message: got %q, want %q", event.Message, eventPatchMessage)
	}

	by(t, "updating the test event")
	testEvent, err := c.CoreV1().Events(namespace).Get(ctx, event.Name, metav1.GetOptions{})
	expectNoError(t, err, "failed to get test event")

	testEvent.Series = &v1.EventSeries{
		Count:            100,
		LastObservedTime: metav1.MicroTime{Time: time.Unix(1505828956, 0)},
	}

	// clear ResourceVersion and ManagedFields which are set by control-plane
	testEvent.ResourceVersion = ""
	testEvent.ManagedFields = nil

	_, err = c.CoreV1().Events(namespace).Update(ctx, testEvent, metav1.UpdateOptions{})
	expectNoError(t, err, "failed to update the test event")

	by(t, "getting the test event")
	event, err = c.CoreV1().Events(namespace).Get(ctx, testEvent.Name, metav1.GetOptions{})
	expectNoError(t, err, "failed to get test event")
	// clear ResourceVersion and ManagedFields which are set by control-plane
	event.ResourceVersion = ""
	event.ManagedFields = nil
	if !apiequality.Semantic.DeepEqual(testEvent, event) {
		t.Fatalf("test event wasn't properly updated: %v", cmp.Diff(testEvent, event))
	}

	by(t, "deleting the test event")
	err = c.CoreV1().Events(namespace).Delete(ctx, eventCreatedName, metav1.DeleteOptions{})
	expectNoError(t, err, "failed to delete the test event")

	by(t, "listing all events in all namespaces")
	eventsList, err = c.CoreV1().Events("").List(ctx, metav1.ListOptions{
		LabelSelector: "testevent-constant=true",
	})
	expectNoError(t, err, "fail to list all events")
	foundCreatedEvent = false
	for _, val := range eventsList.Items {
		if val.Name == eventTestName && val.Namespace == namespace {
			foundCreatedEvent = true
			break
		}
	}
	if foundCreatedEvent {
		t.Fatalf("Should not have found test event %s in namespace %s, full list of events %+v", eventTestName, namespace, eventsList.Items)
	}
}

// coreEventDeleteCollection is core_events.go's "should delete a collection
// of events" (Release v1.20).
func coreEventDeleteCollection(ctx context.Context, t testing.TB, c kubernetes.Interface, namespace string) {
	eventTestNames := []string{"test-event-1", "test-event-2", "test-event-3"}

	by(t, "Create set of events")
	for _, eventTestName := range eventTestNames {
		eventMessage := "This is " + eventTestName
		_, err := c.CoreV1().Events(namespace).Create(ctx, &v1.Event{
			ObjectMeta: metav1.ObjectMeta{
				Name:   eventTestName,
				Labels: map[string]string{"testevent-set": "true"},
			},
			Message: eventMessage,
			Reason:  "Test",
			Type:    "Normal",
			Count:   1,
			InvolvedObject: v1.ObjectReference{
				Namespace: namespace,
			},
		}, metav1.CreateOptions{})
		expectNoError(t, err, "failed to create event")
		t.Logf("created %v", eventTestName)
	}

	by(t, "get a list of Events with a label in the current namespace")
	eventList, err := c.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: "testevent-set=true",
	})
	expectNoError(t, err, "failed to get a list of events")
	if len(eventList.Items) != len(eventTestNames) {
		t.Fatalf("looking for expected number of pod templates events: got %d, want %d", len(eventList.Items), len(eventTestNames))
	}

	by(t, "delete collection of events")
	t.Logf("requesting DeleteCollection of events")
	err = c.CoreV1().Events(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{
		LabelSelector: "testevent-set=true"})
	expectNoError(t, err, "failed to delete the test event")

	by(t, "check that the list of events matches the requested quantity")
	err = wait.PollUntilContextTimeout(ctx, eventRetryPeriod, eventRetryTimeout, true, checkEventListQuantity(t, c, namespace, "testevent-set=true", 0))
	expectNoError(t, err, "failed to count required events")
}

func checkEventListQuantity(t testing.TB, c kubernetes.Interface, namespace, label string, quantity int) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		t.Logf("requesting list of events to confirm quantity")
		eventList, err := c.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{
			LabelSelector: label})
		if err != nil {
			return false, err
		}
		return len(eventList.Items) == quantity, nil
	}
}

// newTestEvent is events.go's test event.
func newTestEvent(namespace, name, label string) *eventsv1.Event {
	someTime := metav1.MicroTime{Time: time.Unix(1505828956, 0)}
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				label: "true",
			},
		},
		Regarding: v1.ObjectReference{
			Namespace: namespace,
		},
		EventTime:           someTime,
		Note:                "This is " + name,
		Action:              "Do",
		Reason:              "Test",
		Type:                "Normal",
		ReportingController: "test-controller",
		ReportingInstance:   "test-node",
	}
}

func eventExistsInList(ctx context.Context, t testing.TB, client typedeventsv1.EventInterface, namespace, name string) bool {
	t.Helper()
	eventsList, err := client.List(ctx, metav1.ListOptions{
		LabelSelector: "testevent-constant=true",
	})
	expectNoError(t, err, "failed to list events")

	for _, val := range eventsList.Items {
		if val.Name == name && val.Namespace == namespace {
			return true
		}
	}
	return false
}

// eventsAPILifecycle is events.go's "should ensure that an event can be
// fetched, patched, deleted, and listed" (Release v1.19).
func eventsAPILifecycle(ctx context.Context, t testing.TB, c kubernetes.Interface, namespace string) {
	coreClient := c.CoreV1().Events(namespace)
	client := c.EventsV1().Events(namespace)
	clientAllNamespaces := c.EventsV1().Events(metav1.NamespaceAll)
	eventName := "event-test"

	by(t, "creating a test event")
	createdEvent, err := client.Create(ctx, newTestEvent(namespace, eventName, "testevent-constant"), metav1.CreateOptions{})
	expectNoError(t, err, "failed to create test event")
	expectValidResourceVersion(t, createdEvent)

	by(t, "listing events in all namespaces")
	foundCreatedEvent := eventExistsInList(ctx, t, clientAllNamespaces, namespace, eventName)
	if !foundCreatedEvent {
		t.Fatalf("Failed to find test event %s in namespace %s, in list with cluster scope", eventName, namespace)
	}

	by(t, "listing events in test namespace")
	foundCreatedEvent = eventExistsInList(ctx, t, client, namespace, eventName)
	if !foundCreatedEvent {
		t.Fatalf("Failed to find test event %s in namespace %s, in list with namespace scope", eventName, namespace)
	}

	by(t, "listing events with field selection filtering on source")
	filteredCoreV1List, err := coreClient.List(ctx, metav1.ListOptions{FieldSelector: "source=test-controller"})
	expectNoError(t, err, "failed to get filtered list")
	if len(filteredCoreV1List.Items) != 1 || filteredCoreV1List.Items[0].Name != eventName {
		t.Fatalf("expected single event, got %#v", filteredCoreV1List.Items)
	}

	by(t, "listing events with field selection filtering on reportingController")
	filteredEventsV1List, err := client.List(ctx, metav1.ListOptions{FieldSelector: "reportingController=test-controller"})
	expectNoError(t, err, "failed to get filtered list")
	if len(filteredEventsV1List.Items) != 1 || filteredEventsV1List.Items[0].Name != eventName {
		t.Fatalf("expected single event, got %#v", filteredEventsV1List.Items)
	}

	by(t, "getting the test event")
	testEvent, err := client.Get(ctx, eventName, metav1.GetOptions{})
	expectNoError(t, err, "failed to get test event")

	by(t, "patching the test event")
	oldData, err := json.Marshal(testEvent)
	expectNoError(t, err, "failed to marshal event")
	newEvent := testEvent.DeepCopy()
	eventSeries := &eventsv1.EventSeries{
		Count:            2,
		LastObservedTime: metav1.MicroTime{Time: time.Unix(1505828951, 0)},
	}
	newEvent.Series = eventSeries
	newData, err := json.Marshal(newEvent)
	expectNoError(t, err, "failed to marshal new event")
	patchBytes, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, eventsv1.Event{})
	expectNoError(t, err, "failed to create two-way merge patch")

	_, err = client.Patch(ctx, eventName, types.StrategicMergePatchType, patchBytes, metav1.PatchOptions{})
	expectNoError(t, err, "failed to patch the test event")

	by(t, "getting the test event")
	event, err := client.Get(ctx, eventName, metav1.GetOptions{})
	expectNoError(t, err, "failed to get test event")
	cmpRV, err := resourceversion.CompareResourceVersion(createdEvent.ResourceVersion, event.ResourceVersion)
	if err != nil || cmpRV != -1 {
		t.Fatalf("patched object should have a larger resource version: created %s, patched %s (%v)", createdEvent.ResourceVersion, event.ResourceVersion, err)
	}
	// clear ResourceVersion and ManagedFields which are set by control-plane
	event.ResourceVersion = ""
	testEvent.ResourceVersion = ""
	event.ManagedFields = nil
	testEvent.ManagedFields = nil

	testEvent.Series = eventSeries
	if !apiequality.Semantic.DeepEqual(testEvent, event) {
		t.Fatalf("test event wasn't properly patched: %v", cmp.Diff(testEvent, event))
	}

	by(t, "updating the test event")
	testEvent.Series = &eventsv1.EventSeries{
		Count:            100,
		LastObservedTime: metav1.MicroTime{Time: time.Unix(1505828956, 0)},
	}
	_, err = client.Update(ctx, testEvent, metav1.UpdateOptions{})
	expectNoError(t, err, "failed to update the test event")

	by(t, "getting the test event")
	event, err = client.Get(ctx, eventName, metav1.GetOptions{})
	expectNoError(t, err, "failed to get test event")
	// clear ResourceVersion and ManagedFields which are set by control-plane
	event.ResourceVersion = ""
	event.ManagedFields = nil
	if !apiequality.Semantic.DeepEqual(testEvent, event) {
		t.Fatalf("test event wasn't properly updated: %v", cmp.Diff(testEvent, event))
	}

	by(t, "deleting the test event")
	err = client.Delete(ctx, eventName, metav1.DeleteOptions{})
	expectNoError(t, err, "failed to delete the test event")

	by(t, "listing events in all namespaces")
	foundCreatedEvent = eventExistsInList(ctx, t, clientAllNamespaces, namespace, eventName)
	if foundCreatedEvent {
		t.Fatalf("Should not have found test event %s in namespace %s, in list with cluster scope after deletion", eventName, namespace)
	}

	by(t, "listing events in test namespace")
	foundCreatedEvent = eventExistsInList(ctx, t, client, namespace, eventName)
	if foundCreatedEvent {
		t.Fatalf("Should not have found test event %s in namespace %s, in list with namespace scope after deletion", eventName, namespace)
	}
}

// eventsAPIDeleteCollection is events.go's "should delete a collection of
// events" (Release v1.19).
func eventsAPIDeleteCollection(ctx context.Context, t testing.TB, c kubernetes.Interface, namespace string) {
	client := c.EventsV1().Events(namespace)
	eventNames := []string{"test-event-1", "test-event-2", "test-event-3"}

	by(t, "Create set of events")
	for _, eventName := range eventNames {
		_, err := client.Create(ctx, newTestEvent(namespace, eventName, "testevent-set"), metav1.CreateOptions{})
		expectNoError(t, err, "failed to create event")
	}

	by(t, "get a list of Events with a label in the current namespace")
	eventList, err := client.List(ctx, metav1.ListOptions{
		LabelSelector: "testevent-set=true",
	})
	expectNoError(t, err, "failed to get a list of events")
	if len(eventList.Items) != len(eventNames) {
		t.Fatalf("unexpected event list: %#v", eventList)
	}

	by(t, "delete a list of events")
	t.Logf("requesting DeleteCollection of events")
	err = client.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{
		LabelSelector: "testevent-set=true",
	})
	expectNoError(t, err, "failed to delete the test event")

	by(t, "check that the list of events matches the requested quantity")
	eventList, err = client.List(ctx, metav1.ListOptions{
		LabelSelector: "testevent-set=true",
	})
	expectNoError(t, err, "failed to get a list of events")
	if len(eventList.Items) != 0 {
		t.Fatalf("unexpected event list: %#v", eventList)
	}
}
