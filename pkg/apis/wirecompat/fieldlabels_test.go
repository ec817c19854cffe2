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
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	eventsv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	eventsv1beta1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1beta1"
)

var objectReferenceFields = []string{"kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"}

// coreV1FieldLabels are the field selector labels core/v1 accepts, each
// mapped to the canonical label the registry selects on (core/v1's own).
func coreV1FieldLabels() map[string]string {
	m := map[string]string{}
	for _, l := range []string{"metadata.name", "metadata.namespace", "reason", "action", "source",
		"reportingComponent", "reportingInstance", "type", "series.state", "history.since", "history.until"} {
		m[l] = l
	}
	for _, f := range objectReferenceFields {
		m["involvedObject."+f] = "involvedObject." + f
		m["related."+f] = "related." + f
	}
	m["involvedObject.ancestor"] = "involvedObject.ancestor"
	m["involvedObject.ancestor.uid"] = "involvedObject.ancestor"
	return m
}

// eventsFieldLabels are the labels events.k8s.io v1beta1 and v1 accept, with
// their canonical labels: the events.k8s.io names map to core/v1's.
func eventsFieldLabels() map[string]string {
	m := map[string]string{}
	for _, l := range []string{"metadata.name", "metadata.namespace", "reason", "action",
		"reportingInstance", "type", "series.state", "history.since", "history.until"} {
		m[l] = l
	}
	m["reportingController"] = "reportingComponent"
	for _, f := range objectReferenceFields {
		m["regarding."+f] = "involvedObject." + f
		m["related."+f] = "related." + f
	}
	m["regarding.ancestor"] = "involvedObject.ancestor"
	m["regarding.ancestor.uid"] = "involvedObject.ancestor"
	return m
}

// valueFor is a value label accepts: the ancestor terms take an object's
// Kind/name or UID, the others any string.
func valueFor(label string) string {
	switch {
	case strings.HasSuffix(label, ".ancestor"):
		return "Deployment/web-0.v2"
	case strings.HasSuffix(label, ".ancestor.uid"):
		return "8a1b7e2d-2222-4b0a-8c3e-6f5d4a3b2c01"
	}
	return "Pod=web-0,with:odd/chars"
}

// What kube-apiserver v1.37.2 accepts (k8s.io/kubernetes pkg/apis/core/v1
// and pkg/apis/events/{v1,v1beta1} conversion.go), with its canonical labels:
// every selector a client uses against kube-apiserver must work here too.
var (
	kubeAPIServerCoreV1FieldLabels = map[string]string{
		"involvedObject.kind": "involvedObject.kind", "involvedObject.namespace": "involvedObject.namespace",
		"involvedObject.name": "involvedObject.name", "involvedObject.uid": "involvedObject.uid",
		"involvedObject.apiVersion": "involvedObject.apiVersion", "involvedObject.resourceVersion": "involvedObject.resourceVersion",
		"involvedObject.fieldPath": "involvedObject.fieldPath", "reason": "reason", "reportingComponent": "reportingComponent",
		"source": "source", "type": "type", "metadata.namespace": "metadata.namespace", "metadata.name": "metadata.name",
	}
	kubeAPIServerEventsFieldLabels = map[string]string{
		"reason": "reason", "regarding.kind": "involvedObject.kind", "regarding.namespace": "involvedObject.namespace",
		"regarding.name": "involvedObject.name", "regarding.uid": "involvedObject.uid",
		"regarding.apiVersion": "involvedObject.apiVersion", "regarding.resourceVersion": "involvedObject.resourceVersion",
		"regarding.fieldPath": "involvedObject.fieldPath", "reportingController": "reportingComponent", "type": "type",
		"metadata.namespace": "metadata.namespace", "metadata.name": "metadata.name",
	}
)

