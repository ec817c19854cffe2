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
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// selectableEvent is a core/v1 event plus its series.state, which
// k8s.io/api's core/v1 type does not carry.
type selectableEvent struct {
	corev1.Event
	seriesState string
}

// fullySelectableEvent has every selectable field set to a distinct value.
func fullySelectableEvent(namespace, name string) *selectableEvent {
	at := microNow()
	return &selectableEvent{
		Event: corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: "web-0", UID: "uid-web-0",
				APIVersion: "v1", ResourceVersion: "100", FieldPath: "spec.containers{app}"},
			Related: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: namespace, Name: "data", UID: "uid-data",
				APIVersion: "v1", ResourceVersion: "200", FieldPath: "spec.volumeName"},
			Reason: "Started", Action: "Start", Message: "Started container app",
			Source:              corev1.EventSource{Component: "kubelet", Host: "node-1"},
			ReportingController: "example.com/kubelet", ReportingInstance: "kubelet-node-1",
			Type: corev1.EventTypeNormal, EventTime: at,
			Series: &corev1.EventSeries{Count: 2, LastObservedTime: at},
		},
		seriesState: "Ongoing",
	}
}

// makeLegacy turns e into an event as client-go's tools/record writes it:
// no eventTime, reporting controller and instance, action or series.
func makeLegacy(e *selectableEvent) {
	e.EventTime = metav1.MicroTime{}
	e.ReportingController, e.ReportingInstance, e.Action = "", "", ""
	e.Series, e.seriesState = nil, ""
	e.Count, e.FirstTimestamp, e.LastTimestamp = 1, metav1.NewTime(now()), metav1.NewTime(now())
}

// selectorCase is one field selector: the label each version knows it by
// (absent when the version has no such label), the value, and how the
// matching and the non-matching event differ from a fully selectable one.
type selectorCase struct {
	name   string
	labels map[string]string
	value  string
	// match and nomatch adjust the two events; nil leaves them as they are.
	match, nomatch func(*selectableEvent)
	// otherNamespace puts the non-matching event in another namespace and
	// selects across all namespaces.
	otherNamespace bool
}

// selectorCases covers every selectable field of every version.
func selectorCases() []selectorCase {
	every := func(core, events string) map[string]string {
		return map[string]string{coreV1.name: core, eventsV1beta1.name: events, eventsV1.name: events}
	}
	var cases []selectorCase
	for _, ref := range []struct {
		field string
		set   func(*corev1.ObjectReference, string)
	}{
		{"kind", func(r *corev1.ObjectReference, v string) { r.Kind = v }},
		{"namespace", func(r *corev1.ObjectReference, v string) { r.Namespace = v }},
		{"name", func(r *corev1.ObjectReference, v string) { r.Name = v }},
		{"uid", func(r *corev1.ObjectReference, v string) { r.UID = types.UID(v) }},
		{"apiVersion", func(r *corev1.ObjectReference, v string) { r.APIVersion = v }},
		{"resourceVersion", func(r *corev1.ObjectReference, v string) { r.ResourceVersion = v }},
		{"fieldPath", func(r *corev1.ObjectReference, v string) { r.FieldPath = v }},
	} {
		set := ref.set
		cases = append(cases,
			selectorCase{
				name:    "regarding." + ref.field,
				labels:  every("involvedObject."+ref.field, "regarding."+ref.field),
				nomatch: func(e *selectableEvent) { set(&e.InvolvedObject, "other") },
			},
			selectorCase{
				name:    "related." + ref.field,
				labels:  every("related."+ref.field, "related."+ref.field),
				nomatch: func(e *selectableEvent) { set(e.Related, "other") },
			},
		)
	}
	cases = append(cases,
		selectorCase{name: "metadata.name", labels: every("metadata.name", "metadata.name"), value: "match"},
		selectorCase{name: "metadata.namespace", labels: every("metadata.namespace", "metadata.namespace"), otherNamespace: true},
		selectorCase{name: "reason", labels: every("reason", "reason"), value: "Started",
			nomatch: func(e *selectableEvent) { e.Reason = "Killing" }},
		selectorCase{name: "action", labels: every("action", "action"), value: "Start",
			nomatch: func(e *selectableEvent) { e.Action = "Kill" }},
		selectorCase{name: "source", labels: map[string]string{coreV1.name: "source"}, value: "kubelet",
			nomatch: func(e *selectableEvent) { e.Source.Component = "scheduler" }},
		selectorCase{name: "reportingController", labels: every("reportingComponent", "reportingController"), value: "example.com/kubelet",
			nomatch: func(e *selectableEvent) { e.ReportingController = "example.com/other" }},
		selectorCase{name: "reportingInstance", labels: every("reportingInstance", "reportingInstance"), value: "kubelet-node-1",
			nomatch: func(e *selectableEvent) { e.ReportingInstance = "kubelet-node-2" }},
		selectorCase{name: "type", labels: every("type", "type"), value: corev1.EventTypeNormal,
			nomatch: func(e *selectableEvent) { e.Type = corev1.EventTypeWarning }},
		selectorCase{name: "series.state", labels: every("series.state", "series.state"), value: "Ongoing",
			nomatch: func(e *selectableEvent) { e.seriesState = "Finished" }},
		// A legacy event, written without a reporting controller, is
		// selected by reportingController through its source.component...
		selectorCase{name: "reportingController-of-legacy-event", labels: every("reportingComponent", "reportingController"), value: "kubelet",
			match: makeLegacy,
			nomatch: func(e *selectableEvent) {
				makeLegacy(e)
				e.Source.Component = "scheduler"
			}},
		// ...and a new one, written without a source, by source through
		// its reportingController.
		selectorCase{name: "source-of-new-event", labels: map[string]string{coreV1.name: "source"}, value: "example.com/kubelet",
			match: func(e *selectableEvent) { e.Source = corev1.EventSource{} },
			nomatch: func(e *selectableEvent) {
				e.Source = corev1.EventSource{}
				e.ReportingController = "example.com/other"
			}},
	)
	return cases
}

