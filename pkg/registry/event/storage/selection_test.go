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
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
	"github.com/kube-events/events-apiserver/pkg/storedevent"
)

// canonicalLabels are every label the registry must expose, per pkg/conversion.
func canonicalLabels() []string {
	labels := []string{
		eventconversion.FieldName, eventconversion.FieldNamespace, eventconversion.FieldReason,
		eventconversion.FieldAction, eventconversion.FieldSource, eventconversion.FieldReportingComponent,
		eventconversion.FieldReportingInstance, eventconversion.FieldType, eventconversion.FieldSeriesState,
		eventconversion.FieldAncestor,
	}
	for _, f := range eventconversion.ObjectReferenceFields {
		labels = append(labels, eventconversion.PrefixInvolvedObject+f, eventconversion.PrefixRelated+f)
	}
	return labels
}

func fullEvent() *core.Event {
	return &core.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-a.1", Namespace: "default", Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{ownerchain.Annotation: `["ReplicaSet/rs-a","uid-rs"]`}},
		InvolvedObject: core.ObjectReference{
			Kind: "Pod", Namespace: "default", Name: "pod-a", UID: "uid-a",
			APIVersion: "v1", ResourceVersion: "7", FieldPath: "spec.containers{app}",
		},
		Related: &core.ObjectReference{
			Kind: "Node", Name: "node-1", UID: "uid-n", APIVersion: "v1", ResourceVersion: "9", FieldPath: "status",
		},
		Reason:              "Started",
		Action:              "Start",
		Type:                core.EventTypeNormal,
		Source:              core.EventSource{Component: "kubelet", Host: "node-1"},
		ReportingController: "k8s.io/kubelet",
		ReportingInstance:   "kubelet-node-1",
		Series:              &core.EventSeries{Count: 2, State: core.EventSeriesStateOngoing},
	}
}

func TestToSelectableFieldsExposesEveryCanonicalLabel(t *testing.T) {
	event := fullEvent()
	event.Related.Namespace = "default"
	set := storedevent.SelectableFields(event)
	for _, label := range canonicalLabels() {
		if set.Get(label) == "" {
			t.Errorf("label %q missing from the selectable fields of an event with every field set", label)
		}
	}
	if len(set) != len(canonicalLabels()) {
		t.Errorf("%d selectable fields, want exactly the %d canonical labels: %v", len(set), len(canonicalLabels()), set)
	}
}

// TestUnsetFieldsSelectAsEmpty: the field set holds only what is set, and
// an unset field selects as an empty value, for = and != alike.
func TestUnsetFieldsSelectAsEmpty(t *testing.T) {
	empty := &core.Event{}
	if set := storedevent.SelectableFields(empty); len(set) != 0 {
		t.Errorf("selectable fields of an empty event: %v, want none", set)
	}
	for _, label := range canonicalLabels() {
		for selector, want := range map[string]bool{label + "=": true, label + "!=": false, label + "=x": false, label + "!=x": true} {
			predicate := Matcher(labels.Everything(), fields.ParseSelectorOrDie(selector))
			got, err := predicate.Matches(empty)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s on an empty event: matches = %v, want %v", selector, got, want)
			}
		}
	}
}

func TestToSelectableFields(t *testing.T) {
	legacy := fullEvent()
	legacy.ReportingController, legacy.ReportingInstance = "", ""
	newAPI := fullEvent()
	newAPI.Source = core.EventSource{}
	singleton := fullEvent()
	singleton.Series, singleton.Related = nil, nil
	finished := fullEvent()
	finished.Series.State = core.EventSeriesStateFinished

	tests := []struct {
		name  string
		event *core.Event
		want  map[string]string
	}{{
		name:  "every field set",
		event: fullEvent(),
		want: map[string]string{
			"metadata.name": "pod-a.1", "metadata.namespace": "default",
			"involvedObject.kind": "Pod", "involvedObject.namespace": "default", "involvedObject.name": "pod-a",
			"involvedObject.uid": "uid-a", "involvedObject.apiVersion": "v1", "involvedObject.resourceVersion": "7",
			"involvedObject.fieldPath": "spec.containers{app}",
			"related.kind":             "Node", "related.namespace": "", "related.name": "node-1", "related.uid": "uid-n",
			"related.apiVersion": "v1", "related.resourceVersion": "9", "related.fieldPath": "status",
			"reason": "Started", "action": "Start", "type": "Normal",
			"source": "kubelet", "reportingComponent": "k8s.io/kubelet", "reportingInstance": "kubelet-node-1",
			"series.state": "Ongoing",
		},
	}, {
		name:  "legacy event: reportingComponent falls back to source.component",
		event: legacy,
		want:  map[string]string{"source": "kubelet", "reportingComponent": "kubelet", "reportingInstance": ""},
	}, {
		name:  "events.k8s.io event: source falls back to reportingController",
		event: newAPI,
		want:  map[string]string{"source": "k8s.io/kubelet", "reportingComponent": "k8s.io/kubelet"},
	}, {
		name:  "singleton without related: empty series.state and related.*",
		event: singleton,
		want:  map[string]string{"series.state": "", "related.name": "", "related.kind": "", "related.uid": ""},
	}, {
		name:  "finished series",
		event: finished,
		want:  map[string]string{"series.state": "Finished"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := storedevent.SelectableFields(tt.event)
			for label, want := range tt.want {
				if got := set.Get(label); got != want {
					t.Errorf("%s = %q, want %q", label, got, want)
				}
			}
		})
	}
}

func TestMatcherSelectsByFieldAndLabel(t *testing.T) {
	tests := []struct {
		field, label string
		want         bool
	}{
		{"involvedObject.name=pod-a,action=Start", "", true},
		{"related.name=node-1,type=Normal", "team=a", true},
		{"series.state=Ongoing", "", true},
		{"series.state=Finished", "", false},
		{"reportingComponent=k8s.io/kubelet,source=kubelet", "", true},
		{"involvedObject.name!=pod-a", "", false},
		{"metadata.namespace=default", "team=b", false},
	}
	for _, tt := range tests {
		t.Run(tt.field+"|"+tt.label, func(t *testing.T) {
			fieldSel, err := fields.ParseSelector(tt.field)
			if err != nil {
				t.Fatal(err)
			}
			labelSel, err := labels.Parse(tt.label)
			if err != nil {
				t.Fatal(err)
			}
			predicate := Matcher(labelSel, fieldSel)
			got, err := predicate.Matches(fullEvent())
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("matches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGetAttrsRejectsOtherObjects(t *testing.T) {
	if _, _, err := GetAttrs(&core.EventList{}); err == nil {
		t.Fatal("GetAttrs accepted an EventList")
	}
}
