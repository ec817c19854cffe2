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
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-events/events-apiserver/pkg/ancestry"
	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/core/install"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
)

// TestNewRecord: the record holds the event's identity beside an object
// that leaves it out, and the rest of the event in both.
func TestNewRecord(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	codecs := serializer.NewCodecFactory(scheme)
	codec := codecs.LegacyCodec(corev1.SchemeGroupVersion)
	last := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	event := &core.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web-1.17a3", Namespace: "shop", UID: "uid-e", Labels: map[string]string{"team": "a"}},
		InvolvedObject: core.ObjectReference{Kind: "Pod", Name: "web-1", UID: "uid-p"},
		Reason:         "BackOff", Message: "Back-off restarting failed container", Count: 3,
		FirstTimestamp: metav1.NewTime(last.Add(-time.Minute)), LastTimestamp: last,
	}
	before := event.DeepCopy()

	got, err := NewRecord(event, codec, 42)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, event); diff != "" {
		t.Errorf("NewRecord changed the event (-before +after):\n%s", diff)
	}
	want := archive.Record{UID: "uid-e", Namespace: "shop", Name: "web-1.17a3", ResourceVersion: "42", Time: last.Time,
		Occurrences: 3, FirstObserved: last.Add(-time.Minute)}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(archive.Record{}, "Object", "Fields")); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if got.Fields["involvedObject.name"] != "web-1" || got.Fields["metadata.name"] != "web-1.17a3" {
		t.Errorf("fields %v lack the event's", got.Fields)
	}
	obj, err := runtime.Decode(codecs.UniversalDecoder(), got.Object)
	if err != nil {
		t.Fatal(err)
	}
	stored := before.DeepCopy()
	stored.Name, stored.Namespace, stored.UID = "", "", ""
	if diff := cmp.Diff(stored, obj); diff != "" {
		t.Errorf("archived object (-want +got):\n%s", diff)
	}
}

// cachedChains is what a resolver's cache knows, by regarding name.
type cachedChains map[string]ancestry.Chain

func (c cachedChains) Lookup(regarding ancestry.Reference) ancestry.Chain {
	if chain, ok := c[regarding.Name]; ok {
		return chain
	}
	return ancestry.Chain{Pending: ancestry.ReasonUncached}
}

func TestWithCachedChain(t *testing.T) {
	web := []ownerchain.Ancestor{{Kind: "ReplicaSet", Name: "web-1", UID: "uid-rs"}, {Kind: "Deployment", Name: "web", UID: "uid-d"}}
	cache := cachedChains{
		"web-1-a": {Ancestors: web},
		"lone":    {},
		"cut-1-a": {Ancestors: web[:1], Pending: ancestry.ReasonTimeout},
	}
	chain := map[string]string{ownerchain.Annotation: ownerchain.Encode(web)}
	for _, tc := range []struct {
		name, regarding string
		stored, want    map[string]string
		changed         bool
	}{
		{"none stored, the cache knows it", "web-1-a", nil, chain, true},
		{"pending stored, the cache knows it to the top", "web-1-a",
			map[string]string{ownerchain.Annotation: ownerchain.Encode(web[:1]), ownerchain.PendingAnnotation: ancestry.ReasonError}, chain, true},
		{"pending stored, no owners after all", "lone", map[string]string{ownerchain.PendingAnnotation: ancestry.ReasonError}, map[string]string{}, true},
		{"a final chain stored is kept", "web-1-a", map[string]string{ownerchain.Annotation: `["Job/j","uid-j"]`}, map[string]string{ownerchain.Annotation: `["Job/j","uid-j"]`}, false},
		{"none stored, no owners", "lone", nil, nil, false},
		{"none stored, not cached", "other", nil, nil, false},
		{"pending stored, pending in the cache too", "cut-1-a",
			map[string]string{ownerchain.PendingAnnotation: ancestry.ReasonError}, map[string]string{ownerchain.PendingAnnotation: ancestry.ReasonError}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			event := &core.Event{
				ObjectMeta:     metav1.ObjectMeta{Name: "e", Namespace: "shop", Annotations: tc.stored},
				InvolvedObject: core.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: tc.regarding, UID: types.UID("uid-" + tc.regarding)},
			}
			changed := withCachedChain(context.Background(), event, cache, nil)
			if diff := cmp.Diff(tc.want, event.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
		})
	}
}

// TestOthersChainsAreNotArchived: where kube-apiserver writes events past
// the strategy, a chain without the server's seal is dropped before the
// state is archived, then completed from the cache as a missing one; a
// sealed chain is archived as stored.
func TestOthersChainsAreNotArchived(t *testing.T) {
	ctx := context.Background()
	web := []ownerchain.Ancestor{{Kind: "ReplicaSet", Name: "web-1", UID: "uid-rs"}, {Kind: "Deployment", Name: "web", UID: "uid-d"}}
	cache := cachedChains{"web-1-a": {Ancestors: web}}
	seals := ancestry.NewSealer(func(context.Context) ([]byte, error) { return []byte("install key"), nil })
	eventWith := func(regarding string, annotations map[string]string) *core.Event {
		return &core.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "e", Namespace: "shop", UID: "uid-e", Annotations: annotations},
			InvolvedObject: core.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: regarding, UID: types.UID("uid-" + regarding)},
		}
	}
	sealed := eventWith("web-1-a", map[string]string{ownerchain.Annotation: `["Job/j","uid-j"]`})
	if err := seals.Seal(ctx, sealed); err != nil {
		t.Fatal(err)
	}
	forged := map[string]string{ownerchain.Annotation: `["Deployment/payments","uid-payments"]`, "team": "a"}
	for _, tc := range []struct {
		name    string
		event   *core.Event
		want    map[string]string
		changed bool
	}{
		{"another writer's, the cache knows the chain", eventWith("web-1-a", forged),
			map[string]string{ownerchain.Annotation: ownerchain.Encode(web), "team": "a"}, true},
		{"another writer's, not cached", eventWith("other", forged), map[string]string{"team": "a"}, true},
		{"sealed, kept", sealed, sealed.DeepCopy().Annotations, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			event := tc.event.DeepCopy()
			changed := withCachedChain(ctx, event, cache, seals)
			if diff := cmp.Diff(tc.want, event.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
		})
	}
}
