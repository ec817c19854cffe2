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

package storage

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/livestore"
)

// StoreCache is what serves the store's reads from memory.
type StoreCache string

const (
	// WatchCache is k8s.io/apiserver's watch cache (the cacher), which
	// holds every event decoded.
	WatchCache StoreCache = "watch-cache"
	// CompactStore is the compact live store (pkg/livestore), which holds
	// every event as its stored bytes, outside the Go heap.
	CompactStore StoreCache = "compact"
	// NoStoreCache serves every read from etcd (--watch-cache=false, or a
	// watch cache size of 0 for events).
	NoStoreCache StoreCache = "none"
)

// StoreCaches are the values of --store-cache.
var StoreCaches = []StoreCache{WatchCache, CompactStore}

// Options are what NewREST builds the events store of.
type Options struct {
	// RESTOptions gives the etcd storage configuration of the events
	// (NewStorageFactory's): its StorageConfig, ResourcePrefix and the
	// generic store's settings. Its Decorator is not used: the storage is
	// assembled by Options.
	RESTOptions generic.RESTOptionsGetter
	// TTL is how long an event lives after its last write
	// (kube-apiserver's --event-ttl); whole seconds, at least one.
	TTL time.Duration
	// Folding, when set, folds isomorphic creates of hot series (Folder).
	Folding *eventpolicy.Folding
	// Cache is what serves reads from memory; "" is NoStoreCache.
	Cache StoreCache
	// Timeline, when set, is fed by the store cache's own list and watch of
	// etcd, and by nothing else; without a store cache, it is not fed
	// (Timeline.Fed).
	Timeline *Timeline
	// FencedWrites, when set, is the storage of the writes made under an
	// election's fence, over the same etcd configuration; every other
	// call goes to under, which it wraps.
	FencedWrites func(config *storagebackend.ConfigForResource, resourcePrefix string, newFunc, newListFunc func() runtime.Object,
		under storage.Interface) (storage.Interface, factory.DestroyFunc, error)
	// Unavailable, when set, maps the errors etcd answers for a passing
	// reason (out of space, no leader) to 503 with a Retry-After.
	Unavailable func(under storage.Interface, resource schema.GroupResource) storage.Interface
}

// pipeline is the events storage's assembly: what the generic store calls
// in place of a decorator, with what it derives from the store (the key
// function, the selectable attributes, the indexes).
type pipeline struct {
	Options
	table *stringTable
}

// GetRESTOptions is RESTOptions' with the interning codec and the
// pipeline as the storage's constructor.
func (p pipeline) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	options, err := p.RESTOptions.GetRESTOptions(resource, example)
	if err != nil {
		return options, err
	}
	if options.StorageConfig == nil {
		return options, fmt.Errorf("no storage configuration for %v", resource)
	}
	storageConfig := *options.StorageConfig
	storageConfig.Codec = internCodec{Codec: storageConfig.Codec, table: p.table}
	options.StorageConfig = &storageConfig
	options.Decorator = p.build
	return options, nil
}

