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

package ancestry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
)

func TestRegardingReference(t *testing.T) {
	for _, tc := range []struct {
		name  string
		event core.Event
		want  Reference
	}{
		{
			name: "a namespaced object's reference without its namespace is in the event's",
			event: core.Event{
				ObjectMeta:     metav1.ObjectMeta{Namespace: "web"},
				InvolvedObject: core.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web-1", UID: "u1"},
			},
			want: Reference{APIVersion: "v1", Kind: "Pod", Namespace: "web", Name: "web-1", UID: "u1"},
		},
		{
			name: "another namespace's object is out of scope",
			event: core.Event{
				ObjectMeta:     metav1.ObjectMeta{Namespace: "default"},
				InvolvedObject: core.ObjectReference{Kind: "Pod", Namespace: "web", Name: "web-1"},
			},
			want: Reference{Kind: "Pod", Namespace: "web", Name: "web-1", OutOfScope: ReasonOtherNamespace},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, RegardingReference(&tc.event)); diff != "" {
				t.Errorf("RegardingReference (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetChain(t *testing.T) {
	ancestors := []ownerchain.Ancestor{{Kind: "ReplicaSet", Name: "web-7d4f9", UID: "u2"}}
	for _, tc := range []struct {
		name   string
		before map[string]string
		chain  Chain
		want   map[string]string
	}{
		{
			name:  "a final chain, on an event without annotations",
			chain: Chain{Ancestors: ancestors},
			want:  map[string]string{ownerchain.Annotation: ownerchain.Encode(ancestors)},
		},
		{
			name:   "a pending chain keeps the client's other annotations",
			before: map[string]string{"team": "web"},
			chain:  Chain{Ancestors: ancestors, Pending: ReasonTimeout},
			want: map[string]string{
				"team":                       "web",
				ownerchain.Annotation:        ownerchain.Encode(ancestors),
				ownerchain.PendingAnnotation: ReasonTimeout,
			},
		},
		{
			name:   "an empty final chain removes both",
			before: map[string]string{ownerchain.Annotation: `["A/b","u"]`, ownerchain.PendingAnnotation: ReasonError},
			want:   map[string]string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			event := &core.Event{ObjectMeta: metav1.ObjectMeta{Annotations: tc.before}}
			SetChain(event, tc.chain)
			if diff := cmp.Diff(tc.want, event.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}
