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

package event

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

func fullEvent() *core.Event {
	return &core.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-a.1", Namespace: "default", Labels: map[string]string{"team": "a"}},
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

func TestCanonicalizeDropsDeprecatedHost(t *testing.T) {
	event := fullEvent()
	event.DeprecatedHost = "other"
	Strategy{}.Canonicalize(event)
	if event.DeprecatedHost != "" {
		t.Fatalf("DeprecatedHost = %q after Canonicalize, want empty", event.DeprecatedHost)
	}
}

func TestStrategyIsNamespacedAndAllowsUnconditionalWrites(t *testing.T) {
	s := Strategy{}
	if !s.NamespaceScoped() {
		t.Error("events must be namespaced")
	}
	if !s.AllowCreateOnUpdate(t.Context()) || !s.AllowUnconditionalUpdate(t.Context()) {
		t.Error("events must allow create-on-update and unconditional update, as kube-apiserver's do")
	}
}

// TestPrepareKeepsOnlyAppliedManagedFields: plain writes leave no
// managedFields entry; server-side apply keeps its own.
func TestPrepareKeepsOnlyAppliedManagedFields(t *testing.T) {
	update := metav1.ManagedFieldsEntry{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}
	apply := metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}
	tests := []struct {
		name string
		in   []metav1.ManagedFieldsEntry
		want []metav1.ManagedFieldsEntry
	}{
		{"none", nil, nil},
		{"update only", []metav1.ManagedFieldsEntry{update}, nil},
		{"apply only", []metav1.ManagedFieldsEntry{apply}, []metav1.ManagedFieldsEntry{apply}},
		{"both", []metav1.ManagedFieldsEntry{update, apply, update}, []metav1.ManagedFieldsEntry{apply}},
	}
	strategy := NewStrategy(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			created := &core.Event{ObjectMeta: metav1.ObjectMeta{ManagedFields: append([]metav1.ManagedFieldsEntry(nil), tt.in...)}}
			strategy.PrepareForCreate(context.Background(), created)
			if diff := cmp.Diff(tt.want, created.ManagedFields); diff != "" {
				t.Errorf("create (-want +got):\n%s", diff)
			}
			updated := &core.Event{ObjectMeta: metav1.ObjectMeta{ManagedFields: append([]metav1.ManagedFieldsEntry(nil), tt.in...)}}
			strategy.PrepareForUpdate(context.Background(), updated, &core.Event{})
			if diff := cmp.Diff(tt.want, updated.ManagedFields); diff != "" {
				t.Errorf("update (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrepareForUpdateKeepsStoredSeriesState(t *testing.T) {
	series := func(state core.EventSeriesState) *core.EventSeries {
		return &core.EventSeries{Count: 2, State: state}
	}
	internal := InternalWriteContext(context.Background(), "default", schema.GroupVersion{Version: "v1"})
	for _, tc := range []struct {
		name          string
		ctx           context.Context
		stored, sent  *core.EventSeries
		wantSentState core.EventSeriesState
	}{
		{"no state sent keeps the stored one", context.Background(), series(core.EventSeriesStateOngoing), series(""), core.EventSeriesStateOngoing},
		{"a state sent is left for validation", context.Background(), series(core.EventSeriesStateFinished), series(core.EventSeriesStateOngoing), core.EventSeriesStateOngoing},
		{"a new series stays without state", context.Background(), nil, series(""), ""},
		{"in-process, no state sent leaves it to the state controller", internal, series(core.EventSeriesStateOngoing), series(""), ""},
		{"in-process, no state sent after Unknown leaves it to the state controller", internal, series(core.EventSeriesStateUnknown), series(""), ""},
		{"in-process, Finished stays Finished", internal, series(core.EventSeriesStateFinished), series(""), core.EventSeriesStateFinished},
		{"in-process, a state sent is left for validation", internal, series(core.EventSeriesStateOngoing), series(core.EventSeriesStateUnknown), core.EventSeriesStateUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored, sent := &core.Event{Series: tc.stored}, &core.Event{Series: tc.sent}
			NewStrategy(nil).PrepareForUpdate(tc.ctx, sent, stored)
			if diff := cmp.Diff(tc.wantSentState, sent.Series.State); diff != "" {
				t.Errorf("state after PrepareForUpdate (-want +got):\n%s", diff)
			}
		})
	}
}

// In-process writers (the mirror, the series controllers) meet the series
// state machine as clients do: validation holds it, not admission.
func TestValidateUpdateHoldsInProcessWritersToTheSeriesRules(t *testing.T) {
	ctx := InternalWriteContext(context.Background(), "default", schema.GroupVersion{Version: "v1"})
	stored := fullEvent()
	stored.Namespace, stored.InvolvedObject.Namespace = "default", "default"
	stored.Series.State = core.EventSeriesStateFinished
	stored.Series.LastObservedTime = metav1.NewMicroTime(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		name   string
		mutate func(*core.Event)
		want   []string
	}{
		{"Finished stays Finished", func(e *core.Event) { e.Labels = map[string]string{"team": "b"} }, nil},
		{"Finished back to Ongoing", func(e *core.Event) { e.Series.State = core.EventSeriesStateOngoing }, []string{"series.state"}},
		{"count decreases", func(e *core.Event) { e.Series.Count = 1 }, []string{"series.count", "series.count"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			updated := stored.DeepCopy()
			tc.mutate(updated)
			var got []string
			for _, err := range NewStrategy(nil).ValidateUpdate(ctx, updated, stored) {
				got = append(got, err.Field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("refused fields (-want +got):\n%s", diff)
			}
		})
	}
}
