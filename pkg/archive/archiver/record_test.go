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

package archiver

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-events/events-apiserver/pkg/ancestry"
	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

// cachedChains is what a resolver's cache knows, by regarding name.
type cachedChains map[string]ancestry.Chain

func (c cachedChains) Lookup(regarding ancestry.Reference) ancestry.Chain {
	if chain, ok := c[regarding.Name]; ok {
		return chain
	}
	return ancestry.Chain{Pending: ancestry.ReasonUncached}
}

func TestWithCachedChain(t *testing.T) {
	web := []ancestry.Ancestor{{Kind: "ReplicaSet", Name: "web-1", UID: "uid-rs"}, {Kind: "Deployment", Name: "web", UID: "uid-d"}}
	cache := cachedChains{
		"web-1-a": {Ancestors: web},
		"lone":    {},
		"cut-1-a": {Ancestors: web[:1], Pending: ancestry.ReasonTimeout},
	}
	chain := map[string]string{ancestry.Annotation: ancestry.Encode(web)}
	for _, tc := range []struct {
		name, regarding string
		stored, want    map[string]string
		changed         bool
	}{
		{"none stored, the cache knows it", "web-1-a", nil, chain, true},
		{"pending stored, the cache knows it to the top", "web-1-a",
			map[string]string{ancestry.Annotation: ancestry.Encode(web[:1]), ancestry.PendingAnnotation: ancestry.ReasonError}, chain, true},
		{"pending stored, no owners after all", "lone", map[string]string{ancestry.PendingAnnotation: ancestry.ReasonError}, map[string]string{}, true},
		{"a final chain stored is kept", "web-1-a", map[string]string{ancestry.Annotation: `["Job/j","uid-j"]`}, map[string]string{ancestry.Annotation: `["Job/j","uid-j"]`}, false},
		{"none stored, no owners", "lone", nil, nil, false},
		{"none stored, not cached", "other", nil, nil, false},
		{"pending stored, pending in the cache too", "cut-1-a",
			map[string]string{ancestry.PendingAnnotation: ancestry.ReasonError}, map[string]string{ancestry.PendingAnnotation: ancestry.ReasonError}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			event := &core.Event{
				ObjectMeta:     metav1.ObjectMeta{Name: "e", Namespace: "shop", Annotations: tc.stored},
				InvolvedObject: core.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: tc.regarding, UID: types.UID("uid-" + tc.regarding)},
			}
			changed := withCachedChain(event, cache)
			if diff := cmp.Diff(tc.want, event.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
		})
	}
}
