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

package v1

import (
	"testing"
	"time"

	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
)

// The apimachinery protobuf serializer only encodes objects that implement
// these (see k8s.io/apimachinery/pkg/runtime/serializer/protobuf) and decodes
// into objects with Reset and Unmarshal.
var (
	_ runtime.ProtobufMarshaller        = &Event{}
	_ runtime.ProtobufReverseMarshaller = &Event{}
	_ runtime.ProtobufReverseMarshaller = &EventList{}
	_ interface {
		Reset()
		Unmarshal([]byte) error
	} = &EventList{}
)

// TestProtobufRoundTrip is a smoke test of the generated protobuf code: an
// Event, including the series.state extension, survives Marshal/Unmarshal.
func TestProtobufRoundTrip(t *testing.T) {
	observed := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC))
	tests := []struct {
		name  string
		event Event
	}{
		{
			name: "series with state",
			event: Event{
				ObjectMeta:          metav1.ObjectMeta{Name: "pod.1", Namespace: "default"},
				EventTime:           observed,
				ReportingController: "kubelet",
				ReportingInstance:   "kubelet-node1",
				Action:              "Pulling",
				Reason:              "BackOff",
				Note:                "Back-off pulling image",
				Type:                corev1.EventTypeWarning,
				Regarding:           corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "pod", UID: "uid-1"},
				Series: &EventSeries{
					Count:            7,
					LastObservedTime: observed,
					State:            EventSeriesStateFinished,
				},
			},
		},
		{
			name: "singleton with deprecated fields",
			event: Event{
				ObjectMeta:       metav1.ObjectMeta{Name: "node.2", Namespace: "default"},
				Related:          &corev1.ObjectReference{Kind: "Node", Name: "node1"},
				DeprecatedSource: corev1.EventSource{Component: "kubelet", Host: "node1"},
				DeprecatedCount:  3,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := tt.event.Marshal()
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if len(data) != tt.event.Size() {
				t.Errorf("Marshal wrote %d bytes, Size() says %d", len(data), tt.event.Size())
			}
			var got Event
			if err := got.Unmarshal(data); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			// Semantic: times come back in time.Local, equal instants.
			if !equality.Semantic.DeepEqual(tt.event, got) {
				t.Errorf("round trip changed the Event (-want +got):\n%s", diff.Diff(tt.event, got))
			}
		})
	}
}