// TestFieldLabelConversion checks, for every served version, that each
// supported field label (including every one kube-apiserver supports) maps
// to its canonical label with the value untouched, and that an unknown label
// is refused with an error that names exactly the supported ones.
func TestFieldLabelConversion(t *testing.T) {
	tests := []struct {
		gv            schema.GroupVersion
		supported     map[string]string
		kubeAPIServer map[string]string
		unsupported   []string
	}{
		{
			gv:            corev1.SchemeGroupVersion,
			supported:     coreV1FieldLabels(),
			kubeAPIServer: kubeAPIServerCoreV1FieldLabels,
			unsupported:   []string{"regarding.name", "reportingController", "message", "involvedObject", "involvedObject.labels", "spec.nodeName", ""},
		},
		{
			gv:            eventsv1beta1.SchemeGroupVersion,
			supported:     eventsFieldLabels(),
			kubeAPIServer: kubeAPIServerEventsFieldLabels,
			unsupported:   []string{"involvedObject.name", "reportingComponent", "source", "note", "deprecatedHost", "regarding", ""},
		},
		{
			gv:            eventsv1.SchemeGroupVersion,
			supported:     eventsFieldLabels(),
			kubeAPIServer: kubeAPIServerEventsFieldLabels,
			unsupported:   []string{"involvedObject.name", "reportingComponent", "source", "note", "deprecatedSource.host", "regarding", ""},
		},
	}
	const value = "Pod=web-0,with:odd/chars"
	for _, tt := range tests {
		gvk := tt.gv.WithKind("Event")
		t.Run(versionName(tt.gv), func(t *testing.T) {
			for label, canonical := range tt.kubeAPIServer {
				if got := tt.supported[label]; got != canonical {
					t.Errorf("kube-apiserver maps %q to %q, this table to %q", label, canonical, got)
				}
			}
			for label, canonical := range tt.supported {
				value := valueFor(label)
				gotLabel, gotValue, err := ourScheme.ConvertFieldLabel(gvk, label, value)
				if err != nil {
					t.Errorf("ConvertFieldLabel(%q): %v", label, err)
					continue
				}
				if gotLabel != canonical || gotValue != value {
					t.Errorf("ConvertFieldLabel(%q) = %q, %q; want %q, %q", label, gotLabel, gotValue, canonical, value)
				}
			}

			var supported []string
			for label := range tt.supported {
				supported = append(supported, label)
			}
			sort.Strings(supported)
			for _, label := range tt.unsupported {
				_, _, err := ourScheme.ConvertFieldLabel(gvk, label, value)
				if err == nil {
					t.Errorf("ConvertFieldLabel(%q) accepted an unsupported label", label)
					continue
				}
				msg := err.Error()
				// The same opening as kube-apiserver's message, then the list.
				if !strings.HasPrefix(msg, "field label not supported: "+label+" ") {
					t.Errorf("ConvertFieldLabel(%q) error %q does not open with %q", label, msg, "field label not supported: "+label)
				}
				listed := listedLabels(msg)
				if strings.Join(listed, ", ") != strings.Join(supported, ", ") {
					t.Errorf("ConvertFieldLabel(%q) error names %v, want the supported labels %v", label, listed, supported)
				}
			}
		})
	}
}

// listedLabels returns the comma separated labels after the last ": " of an
// error message, up to its closing parenthesis, sorted.
func listedLabels(msg string) []string {
	i := strings.LastIndex(msg, ": ")
	if i < 0 {
		return nil
	}
	list := strings.TrimSuffix(msg[i+2:], ")")
	labels := strings.Split(list, ", ")
	sort.Strings(labels)
	return labels
}

// TestAncestorTermValues checks that the ancestor terms refuse a value of
// the wrong form, naming the label, in every version.
func TestAncestorTermValues(t *testing.T) {
	for _, tc := range []struct {
		gv     schema.GroupVersion
		label  string
		value  string
		errors bool
	}{
		{corev1.SchemeGroupVersion, "involvedObject.ancestor", "Deployment/web", false},
		{corev1.SchemeGroupVersion, "involvedObject.ancestor", "web", true},
		{corev1.SchemeGroupVersion, "involvedObject.ancestor.uid", "Deployment/web", true},
		{eventsv1.SchemeGroupVersion, "regarding.ancestor", "Deployment/web", false},
		{eventsv1.SchemeGroupVersion, "regarding.ancestor", "Deployment/", true},
		{eventsv1.SchemeGroupVersion, "regarding.ancestor.uid", "8a1b7e2d", false},
		{eventsv1beta1.SchemeGroupVersion, "regarding.ancestor", `Deployment/a"b`, true},
		{eventsv1beta1.SchemeGroupVersion, "regarding.ancestor.uid", "", true},
	} {
		t.Run(versionName(tc.gv)+" "+tc.label+"="+tc.value, func(t *testing.T) {
			_, _, err := ourScheme.ConvertFieldLabel(tc.gv.WithKind("Event"), tc.label, tc.value)
			if (err != nil) != tc.errors {
				t.Fatalf("ConvertFieldLabel(%s=%s) = %v, want an error: %v", tc.label, tc.value, err, tc.errors)
			}
			if err != nil && !strings.Contains(err.Error(), tc.label+":") {
				t.Errorf("error %q does not name the label %s", err, tc.label)
			}
		})
	}
}
