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

package storage

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	k8seventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/core/validation"
	eventsv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	"github.com/kube-events/events-apiserver/pkg/recorder/seriesid"
)

// TestSeriesIdentityAgreement drives pairs of events through the three
// parts that judge whether two events are one series, and checks that they
// agree: validation (a core/v1 update of one into the other is accepted),
// folding (the folder's key) and the recorder (the key it gives the event
// as it reads it back from events.k8s.io/v1).
func TestSeriesIdentityAgreement(t *testing.T) {
	pod := core.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "web-0", UID: "u-1", APIVersion: "v1"}
	node := core.ObjectReference{Kind: "Node", Name: "node-a", UID: "u-node", APIVersion: "v1"}
	base := func(change func(*core.Event)) *core.Event {
		now := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		e := &core.Event{
			ObjectMeta:          metav1.ObjectMeta{Namespace: "ns", Name: "web-0.1", ResourceVersion: "1"},
			InvolvedObject:      pod,
			Action:              "Pulling",
			Reason:              "Pulling",
			Message:             "pulling image",
			Type:                core.EventTypeNormal,
			EventTime:           now,
			ReportingController: "kubelet",
			ReportingInstance:   "kubelet-node-a",
			Series:              &core.EventSeries{Count: 2, LastObservedTime: now},
		}
		if change != nil {
			change(e)
		}
		return e
	}
	tests := []struct {
		name string
		a, b *core.Event
		same bool
	}{
		{name: "identical", a: base(nil), b: base(nil), same: true},
		{name: "another reason", a: base(nil), b: base(func(e *core.Event) { e.Reason = "Pulled" }), same: false},
		{name: "another regarding resourceVersion", a: base(nil), b: base(func(e *core.Event) { e.InvolvedObject.ResourceVersion = "7" }), same: false},
		{name: "a related object added", a: base(nil), b: base(func(e *core.Event) { e.Related = &core.ObjectReference{Kind: "Node", Name: "node-a", APIVersion: "v1"} }), same: false},
		{name: "another reporting instance", a: base(nil), b: base(func(e *core.Event) { e.ReportingInstance = "kubelet-node-b" }), same: false},
		{name: "another source host", a: base(func(e *core.Event) { e.Source.Host = "node-a" }), b: base(func(e *core.Event) { e.Source.Host = "node-b" }), same: true},
		{
			name: "the controller in source.component or in reportingController",
			a:    base(func(e *core.Event) { e.ReportingController, e.Source.Component = "", "kubelet" }),
			b:    base(nil),
			same: true,
		},
		{
			name: "another source.component beside the same reportingController",
			a:    base(func(e *core.Event) { e.Source.Component = "kubelet" }),
			b:    base(nil),
			same: true,
		},
		{
			name: "other legacy source components",
			a:    base(func(e *core.Event) { e.ReportingController, e.Source.Component = "", "kubelet" }),
			b:    base(func(e *core.Event) { e.ReportingController, e.Source.Component = "", "scheduler" }),
			same: false,
		},
		{
			name: "a cluster-scoped object's events in two namespaces",
			a:    base(func(e *core.Event) { e.InvolvedObject = node }),
			b:    base(func(e *core.Event) { e.InvolvedObject, e.Namespace = node, "default" }),
			same: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]bool{
				"validation": len(validation.ValidateEventUpdate(tt.b, tt.a, schema.GroupVersion{Version: "v1"})) == 0,
				"folding":    seriesKeyOf(tt.a) == seriesKeyOf(tt.b),
				"recorder":   seriesid.OfEventsV1(recorded(t, tt.a)) == seriesid.OfEventsV1(recorded(t, tt.b)),
			}
			want := map[string]bool{"validation": tt.same, "folding": tt.same, "recorder": tt.same}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("one series? (-want +got):\n%s", diff)
			}
		})
	}
}

// recorded is e as the recorder reads it back: events.k8s.io/v1 on the
// wire, decoded into k8s.io/api's type.
func recorded(t *testing.T, e *core.Event) *k8seventsv1.Event {
	t.Helper()
	var v1 eventsv1.Event
	if err := eventsv1.Convert_core_Event_To_v1_Event(e, &v1, nil); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(&v1)
	if err != nil {
		t.Fatal(err)
	}
	var out k8seventsv1.Event
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}