// build assembles the storage, from etcd up, in this order:
//
//  1. etcd: the raw etcd3 storage, decoding through the interning codec;
//  2. fenced writes: the elected loops' writes in transactions that also
//     compare the campaign key (Options.FencedWrites);
//  3. the 503 mapping of etcd's passing refusals (Options.Unavailable).
//     2 and 3 are the delegate: every write, and the clients' reads the
//     store cache does not serve;
//  4. the store cache, which serves reads from memory: its feed, the only
//     list and watch any observer sees, is etcd (1) seen through the
//     timeline's tap; it never reads through the delegate, nor the
//     delegate through the tap, so a client's page never reaches the
//     timeline.
//
// Folding sits above the registry store (REST.Create), not in here: its
// writes go through the whole store, strategy included.
func (p pipeline) build(config *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error),
	newFunc, newListFunc func() runtime.Object, getAttrs storage.AttrFunc, trigger storage.IndexerFuncs, indexers *cache.Indexers,
) (_ storage.Interface, _ factory.DestroyFunc, err error) {
	etcd, destroyEtcd, err := generic.NewRawStorage(config, newFunc, newListFunc, resourcePrefix)
	if err != nil {
		return nil, nil, err
	}
	destroy := []func(){destroyEtcd}
	destroyAll := func() {
		for i := len(destroy) - 1; i >= 0; i-- {
			destroy[i]()
		}
	}
	defer func() {
		if err != nil {
			destroyAll()
		}
	}()

	delegate := etcd
	if p.FencedWrites != nil {
		fenced, destroyFenced, err := p.FencedWrites(config, resourcePrefix, newFunc, newListFunc, delegate)
		if err != nil {
			return nil, nil, fmt.Errorf("the store of the elected loops' writes: %w", err)
		}
		delegate = fenced
		destroy = append(destroy, destroyFenced)
	}
	if p.Unavailable != nil {
		delegate = p.Unavailable(delegate, config.GroupResource)
	}

	served, stop, err := p.storeCache(config, resourcePrefix, keyFunc, newFunc, newListFunc, getAttrs, trigger, indexers, etcd, delegate)
	if err != nil {
		return nil, nil, err
	}
	destroy = append(destroy, stop)
	var once sync.Once
	return served, func() { once.Do(destroyAll) }, nil
}

// storeCache is the store cache of kind p.Cache over delegate, fed by etcd
// through the timeline's tap when there is a timeline; delegate itself
// when there is no cache.
func (p pipeline) storeCache(config *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error),
	newFunc, newListFunc func() runtime.Object, getAttrs storage.AttrFunc, trigger storage.IndexerFuncs, indexers *cache.Indexers,
	etcd, delegate storage.Interface,
) (storage.Interface, func(), error) {
	if p.Cache == "" || p.Cache == NoStoreCache {
		return delegate, func() {}, nil
	}
	feed := etcd
	if p.Timeline != nil {
		if !p.Timeline.fed.CompareAndSwap(false, true) {
			return nil, nil, errors.New("the timeline already feeds a store cache")
		}
		feed = timelineTap{Interface: etcd, timeline: p.Timeline}
	}
	var served storage.Interface
	var stop func()
	switch p.Cache {
	case CompactStore:
		live, err := livestore.New(livestore.Config{
			Storage:        delegate,
			Feed:           feed,
			Codec:          config.Codec,
			GroupResource:  config.GroupResource,
			ResourcePrefix: resourcePrefix,
			KeyFunc:        keyFunc,
			NewFunc:        newFunc,
			NewListFunc:    newListFunc,
			GetAttrsFunc:   getAttrs,
			Indexers:       indexers,
			IndexerFuncs:   trigger,
			HistoryWindow:  config.EventsHistoryWindow,
		})
		if err != nil {
			return nil, nil, err
		}
		served, stop = live, live.Stop
	case WatchCache:
		cacher, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
			Storage:             feed,
			Versioner:           storage.APIObjectVersioner{},
			GroupResource:       config.GroupResource,
			EventsHistoryWindow: config.EventsHistoryWindow,
			ResourcePrefix:      resourcePrefix,
			KeyFunc:             keyFunc,
			NewFunc:             newFunc,
			NewListFunc:         newListFunc,
			GetAttrsFunc:        getAttrs,
			IndexerFuncs:        trigger,
			Indexers:            indexers,
			Codec:               config.Codec,
		})
		if err != nil {
			return nil, nil, err
		}
		delegator := cacherstorage.NewCacheDelegator(cacher, delegate)
		served, stop = delegator, func() {
			delegator.Stop()
			cacher.Stop()
		}
	default:
		return nil, nil, fmt.Errorf("unknown store cache %q", p.Cache)
	}
	if p.Timeline != nil {
		p.Timeline.feed(etcd, timelineFetch(etcd, served, keyFunc), p.Cache != CompactStore)
	}
	return served, stop, nil
}
