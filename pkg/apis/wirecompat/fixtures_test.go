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

package wirecompat

import (
	"time"

	k8scorev1 "k8s.io/api/core/v1"
	k8seventsv1 "k8s.io/api/events/v1"
	k8seventsv1beta1 "k8s.io/api/events/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	eventsv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	eventsv1beta1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1beta1"
)

// Values the fixtures share. Times carry the precision their field has on
// the wire: whole seconds for metav1.Time, microseconds for MicroTime.
var (
	created   = metav1.NewTime(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	firstSeen = metav1.NewTime(time.Date(2026, 3, 1, 10, 0, 1, 0, time.UTC))
	lastSeen  = metav1.NewTime(time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC))
	eventTime = metav1.NewMicroTime(time.Date(2026, 3, 1, 10, 0, 1, 123456000, time.UTC))
	observed  = metav1.NewMicroTime(time.Date(2026, 3, 1, 10, 4, 59, 654321000, time.UTC))
)

const (
	kubelet           = "kubelet"
	kubeletController = "kubernetes.io/kubelet"
	kubeletInstance   = "kubelet-node-1"
	node1             = "node-1"
	node2             = "node-2"
	// pullMessage has characters JSON escapes, so both sides' escaping is compared.
	pullMessage = `Back-off pulling image "nginx:1.29" <retry in 10s> & counting`
)

func objectMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              "web-0.1829f3a7c0d1e2f3",
		Namespace:         "default",
		UID:               "5a4f7a0e-8c1b-4d6e-9f21-0b7d3c2e1a90",
		ResourceVersion:   "4217",
		CreationTimestamp: created,
		Labels:            map[string]string{"app": "web"},
	}
}

// The object an event is about, and a related one, in each side's types.

func k8sPod() k8scorev1.ObjectReference {
	return k8scorev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", UID: "0b6b0f7e-1d2c-4e5f-8a9b-0c1d2e3f4a5b",
		APIVersion: "v1", ResourceVersion: "1234", FieldPath: "spec.containers{web}"}
}

func internalPod() core.ObjectReference {
	return core.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", UID: "0b6b0f7e-1d2c-4e5f-8a9b-0c1d2e3f4a5b",
		APIVersion: "v1", ResourceVersion: "1234", FieldPath: "spec.containers{web}"}
}

func k8sNode() *k8scorev1.ObjectReference {
	return &k8scorev1.ObjectReference{Kind: "Node", Name: node1, UID: "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b", APIVersion: "v1"}
}

func internalNode() *core.ObjectReference {
	return &core.ObjectReference{Kind: "Node", Name: node1, UID: "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b", APIVersion: "v1"}
}

// Builders: an event with objectMeta and nothing else, changed by edits.

func k8sCoreEvent(edits ...func(*k8scorev1.Event)) *k8scorev1.Event {
	e := &k8scorev1.Event{ObjectMeta: objectMeta()}
	for _, edit := range edits {
		edit(e)
	}
	return e
}

func k8sV1beta1Event(edits ...func(*k8seventsv1beta1.Event)) *k8seventsv1beta1.Event {
	e := &k8seventsv1beta1.Event{ObjectMeta: objectMeta()}
	for _, edit := range edits {
		edit(e)
	}
	return e
}

func k8sV1Event(edits ...func(*k8seventsv1.Event)) *k8seventsv1.Event {
	e := &k8seventsv1.Event{ObjectMeta: objectMeta()}
	for _, edit := range edits {
		edit(e)
	}
	return e
}

func ourCoreEvent(edits ...func(*corev1.Event)) *corev1.Event {
	e := &corev1.Event{ObjectMeta: objectMeta()}
	for _, edit := range edits {
		edit(e)
	}
	return e
}

func ourV1beta1Event(edits ...func(*eventsv1beta1.Event)) *eventsv1beta1.Event {
	e := &eventsv1beta1.Event{ObjectMeta: objectMeta()}
	for _, edit := range edits {
		edit(e)
	}
	return e
}

func ourV1Event(edits ...func(*eventsv1.Event)) *eventsv1.Event {
	e := &eventsv1.Event{ObjectMeta: objectMeta()}
	for _, edit := range edits {
		edit(e)
	}
	return e
}