// TestFieldSelectors lists and watches, through every version and in JSON
// and protobuf, with each selectable field, against an event that matches
// and one that does not. The non-matching event is written first, so a
// watch that does not filter would show it before the matching one.
func TestFieldSelectors(t *testing.T) {
	t.Parallel()
	clients := clientsFor(t, shared)
	writer := jsonClient(t)
	for _, tc := range selectorCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxFor(t)
			namespace := namespaceFor(t)

			// The resourceVersion the watches start from: before both writes.
			before, err := writer.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			nomatch := fullySelectableEvent(namespace, "nomatch")
			if tc.otherNamespace {
				nomatch = fullySelectableEvent(namespace+"-other", "nomatch")
			}
			if tc.nomatch != nil {
				tc.nomatch(nomatch)
			}
			match := fullySelectableEvent(namespace, "match")
			if tc.match != nil {
				tc.match(match)
			}
			for _, e := range []*selectableEvent{nomatch, match} {
				createSelectable(t, e)
			}

			value := tc.value
			if value == "" {
				value = selectedValue(t, tc.name, match)
			}
			listNamespace := namespace
			if tc.otherNamespace {
				listNamespace = metav1.NamespaceAll
			}
			for _, version := range allVersions {
				label, ok := tc.labels[version.name]
				if !ok {
					continue
				}
				for _, c := range clients {
					selector := label + "=" + fields.EscapeValue(value)
					items, _, err := version.list(ctx, c, listNamespace, metav1.ListOptions{FieldSelector: selector})
					if err != nil {
						t.Fatalf("%s list (%s) %s: %v", version.name, c.name, selector, err)
					}
					if got := names(items); !equalStrings(got, []string{"match"}) {
						t.Errorf("%s list (%s) %s: %v, want [match]", version.name, c.name, selector, got)
					}
					if !tc.otherNamespace {
						negated := label + "!=" + fields.EscapeValue(value)
						items, _, err := version.list(ctx, c, namespace, metav1.ListOptions{FieldSelector: negated})
						if err != nil {
							t.Fatalf("%s list (%s) %s: %v", version.name, c.name, negated, err)
						}
						if got := names(items); !equalStrings(got, []string{"nomatch"}) {
							t.Errorf("%s list (%s) %s: %v, want [nomatch]", version.name, c.name, negated, got)
						}
					}

					w, err := version.watch(ctx, c, listNamespace, metav1.ListOptions{FieldSelector: selector, ResourceVersion: before.ResourceVersion})
					if err != nil {
						t.Fatalf("%s watch (%s) %s: %v", version.name, c.name, selector, err)
					}
					e := nextEvent(t, w)
					w.Stop()
					view, ok := version.view(e.Object)
					if e.Type != watch.Added || !ok || view.Name != "match" || view.Namespace != namespace {
						t.Errorf("%s watch (%s) %s: first event %s %s/%s, want ADDED %s/match", version.name, c.name, selector,
							e.Type, view.Namespace, view.Name, namespace)
					}
				}
			}
		})
	}
}

