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

package storage_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/ancestry"
	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apiserver"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
)

// countingChains resolves every reference to chain and counts the
// resolutions, each of which would read kube-apiserver.
type countingChains struct {
	mu    sync.Mutex
	chain ancestry.Chain
	asked int
}

func (c *countingChains) Resolve(context.Context, ancestry.Reference) ancestry.Chain {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked++
	return c.chain
}

func (c *countingChains) set(chain ancestry.Chain) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.chain = chain
}

func (c *countingChains) reads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asked
}

// newStoreWithChains is the events store on a fresh etcd, without folding,
// whose strategy resolves chains with chains.
func newStoreWithChains(t *testing.T, chains eventregistry.ChainResolver) *eventstorage.REST {
	t.Helper()
	server, config := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	t.Cleanup(func() { server.Terminate(t) })
	factory := apiserver.NewStorageFactory(*config, apiserver.StorageMediaType, compatibility.DefaultBuildEffectiveVersion())
	resourceConfig, err := factory.NewConfig(core.Resource("events"), &core.Event{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := eventstorage.NewRESTWithClock(eventregistry.NewStrategy(apiserver.Scheme).WithChainResolver(chains), eventstorage.Options{
		RESTOptions: restOptionsGetter{StorageConfig: resourceConfig, ResourcePrefix: "events", DeleteCollectionWorkers: 1},
		TTL:         time.Hour,
	}, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.DestroyFunc)
	return store
}

// TestUpdateResolvesTheChainAfterValidationAndAdmission: an update of an
// event stored with a pending chain resolves it again only once the update
// passed validation and admission, so that a refused update reads
// nothing; a PUT that creates an event resolves its chain as a create
// does. What the update sends in the annotations the server owns is never
// kept.
func TestUpdateResolvesTheChainAfterValidationAndAdmission(t *testing.T) {
	full := ancestry.Chain{Ancestors: []ownerchain.Ancestor{{Kind: "ReplicaSet", Name: "web-7d4f9", UID: "uid-rs"}, {Kind: "Deployment", Name: "web", UID: "uid-d"}}}
	cut := ancestry.Chain{Ancestors: full.Ancestors[:1], Pending: ancestry.ReasonTimeout}
	forged := map[string]string{ownerchain.Annotation: `["Deployment/other","uid-other"]`}
	refuse := func(context.Context, runtime.Object, runtime.Object) error {
		return apierrors.NewForbidden(core.Resource("events"), "web.1", nil)
	}
	for _, tc := range []struct {
		name string
		// update changes the stored event; validate is the update's
		// admission (nil: admitted)
		update   func(*core.Event)
		validate rest.ValidateObjectUpdateFunc
		wantErr  func(error) bool
		// wantReads is how many resolutions the update made, and want
		// the annotations stored after it
		wantReads int
		want      map[string]string
	}{
		{
			name:      "admitted",
			update:    func(e *core.Event) { e.Annotations = forged },
			wantReads: 1, want: map[string]string{ownerchain.Annotation: ownerchain.Encode(full.Ancestors)},
		},
		{
			name:     "refused by admission",
			update:   func(e *core.Event) { e.Annotations = forged },
			validate: refuse, wantErr: apierrors.IsForbidden,
			want: map[string]string{ownerchain.Annotation: ownerchain.Encode(cut.Ancestors), ownerchain.PendingAnnotation: ancestry.ReasonTimeout},
		},
		{
			name:    "refused by validation",
			update:  func(e *core.Event) { e.InvolvedObject.Namespace = "other" },
			wantErr: apierrors.IsInvalid,
			want:    map[string]string{ownerchain.Annotation: ownerchain.Encode(cut.Ancestors), ownerchain.PendingAnnotation: ancestry.ReasonTimeout},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chains := &countingChains{chain: cut}
			store := newStoreWithChains(t, chains)
			ctx := coreV1Context(t)
			obj, err := store.Create(ctx, occurrence(1), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			chains.set(full)
			before := chains.reads()
			event := obj.(*core.Event).DeepCopy()
			tc.update(event)
			validate := tc.validate
			if validate == nil {
				validate = rest.ValidateAllObjectUpdateFunc
			}
			_, _, err = store.Update(ctx, event.Name, rest.DefaultUpdatedObjectInfo(event), rest.ValidateAllObjectFunc, validate, false, &metav1.UpdateOptions{})
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !tc.wantErr(err) {
				t.Fatalf("update: %v", err)
			}
			if got := chains.reads() - before; got != tc.wantReads {
				t.Errorf("the update resolved %d chains, want %d", got, tc.wantReads)
			}
			stored, err := store.Get(ctx, event.Name, &metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, stored.(*core.Event).Annotations); diff != "" {
				t.Errorf("stored annotations (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("a PUT that creates", func(t *testing.T) {
		chains := &countingChains{chain: full}
		store := newStoreWithChains(t, chains)
		event := occurrence(1)
		event.Annotations = forged
		obj, created, err := store.Update(coreV1Context(t), event.Name, rest.DefaultUpdatedObjectInfo(event), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		if err != nil || !created {
			t.Fatalf("update created %v: %v", created, err)
		}
		want := map[string]string{ownerchain.Annotation: ownerchain.Encode(full.Ancestors)}
		if diff := cmp.Diff(want, obj.(*core.Event).Annotations); diff != "" {
			t.Errorf("annotations (-want +got):\n%s", diff)
		}
		if chains.reads() != 1 {
			t.Errorf("the create resolved %d chains, want 1", chains.reads())
		}
	})
}
