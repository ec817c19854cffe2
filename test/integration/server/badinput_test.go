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
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBadInput sends what a server must refuse and checks the Status it
// answers: the HTTP code, the reason, the message and, for invalid fields,
// the field paths of the causes.
func TestBadInput(t *testing.T) {
	t.Parallel()
	namespace := namespaceFor(t)
	createIn(t, coreV1, clientsFor(t, shared)[0], legacyEvent(namespace, "existing"))
	existing, err := jsonClient(t).CoreV1().Events(namespace).Get(ctxFor(t), "existing", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jsonClient(t).CoreV1().Events(namespace).Patch(ctxFor(t), "existing", "application/merge-patch+json",
		[]byte(`{"count":4}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	coreEvents := "/api/v1/namespaces/" + namespace + "/events"
	v1Events := "/apis/events.k8s.io/v1/namespaces/" + namespace + "/events"
	// staleUpdate is the event as read before the patch: its resourceVersion is stale.
	existing.APIVersion, existing.Kind = "v1", "Event"
	existing.Message = "stale"
	staleUpdate, err := jsonMarshal(existing)
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name        string
		method      string
		path        string
		contentType string
		query       map[string]string
		body        string
		code        int32
		reason      metav1.StatusReason
		message     []string
		// fields are the field paths the causes must name, in order.
		fields []string
	}{
		{
			name: "malformed JSON", method: http.MethodPost, path: coreEvents, contentType: "application/json",
			body: `{"apiVersion":"v1","kind":"Event",`,
			code: 400, reason: metav1.StatusReasonBadRequest,
			message: []string{"the object provided is unrecognized (must be of type Event)", "json parse error: unexpected end of JSON input"},
		},
		{
			name: "malformed YAML", method: http.MethodPost, path: coreEvents, contentType: "application/yaml",
			body: "apiVersion: v1\nkind: Event\nmetadata: [\n",
			code: 400, reason: metav1.StatusReasonBadRequest,
			message: []string{"the object provided is unrecognized (must be of type Event)", "yaml: line 3: did not find expected node content"},
		},
		{
			name: "wrong kind", method: http.MethodPost, path: coreEvents, contentType: "application/json",
			body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"}}`,
			code: 400, reason: metav1.StatusReasonBadRequest,
			message: []string{`Pod in version "v1" cannot be handled as a Event`, `no kind "Pod" is registered for version "v1"`},
		},
		{
			name: "wrong apiVersion", method: http.MethodPost, path: coreEvents, contentType: "application/json",
			body: `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"x"}}`,
			code: 400, reason: metav1.StatusReasonBadRequest,
			message: []string{"the API version in the data (events.k8s.io/v1) does not match the expected API version (v1)"},
		},
		{
			name: "wrong apiVersion for events.k8s.io", method: http.MethodPost, path: v1Events, contentType: "application/json",
			body: `{"apiVersion":"events.k8s.io/v1beta1","kind":"Event","metadata":{"name":"x"}}`,
			code: 400, reason: metav1.StatusReasonBadRequest,
			message: []string{"the API version in the data (events.k8s.io/v1beta1) does not match the expected API version (events.k8s.io/v1)"},
		},
		{
			name: "unknown field, strict field validation", method: http.MethodPost, path: v1Events, contentType: "application/json",
			query: map[string]string{"fieldValidation": "Strict"},
			body:  `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"x"},"bogus":1}`,
			code:  400, reason: metav1.StatusReasonBadRequest,
			message: []string{`strict decoding error: unknown field "bogus"`},
		},
		{
			name: "unknown field selector", method: http.MethodGet, path: v1Events,
			query: map[string]string{"fieldSelector": "involvedObject.name=web"},
			code:  400, reason: metav1.StatusReasonBadRequest,
			message: []string{"field label not supported: involvedObject.name", "regarding.name"},
		},
		{
			name: "invalid fields through core/v1", method: http.MethodPost, path: coreEvents, contentType: "application/json",
			body: `{"apiVersion":"v1","kind":"Event","metadata":{"name":"x"},"involvedObject":{"kind":"Pod","name":"web","namespace":"elsewhere"},
				"reason":"Started","series":{"count":2,"lastObservedTime":"2026-01-01T00:00:00.000000Z","state":"Sideways"}}`,
			code: 422, reason: metav1.StatusReasonInvalid,
			message: []string{`Event "x" is invalid`, `involvedObject.namespace: Invalid value: "elsewhere": does not match metadata.namespace "` + namespace + `"`,
				`series.state: Unsupported value: "Sideways"`},
			fields: []string{"involvedObject.namespace", "series.state"},
		},
		{
			name: "invalid reporter through core/v1", method: http.MethodPost, path: coreEvents, contentType: "application/json",
			body: `{"apiVersion":"v1","kind":"Event","metadata":{"name":"x"},"involvedObject":{"kind":"Pod","name":"web","namespace":"` + namespace + `"},
				"eventTime":"2026-01-01T00:00:00.000000Z","reason":"Started","action":"Start","reportingComponent":"not a qualified name!"}`,
			code: 422, reason: metav1.StatusReasonInvalid,
			message: []string{`Event "x" is invalid`, `reportingComponent: Invalid value: "not a qualified name!"`, "reportingInstance: Required value"},
			fields:  []string{"reportingComponent", "reportingInstance"},
		},
		{
			name: "invalid fields through events.k8s.io/v1", method: http.MethodPost, path: v1Events, contentType: "application/json",
			body: `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"x"},"regarding":{"kind":"Pod","name":"web"},
				"reason":"Started","note":"n","type":"Sideways","series":{"count":1}}`,
			code: 422, reason: metav1.StatusReasonInvalid,
			message: []string{`Event "x" is invalid`, "regarding.namespace", "eventTime: Required value", `type: Unsupported value: "Sideways"`,
				"series.count: Invalid value: 1: must be at least 2"},
			fields: []string{"regarding.namespace", "eventTime", "reportingController", "reportingInstance", "action", "type", "series.count", "series.lastObservedTime"},
		},
		{
			name: "body over the size limit", method: http.MethodPost, path: coreEvents, contentType: "application/json",
			body: `{"apiVersion":"v1","kind":"Event","metadata":{"name":"x"},"message":"` + strings.Repeat("a", 4<<20) + `"}`,
			code: 413, reason: metav1.StatusReasonRequestEntityTooLarge,
			message: []string{"Request entity too large: limit is 3145728"},
		},
		{
			name: "update with a stale resourceVersion", method: http.MethodPut, path: coreEvents + "/existing", contentType: "application/json",
			body: string(staleUpdate),
			code: 409, reason: metav1.StatusReasonConflict,
			message: []string{`Operation cannot be fulfilled on events "existing": the object has been modified; please apply your changes to the latest version and try again`},
		},
		{
			name: "create of an existing event", method: http.MethodPost, path: coreEvents, contentType: "application/json",
			body: `{"apiVersion":"v1","kind":"Event","metadata":{"name":"existing"},"involvedObject":{"kind":"Pod","name":"web","namespace":"` + namespace + `"},"reason":"R"}`,
			code: 409, reason: metav1.StatusReasonAlreadyExists,
			message: []string{`events "existing" already exists`},
		},
	}
	rc := jsonClient(t).CoreV1().RESTClient()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := rc.Verb(tc.method).AbsPath(tc.path)
			for k, v := range tc.query {
				req = req.Param(k, v)
			}
			if tc.body != "" {
				req = req.SetHeader("Content-Type", tc.contentType).Body([]byte(tc.body))
			}
			err := req.Do(ctxFor(t)).Error()
			status, ok := err.(apierrors.APIStatus)
			if !ok {
				t.Fatalf("got %v, want a Status %d", err, tc.code)
			}
			s := status.Status()
			if s.Code != tc.code || s.Reason != tc.reason {
				t.Errorf("got %d %s, want %d %s: %s", s.Code, s.Reason, tc.code, tc.reason, s.Message)
			}
			for _, m := range tc.message {
				if !strings.Contains(s.Message, m) {
					t.Errorf("message %q lacks %q", s.Message, m)
				}
			}
			if tc.fields != nil {
				var fields []string
				if s.Details != nil {
					for _, c := range s.Details.Causes {
						fields = append(fields, c.Field)
					}
				}
				if !equalStrings(fields, tc.fields) {
					t.Errorf("causes name fields %q, want %q", fields, tc.fields)
				}
			}
		})
	}
}
