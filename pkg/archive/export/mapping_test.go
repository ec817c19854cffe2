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

package export

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
)

// attrs flattens a record's attributes into strings, for cmp.Diff.
func attrs(r *sdklog.Record) map[string]string {
	out := map[string]string{}
	r.WalkAttributes(func(kv attribute.KeyValue) bool {
		out[string(kv.Key)] = kv.Value.String()
		return true
	})
	return out
}

func TestRecord(t *testing.T) {
	first := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	last := first.Add(90 * time.Second).Add(123456 * time.Microsecond)
	chain := ownerchain.Encode([]ownerchain.Ancestor{
		{Kind: "ReplicaSet", Name: "web-5d4", UID: "rs-uid"},
		{Kind: "Deployment", Name: "web", UID: "deploy-uid"},
	})
	base := func() *core.Event {
		return &core.Event{
			ObjectMeta: metav1.ObjectMeta{Name: "web-5d4-x.17a", Namespace: "shop", UID: "event-uid"},
			InvolvedObject: core.ObjectReference{Kind: "Pod", Name: "web-5d4-x", Namespace: "shop", UID: "pod-uid",
				APIVersion: "v1", FieldPath: "spec.containers{app}", ResourceVersion: "41"},
			Reason: "BackOff", Message: "Back-off restarting failed container", Type: "Warning", Action: "Restarting",
			EventTime: metav1.NewMicroTime(first),
		}
	}
	common := map[string]string{
		"log.record.uid": "event-uid/1234", "k8s.event.uid": "event-uid", "k8s.event.name": "web-5d4-x.17a",
		"k8s.event.resource_version": "1234", "k8s.namespace.name": "shop", "k8s.event.type": "Warning",
		"k8s.event.reason": "BackOff", "k8s.event.action": "Restarting",
		"k8s.object.kind": "Pod", "k8s.object.name": "web-5d4-x", "k8s.object.uid": "pod-uid", "k8s.object.api_version": "v1",
		"k8s.object.fieldpath": "spec.containers{app}", "k8s.object.resource_version": "41",
		"k8s.pod.name": "web-5d4-x", "k8s.pod.uid": "pod-uid",
	}
	with := func(kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range common {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	tests := []struct {
		name      string
		change    func(e *core.Event)
		wantAttrs map[string]string
		wantTime  time.Time
		wantSev   log.Severity
		wantTrace string
		wantSpan  string
	}{{
		name:      "a single occurrence",
		change:    func(*core.Event) {},
		wantAttrs: with("k8s.event.count", "1", "k8s.event.start_time", "2026-03-01T10:00:00Z"),
		wantTime:  first, wantSev: log.SeverityWarn,
	}, {
		name: "a series, its reporter, related object and chain",
		change: func(e *core.Event) {
			e.Series = &core.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(last), State: core.EventSeriesStateOngoing}
			e.ReportingController, e.ReportingInstance = "kubelet", "kubelet-node-1"
			e.Related = &core.ObjectReference{Kind: "Node", Name: "node-1", UID: "node-uid", APIVersion: "v1"}
			e.Annotations = map[string]string{ownerchain.Annotation: chain}
		},
		wantAttrs: with("k8s.event.count", "7", "k8s.event.start_time", "2026-03-01T10:00:00Z",
			"k8s.event.series.state", "Ongoing",
			"k8s.event.reporting_controller", "kubelet", "k8s.event.reporting_instance", "kubelet-node-1",
			"k8s.event.related.kind", "Node", "k8s.event.related.name", "node-1", "k8s.event.related.uid", "node-uid",
			"k8s.event.related.api_version", "v1",
			"k8s.event.regarding.ancestors", `["ReplicaSet/web-5d4","Deployment/web"]`,
			"k8s.event.regarding.ancestor_uids", `["rs-uid","deploy-uid"]`,
			"k8s.replicaset.name", "web-5d4", "k8s.replicaset.uid", "rs-uid",
			"k8s.deployment.name", "web", "k8s.deployment.uid", "deploy-uid"),
		wantTime: last, wantSev: log.SeverityWarn,
	}, {
		name: "a traceparent",
		change: func(e *core.Event) {
			e.Type = "Normal"
			e.Annotations = map[string]string{TraceparentAnnotation: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
		},
		wantAttrs: with("k8s.event.type", "Normal", "k8s.event.count", "1", "k8s.event.start_time", "2026-03-01T10:00:00Z"),
		wantTime:  first, wantSev: log.SeverityInfo,
		wantTrace: "4bf92f3577b34da6a3ce929d0e0e4736", wantSpan: "00f067aa0ba902b7",
	}, {
		name: "a malformed traceparent links nothing",
		change: func(e *core.Event) {
			e.Annotations = map[string]string{TraceparentAnnotation: "00-zz-00f067aa0ba902b7-01"}
		},
		wantAttrs: with("k8s.event.count", "1", "k8s.event.start_time", "2026-03-01T10:00:00Z"),
		wantTime:  first, wantSev: log.SeverityWarn,
	}}
	enc := newEncoder(nil)
	defer enc.shutdown()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			event := base()
			tc.change(event)
			r := enc.encode(newRecord(context.Background(), event, "1234"))
			if diff := cmp.Diff(tc.wantAttrs, attrs(&r)); diff != "" {
				t.Errorf("attributes (-want +got):\n%s", diff)
			}
			if !r.Timestamp().Equal(tc.wantTime) || !r.ObservedTimestamp().Equal(tc.wantTime) {
				t.Errorf("timestamps %v, %v; want %v", r.Timestamp(), r.ObservedTimestamp(), tc.wantTime)
			}
			if r.Severity() != tc.wantSev || r.SeverityText() != event.Type {
				t.Errorf("severity %v %q, want %v %q", r.Severity(), r.SeverityText(), tc.wantSev, event.Type)
			}
			if got := r.Body().AsString(); got != event.Message {
				t.Errorf("body %q, want %q", got, event.Message)
			}
			if r.EventName() != EventName {
				t.Errorf("event name %q, want %q", r.EventName(), EventName)
			}
			gotTrace, gotSpan := "", ""
			if r.TraceID().IsValid() {
				gotTrace, gotSpan = r.TraceID().String(), r.SpanID().String()
			}
			if gotTrace != tc.wantTrace || gotSpan != tc.wantSpan {
				t.Errorf("trace %q span %q, want %q %q", gotTrace, gotSpan, tc.wantTrace, tc.wantSpan)
			}
		})
	}
}