// selectedValue is the value of the canonical field a case selects on.
func selectedValue(t *testing.T, name string, e *selectableEvent) string {
	t.Helper()
	field, ok := strings.CutPrefix(name, "regarding.")
	ref := &e.InvolvedObject
	if !ok {
		field, ok = strings.CutPrefix(name, "related.")
		ref = e.Related
	}
	if ok {
		return map[string]string{
			"kind": ref.Kind, "namespace": ref.Namespace, "name": ref.Name, "uid": string(ref.UID),
			"apiVersion": ref.APIVersion, "resourceVersion": ref.ResourceVersion, "fieldPath": ref.FieldPath,
		}[field]
	}
	if name == "metadata.namespace" {
		return e.Namespace
	}
	t.Fatalf("no value for %s", name)
	return ""
}

// createSelectable creates e through core/v1 in JSON, with its series.state.
func createSelectable(t *testing.T, e *selectableEvent) {
	t.Helper()
	data, err := json.Marshal(&e.Event)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(data, &body); err != nil {
		t.Fatal(err)
	}
	body["apiVersion"], body["kind"] = "v1", "Event"
	if e.seriesState != "" {
		body["series"].(map[string]any)["state"] = e.seriesState
	}
	if err := postJSON(ctxFor(t), t, "/api/v1/namespaces/"+e.Namespace+"/events", body).Error(); err != nil {
		t.Fatalf("creating %s/%s: %v", e.Namespace, e.Name, err)
	}
}

func names(items []eventView) []string {
	var out []string
	for _, i := range items {
		out = append(out, i.Name)
	}
	sort.Strings(out)
	return out
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00") && len(a) == len(b)
}

// TestUnknownFieldSelector: a label a version does not know is refused with
// 400 Bad Request, on list and on watch, naming the labels it supports.
func TestUnknownFieldSelector(t *testing.T) {
	t.Parallel()
	namespace := namespaceFor(t)
	cases := []struct {
		version apiVersion
		label   string
		// supported are some of the labels the message must name.
		supported []string
	}{
		{coreV1, "spec.nodeName", []string{"involvedObject.name", "related.name", "reportingComponent", "series.state", "source"}},
		{coreV1, "regarding.name", []string{"involvedObject.name"}},
		{eventsV1beta1, "involvedObject.name", []string{"regarding.name", "related.name", "reportingController", "series.state"}},
		{eventsV1, "involvedObject.name", []string{"regarding.name", "related.name", "reportingController", "series.state"}},
		{eventsV1, "source", []string{"reportingController"}},
	}
	for _, tc := range cases {
		for _, c := range clientsFor(t, shared) {
			t.Run(tc.version.name+"/"+tc.label+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				ctx := ctxFor(t)
				opts := metav1.ListOptions{FieldSelector: tc.label + "=x"}
				_, _, listErr := tc.version.list(ctx, c, namespace, opts)
				w, watchErr := tc.version.watch(ctx, c, namespace, opts)
				if w != nil {
					w.Stop()
				}
				for what, err := range map[string]error{"list": listErr, "watch": watchErr} {
					if !apierrors.IsBadRequest(err) {
						t.Errorf("%s with %s: %v, want 400 Bad Request", what, opts.FieldSelector, err)
						continue
					}
					msg := err.Error()
					if !strings.Contains(msg, "field label not supported: "+tc.label) {
						t.Errorf("%s: message %q does not name the refused label %s", what, msg, tc.label)
					}
					for _, s := range tc.supported {
						if !strings.Contains(msg, s) {
							t.Errorf("%s: message %q does not name supported label %s", what, msg, s)
						}
					}
				}
			})
		}
	}
}
