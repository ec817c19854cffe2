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

package apiserver

import (
	"context"
	"sync"

	"go.etcd.io/etcd/client/v3/kubernetes"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/etcd3"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"

	"github.com/kube-events/events-apiserver/pkg/leaderelection"
)

// fencedWrites is the storage of the events store's writes over under,
// so that the writes of the elected loops (the series controllers and the
// mirror, whose contexts carry the election's fence:
// leaderelection.FenceFrom) are applied only while this replica leads:
// each is one etcd transaction that also compares the campaign key
// (leaderelection.NewKV), refused with leaderelection.ErrFenced once the
// term is over. The generic storage builds its etcd client where no KV
// wrapper can reach it, so those writes go through an etcd3 store of their
// own, on the same configuration (key prefix, codec, transformer, leases)
// and a client of NewKV; reads, watches and every other write go to under
// unchanged.
func fencedWrites(config *storagebackend.ConfigForResource, resourcePrefix string, newFunc, newListFunc func() runtime.Object,
	under storage.Interface,
) (storage.Interface, factory.DestroyFunc, error) {
	fenced, destroyFenced, err := newFencedStore(config, resourcePrefix, newFunc, newListFunc)
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	return fencedStorage{Interface: under, fenced: fenced}, func() { once.Do(destroyFenced) }, nil
}

// newFencedStore is an etcd3 store as the generic storage factory makes
// one for config, whose client's writes are fenced.
func newFencedStore(config *storagebackend.ConfigForResource, resourcePrefix string, newFunc, newListFunc func() runtime.Object) (storage.Interface, func(), error) {
	clientConfig, err := etcdClientConfig(config.Transport)
	if err != nil {
		return nil, nil, err
	}
	client, err := kubernetes.New(clientConfig)
	if err != nil {
		return nil, nil, err
	}
	// The store's keys are etcd's own (the storage prefix included), the
	// election client's are under the storage prefix.
	client.KV = leaderelection.NewKV(etcd3.NewETCDLatencyTracker(client.KV), storagePrefix(config.Prefix))
	transformer := config.Transformer
	if transformer == nil {
		transformer = identity.NewEncryptCheckTransformer()
	}
	versioner := storage.APIObjectVersioner{}
	// No compactor: the store serves writes only, and a write reads the
	// current state, which compaction never removes.
	store, err := etcd3.New(client, nil, config.Codec, newFunc, newListFunc, config.Prefix, resourcePrefix, config.GroupResource,
		transformer, config.LeaseManagerConfig, etcd3.NewDefaultDecoder(config.Codec, versioner), versioner)
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	return store, func() {
		store.Close()
		_ = client.Close()
	}, nil
}

// fencedStorage sends the writes made under a fence to fenced, every other
// call to the generic storage it embeds.
type fencedStorage struct {
	storage.Interface
	fenced storage.Interface
}

// writer is the storage of a write made under ctx.
func (s fencedStorage) writer(ctx context.Context) storage.Interface {
	if _, ok := leaderelection.FenceFrom(ctx); ok {
		return s.fenced
	}
	return s.Interface
}

func (s fencedStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	return s.writer(ctx).Create(ctx, key, obj, out, ttl)
}

func (s fencedStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	return s.writer(ctx).GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cachedExistingObject)
}

func (s fencedStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	return s.writer(ctx).Delete(ctx, key, out, preconditions, validateDeletion, cachedExistingObject, opts)
}