func internalEvent(edits ...func(*core.Event)) *core.Event {
	e := &core.Event{ObjectMeta: objectMeta()}
	for _, edit := range edits {
		edit(e)
	}
	return e
}

// Full events: every field of the version set, as a kubelet on an
// up-to-date cluster reports an image pull back-off.

func fullK8sCoreEvent(e *k8scorev1.Event) {
	e.InvolvedObject = k8sPod()
	e.Reason = "BackOff"
	e.Message = pullMessage
	e.Source = k8scorev1.EventSource{Component: kubelet, Host: node1}
	e.FirstTimestamp = firstSeen
	e.LastTimestamp = lastSeen
	e.Count = 7
	e.Type = k8scorev1.EventTypeWarning
	e.EventTime = eventTime
	e.Series = &k8scorev1.EventSeries{Count: 7, LastObservedTime: observed}
	e.Action = "Pulling"
	e.Related = k8sNode()
	e.ReportingController = kubeletController
	e.ReportingInstance = kubeletInstance
}

func fullK8sV1beta1Event(e *k8seventsv1beta1.Event) {
	e.EventTime = eventTime
	e.Series = &k8seventsv1beta1.EventSeries{Count: 7, LastObservedTime: observed}
	e.ReportingController = kubeletController
	e.ReportingInstance = kubeletInstance
	e.Action = "Pulling"
	e.Reason = "BackOff"
	e.Regarding = k8sPod()
	e.Related = k8sNode()
	e.Note = pullMessage
	e.Type = k8scorev1.EventTypeWarning
	e.DeprecatedSource = k8scorev1.EventSource{Component: kubelet, Host: node1}
	e.DeprecatedFirstTimestamp = firstSeen
	e.DeprecatedLastTimestamp = lastSeen
	e.DeprecatedCount = 7
}

func fullK8sV1Event(e *k8seventsv1.Event) {
	e.EventTime = eventTime
	e.Series = &k8seventsv1.EventSeries{Count: 7, LastObservedTime: observed}
	e.ReportingController = kubeletController
	e.ReportingInstance = kubeletInstance
	e.Action = "Pulling"
	e.Reason = "BackOff"
	e.Regarding = k8sPod()
	e.Related = k8sNode()
	e.Note = pullMessage
	e.Type = k8scorev1.EventTypeWarning
	e.DeprecatedSource = k8scorev1.EventSource{Component: kubelet, Host: node1}
	e.DeprecatedFirstTimestamp = firstSeen
	e.DeprecatedLastTimestamp = lastSeen
	e.DeprecatedCount = 7
}

// recorderK8sV1Event is what client-go's events.k8s.io recorder
// (k8s.io/client-go/tools/events) writes: no deprecated fields.
func recorderK8sV1Event(e *k8seventsv1.Event) {
	e.EventTime = eventTime
	e.ReportingController = kubeletController
	e.ReportingInstance = kubeletInstance
	e.Action = "Pulling"
	e.Reason = "Pulling"
	e.Regarding = k8sPod()
	e.Note = `Pulling image "nginx:1.29"`
	e.Type = k8scorev1.EventTypeNormal
}

func recorderK8sV1beta1Event(e *k8seventsv1beta1.Event) {
	e.EventTime = eventTime
	e.ReportingController = kubeletController
	e.ReportingInstance = kubeletInstance
	e.Action = "Pulling"
	e.Reason = "Pulling"
	e.Regarding = k8sPod()
	e.Note = `Pulling image "nginx:1.29"`
	e.Type = k8scorev1.EventTypeNormal
}

// legacyK8sCoreEvent is what client-go's core/v1 recorder
// (k8s.io/client-go/tools/record) writes: source.component, no
// reportingComponent, no eventTime.
func legacyK8sCoreEvent(e *k8scorev1.Event) {
	e.InvolvedObject = k8sPod()
	e.Reason = "Pulling"
	e.Message = `Pulling image "nginx:1.29"`
	e.Source = k8scorev1.EventSource{Component: kubelet, Host: node1}
	e.FirstTimestamp = firstSeen
	e.LastTimestamp = firstSeen
	e.Count = 1
	e.Type = k8scorev1.EventTypeNormal
}
