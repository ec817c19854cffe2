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
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
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
)

// StoreCaches are the values of StoreCache.
var StoreCaches = []StoreCache{WatchCache, CompactStore}

// WithStoreCache returns getter with the store's cache (where getter gives
// one: --watch-cache) made by cache, fed through timeline when it is not
// nil.
func WithStoreCache(getter generic.RESTOptionsGetter, cache StoreCache, timeline *Timeline) generic.RESTOptionsGetter {
	return storeCacheOptions{RESTOptionsGetter: getter, cache: cache, timeline: timeline}
}

type storeCacheOptions struct {
	generic.RESTOptionsGetter
	cache    StoreCache
	timeline *Timeline
}

func (g storeCacheOptions) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	options, err := g.RESTOptionsGetter.GetRESTOptions(resource, example)
	if err != nil || !cached(options.Decorator) {
		return options, err
	}
	options.Decorator = storeCacheDecorator(g.cache, g.timeline)
	return options, nil
}

// cached says whether a storage decorator is the watch cache: the storage
// factory gives every resource either the cacher or UndecoratedStorage.
func cached(decorator generic.StorageDecorator) bool {
	return decorator != nil && reflect.ValueOf(decorator).Pointer() != reflect.ValueOf(generic.StorageDecorator(generic.UndecoratedStorage)).Pointer()
}

// storeCacheDecorator makes the store's cache of kind cache over etcd,
// with timeline (when not nil) fed beneath it by the list and watch the
// cache reads etcd with (timelineTap). A timeline feeds one cache: a
// second store is an error.
func storeCacheDecorator(kind StoreCache, timeline *Timeline) generic.StorageDecorator {
	if kind == "" {
		kind = CompactStore
	}
	return func(config *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, getAttrs storage.AttrFunc, trigger storage.IndexerFuncs, indexers *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		if timeline != nil && !timeline.fed.CompareAndSwap(false, true) {
			return nil, nil, errors.New("the timeline already feeds a store cache")
		}
		s, destroyStorage, err := generic.NewRawStorage(config, newFunc, newListFunc, resourcePrefix)
		if err != nil {
			return nil, nil, err
		}
		source := s
		if timeline != nil {
			source = timelineTap{Interface: s, timeline: timeline}
		}
		var served storage.Interface
		var stop func()
		switch kind {
		case CompactStore:
			live, err := livestore.New(livestore.Config{
				// Clients' reads that the store does not serve go to
				// etcd itself; the timeline sees only the feed.
				Storage:        s,
				Feed:           source,
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
				destroyStorage()
				return nil, nil, err
			}
			served, stop = live, live.Stop
		default:
			cacher, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
				Storage:             source,
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
				destroyStorage()
				return nil, nil, err
			}
			delegator := cacherstorage.NewCacheDelegator(cacher, s)
			served, stop = delegator, func() {
				delegator.Stop()
				cacher.Stop()
			}
		}
		if timeline != nil {
			timeline.feed(s, timelineFetch(s, served, keyFunc), kind != CompactStore)
		}
		var once sync.Once
		return served, func() {
			once.Do(func() {
				stop()
				destroyStorage()
			})
		}, nil
	}
}

// timelineFetch reads the state of an event the timeline ordered: from
// served, the store's cache, when the event has not changed since, and
// from etcd's history at the state's revision when it has (a page of
// history walks the timeline as it was when the page began).
func timelineFetch(etcd, served storage.Interface, keyFunc func(runtime.Object) (string, error)) func(ctx context.Context, name types.NamespacedName, rv string) (*core.Event, error) {
	return func(ctx context.Context, name types.NamespacedName, rv string) (*core.Event, error) {
		key, err := keyFunc(&core.Event{ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name}})
		if err != nil {
			return nil, err
		}
		event := &core.Event{}
		// Not older than the list that read it; the timeline checks it
		// is the state it ordered.
		err = served.Get(ctx, key, storage.GetOptions{ResourceVersion: rv}, event)
		if err == nil && event.ResourceVersion == rv {
			return event, nil
		}
		if err != nil && !storage.IsNotFound(err) {
			return nil, err
		}
		list := &core.EventList{}
		exact := storage.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Predicate: storage.Everything}
		if err := etcd.GetList(ctx, key, exact, list); err != nil {
			return nil, err
		}
		if len(list.Items) != 1 {
			return nil, storage.NewKeyNotFoundError(key, 0)
		}
		return &list.Items[0], nil
	}
}

// timelineTap is the storage the store's cache lists and watches etcd through:
// every page it lists and every event it watches reaches the timeline
// first.
type timelineTap struct {
	storage.Interface
	timeline *Timeline
}

func (s timelineTap) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if err := s.Interface.GetList(ctx, key, opts, listObj); err != nil {
		return err
	}
	list, ok := listObj.(*core.EventList)
	if !ok {
		return fmt.Errorf("the timeline orders events, not %T", listObj)
	}
	return s.timeline.listed(opts.Predicate.Continue == "", list)
}

func (s timelineTap) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	w, err := s.Interface.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(event watch.Event) (watch.Event, bool) {
		s.timeline.observe(event)
		return event, true
	}), nil
}

// IsWatchListSemanticsUnSupported makes the cacher list, then watch: the
// timeline is seeded by the list (a watch-list's initial events would
// reach it as additions to what it already holds).
func (timelineTap) IsWatchListSemanticsUnSupported() bool { return true }
