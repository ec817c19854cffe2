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

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-events/events-apiserver/pkg/ancestry"
	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
)

// knownChains resolves from a fixed ownership map, and records what it was
// asked.
type knownChains struct {
	chains map[string]ancestry.Chain // by regarding name
	asked  []ancestry.Reference
}

func (k *knownChains) Resolve(_ context.Context, regarding ancestry.Reference) ancestry.Chain {
	k.asked = append(k.asked, regarding)
	if regarding.OutOfScope != "" {
		return ancestry.Chain{} // as the Resolver: nothing read
	}
	return k.chains[regarding.Name]
}

var (
	webChain = []ownerchain.Ancestor{{Kind: "ReplicaSet", Name: "web-7d4f9", UID: "uid-rs"}, {Kind: "Deployment", Name: "web", UID: "uid-d"}}
	oldChain = []ownerchain.Ancestor{{Kind: "Job", Name: "nightly-1", UID: "uid-j"}}
	// sentChain is what a client claims; the server never keeps it.
	sentChain = `["Deployment/other","uid-other"]`
	// known: web-7d4f9-a's chain resolves, cut-5f6-a's stops short at its
	// ReplicaSet when the read of its Deployment times out.
	known = map[string]ancestry.Chain{
		"web-7d4f9-a": {Ancestors: webChain},
		"cut-5f6-a":   {Ancestors: webChain[:1], Pending: ancestry.ReasonTimeout},
	}
)

func eventAbout(name string, annotations map[string]string) *core.Event {
	return &core.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name + ".1", Namespace: "shop", Annotations: annotations},
		InvolvedObject: core.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: name, UID: types.UID("uid-" + name)},
	}
}