func TestSelection(t *testing.T) {
	event := func(ns, typ, reason, controller string) *core.Event {
		return &core.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns}, Type: typ, Reason: reason, ReportingController: controller}
	}
	tests := []struct {
		name      string
		selection Selection
		event     *core.Event
		want      bool
	}{
		{"empty takes every event", Selection{}, event("a", "Normal", "Pulled", "kubelet"), true},
		{"namespace in", Selection{Namespaces: sets.New("a")}, event("a", "Normal", "Pulled", "kubelet"), true},
		{"namespace out", Selection{Namespaces: sets.New("a")}, event("b", "Normal", "Pulled", "kubelet"), false},
		{"namespace excluded", Selection{ExcludedNamespaces: sets.New("a")}, event("a", "Normal", "Pulled", "kubelet"), false},
		{"type", Selection{Types: sets.New("Warning")}, event("a", "Normal", "Pulled", "kubelet"), false},
		{"reason", Selection{Reasons: sets.New("BackOff", "Pulled")}, event("a", "Normal", "Pulled", "kubelet"), true},
		{"controller", Selection{ReportingControllers: sets.New("default-scheduler")}, event("a", "Normal", "Pulled", "kubelet"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.selection.selects(tc.event); got != tc.want {
				t.Errorf("selects = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRates: a namespace's bucket is refilled by the states' own time, so
// that a burst past it is dropped while the same states spread over time
// are not, and each namespace has its own.
func TestRates(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	r := newRates(1, 2)
	var got []bool
	for _, step := range []struct {
		ns string
		at time.Duration
	}{{"a", 0}, {"a", 0}, {"a", 0}, {"b", 0}, {"a", time.Second}, {"a", 500 * time.Millisecond}, {"a", 3 * time.Second}} {
		got = append(got, r.allow(step.ns, t0.Add(step.at)))
	}
	want := []bool{true, true, false, true, true, false, true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("allowed (-want +got):\n%s", diff)
	}
	if !newRates(0, 0).allow("a", t0) {
		t.Error("no rate bound dropped a state")
	}
}
