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
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCrossVersionReads writes an event through each version, in JSON and
// in protobuf, and reads it back through every version in both: one stored
// object, with note == message, regarding == involvedObject, and a legacy
// event's source.component shown as reportingController by events.k8s.io.
func TestCrossVersionReads(t *testing.T) {
	t.Parallel()
	namespace := namespaceFor(t)
	clients := clientsFor(t, shared)

	// legacyWithReportingComponent is a core/v1 event that names its
	// reporter with the new field: events.k8s.io shows that one, not source.
	legacyWithReportingComponent := func(namespace, name string) eventView {
		v := legacyEvent(namespace, name)
		v.ReportingController = "example.com/node-controller"
		return v
	}
	// coreNewStyle is a core/v1 event written with the new fields.
	coreNewStyle := newEvent

	writes := []struct {
		name    string
		version apiVersion
		event   func(namespace, name string) eventView
	}{
		{"core-v1-legacy", coreV1, legacyEvent},
		{"core-v1-legacy-with-reporting-component", coreV1, legacyWithReportingComponent},
		{"core-v1-new-fields", coreV1, coreNewStyle},
		{"events-v1beta1", eventsV1beta1, newEvent},
		{"events-v1", eventsV1, newEvent},
	}
	for _, w := range writes {
		for _, writer := range clients {
			t.Run(w.name+"/"+writer.name, func(t *testing.T) {
				t.Parallel()
				ctx := ctxFor(t)
				sent := w.event(namespace, w.name+"-"+writer.name)
				created, err := w.version.create(ctx, writer, sent)
				if err != nil {
					t.Fatalf("create through %s: %v", w.version.name, err)
				}
				if created.UID == "" || created.ResourceVersion == "" {
					t.Fatalf("created event has no uid or resourceVersion: %+v", created)
				}

				for _, reader := range allVersions {
					want := sent
					want.UID, want.ResourceVersion = created.UID, created.ResourceVersion
					if !reader.legacy && want.ReportingController == "" {
						// events.k8s.io: a legacy event's reporter is its source.component.
						want.ReportingController = want.SourceComponent
					}
					for _, c := range clients {
						got, err := reader.get(ctx, c, namespace, sent.Name)
						if err != nil {
							t.Fatalf("get through %s (%s): %v", reader.name, c.name, err)
						}
						assertView(t, "get through "+reader.name+" ("+c.name+")", got, want)

						items, _, err := reader.list(ctx, c, namespace, metav1.ListOptions{FieldSelector: "metadata.name=" + sent.Name})
						if err != nil {
							t.Fatalf("list through %s (%s): %v", reader.name, c.name, err)
						}
						if len(items) != 1 {
							t.Fatalf("list through %s (%s): %d items, want 1", reader.name, c.name, len(items))
						}
						assertView(t, "list through "+reader.name+" ("+c.name+")", items[0], want)
					}
				}
			})
		}
	}
}

func assertView(t testing.TB, what string, got, want eventView) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("%s:\ngot  %s\nwant %s", what, g, w)
	}
}