// TestCreateSetsTheResolvedChain: the strategy drops the chain a client
// sends (PrepareForCreate); the store then resolves it (ResolveChain).
func TestCreateSetsTheResolvedChain(t *testing.T) {
	for _, tc := range []struct {
		name        string
		resolver    bool
		regarding   string
		annotations map[string]string
		want        map[string]string
		// namespace is the regarding object's, "" for the event's
		namespace string
	}{
		{"resolved", true, "web-7d4f9-a", nil, map[string]string{ownerchain.Annotation: ownerchain.Encode(webChain)}, ""},
		{"resolved replaces what the client sent", true, "web-7d4f9-a",
			map[string]string{ownerchain.Annotation: sentChain, "team": "a"},
			map[string]string{ownerchain.Annotation: ownerchain.Encode(webChain), "team": "a"}, ""},
		{"no chain drops what the client sent", true, "lonely", map[string]string{ownerchain.Annotation: sentChain}, map[string]string{}, ""},
		{"no chain, no annotations", true, "lonely", nil, nil, ""},
		{"stopped short, marked pending", true, "cut-5f6-a", nil,
			map[string]string{ownerchain.Annotation: ownerchain.Encode(webChain[:1]), ownerchain.PendingAnnotation: ancestry.ReasonTimeout}, ""},
		{"resolved drops a pending mark the client sent", true, "web-7d4f9-a", map[string]string{ownerchain.PendingAnnotation: "timeout"},
			map[string]string{ownerchain.Annotation: ownerchain.Encode(webChain)}, ""},
		{"standalone drops what the client sent", false, "web-7d4f9-a",
			map[string]string{ownerchain.Annotation: sentChain, "team": "a"}, map[string]string{"team": "a"}, ""},
		{"the event's own namespace named", true, "web-7d4f9-a", nil, map[string]string{ownerchain.Annotation: ownerchain.Encode(webChain)}, "shop"},
		{"another namespace's object gets no chain", true, "web-7d4f9-a", map[string]string{ownerchain.Annotation: sentChain}, map[string]string{}, "db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			strategy := NewStrategy(nil)
			chains := &knownChains{chains: known}
			if tc.resolver {
				strategy = strategy.WithChainResolver(chains)
			}
			event := eventAbout(tc.regarding, tc.annotations)
			event.InvolvedObject.Namespace = tc.namespace
			strategy.PrepareForCreate(context.Background(), event)
			if err := strategy.ResolveChain(context.Background(), event); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, event.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			var wantAsked []ancestry.Reference
			if tc.resolver {
				// The reference leaves the namespace out: the event's it is.
				wantAsked = []ancestry.Reference{{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: tc.regarding, UID: event.InvolvedObject.UID}}
				if tc.namespace != "" && tc.namespace != "shop" {
					wantAsked[0].Namespace, wantAsked[0].OutOfScope = tc.namespace, ancestry.ReasonOtherNamespace
				}
			}
			if diff := cmp.Diff(wantAsked, chains.asked); diff != "" {
				t.Errorf("resolved (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUpdateKeepsTheStoredChain: PrepareForUpdate keeps a final chain and
// resolves nothing; a missing or pending one is resolved by
// ResolveUpdatedChain, which the store calls once the update passed
// validation and admission.
func TestUpdateKeepsTheStoredChain(t *testing.T) {
	stored := map[string]string{ownerchain.Annotation: ownerchain.Encode(oldChain)}
	for _, tc := range []struct {
		name             string
		resolver         bool
		stored, sent     map[string]string
		want             map[string]string
		wantResolveCalls int
	}{
		{"kept when the update sends another", true, stored, map[string]string{ownerchain.Annotation: sentChain}, stored, 0},
		{"kept when the update drops it", true, stored, nil, stored, 0},
		{"kept beside the update's other annotations", true, stored, map[string]string{"team": "a"},
			map[string]string{ownerchain.Annotation: ownerchain.Encode(oldChain), "team": "a"}, 0},
		{"kept when standalone", false, stored, nil, stored, 0},
		{"resolved when none was stored", true, nil, map[string]string{ownerchain.Annotation: sentChain},
			map[string]string{ownerchain.Annotation: ownerchain.Encode(webChain)}, 1},
		{"none stored, none resolved", false, nil, map[string]string{ownerchain.Annotation: sentChain}, map[string]string{}, 0},
		{"resolved again when pending", true, map[string]string{ownerchain.Annotation: ownerchain.Encode(webChain[:1]), ownerchain.PendingAnnotation: ancestry.ReasonError},
			map[string]string{ownerchain.PendingAnnotation: ancestry.ReasonError}, map[string]string{ownerchain.Annotation: ownerchain.Encode(webChain)}, 1},
		{"a pending mark the update sends is dropped", true, stored, map[string]string{ownerchain.PendingAnnotation: ancestry.ReasonTimeout}, stored, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			strategy := NewStrategy(nil)
			chains := &knownChains{chains: known}
			if tc.resolver {
				strategy = strategy.WithChainResolver(chains)
			}
			old, event := eventAbout("web-7d4f9-a", tc.stored), eventAbout("web-7d4f9-a", tc.sent)
			strategy.PrepareForUpdate(context.Background(), event, old)
			if len(chains.asked) != 0 {
				t.Errorf("PrepareForUpdate resolved %d times, want none", len(chains.asked))
			}
			if err := strategy.ResolveUpdatedChain(context.Background(), event, old); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, event.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if len(chains.asked) != tc.wantResolveCalls {
				t.Errorf("resolved %d times, want %d", len(chains.asked), tc.wantResolveCalls)
			}
		})
	}
}

// TestOthersChainsAreResolvedAgain: where kube-apiserver writes events
// past the strategy, a stored chain without the server's seal (another
// writer's) is never kept: an update resolves it again and seals what it
// resolved; a sealed chain is kept, as is.
func TestOthersChainsAreResolvedAgain(t *testing.T) {
	ctx := context.Background()
	seals := ancestry.NewSealer(func(context.Context) ([]byte, error) { return []byte("install key"), nil })
	strategy := NewStrategy(nil).WithChainResolver(&knownChains{chains: known}).WithChainSealer(seals)
	sealed := eventAbout("web-7d4f9-a", nil)
	sealed.UID = "uid-event"
	if err := strategy.ResolveChain(ctx, sealed); err != nil {
		t.Fatal(err)
	}
	if !seals.Trusts(ctx, sealed) || sealed.Annotations[ownerchain.SealAnnotation] == "" {
		t.Fatalf("a chain the strategy set is not sealed: %v", sealed.Annotations)
	}
	forged := sealed.DeepCopy()
	forged.Annotations[ownerchain.Annotation] = sentChain
	copied := sealed.DeepCopy()
	copied.UID = "uid-other-event"

	for _, tc := range []struct {
		name       string
		stored     *core.Event
		wantReads  int
		wantSealed bool
	}{
		{"sealed, kept", sealed, 0, true},
		{"another writer's chain beside a seal", forged, 1, true},
		{"a seal copied from another event", copied, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chains := &knownChains{chains: known}
			strategy := NewStrategy(nil).WithChainResolver(chains).WithChainSealer(seals)
			event := tc.stored.DeepCopy()
			event.Annotations[ownerchain.Annotation] = sentChain
			strategy.PrepareForUpdate(ctx, event, tc.stored)
			if err := strategy.ResolveUpdatedChain(ctx, event, tc.stored); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(ownerchain.Encode(webChain), event.Annotations[ownerchain.Annotation]); diff != "" {
				t.Errorf("chain (-want +got):\n%s", diff)
			}
			if got := seals.Trusts(ctx, event); got != tc.wantSealed {
				t.Errorf("sealed %v, want %v: %v", got, tc.wantSealed, event.Annotations)
			}
			if len(chains.asked) != tc.wantReads {
				t.Errorf("resolved %d times, want %d", len(chains.asked), tc.wantReads)
			}
		})
	}

	t.Run("without a sealer every chain is trusted", func(t *testing.T) {
		if !(*ancestry.Sealer)(nil).Trusts(ctx, forged) {
			t.Error("a nil sealer refused a chain")
		}
	})
}
