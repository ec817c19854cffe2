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
)

// WithTimeline returns getter with the watch cache it gives fed through
// timeline (CacherWithTimeline). Where getter gives no watch cache
// (--watch-cache=false), nothing feeds the timeline: Fed says so.
func WithTimeline(getter generic.RESTOptionsGetter, timeline *Timeline) generic.RESTOptionsGetter {
	return timelineOptions{RESTOptionsGetter: getter, timeline: timeline}
}

type timelineOptions struct {
	generic.RESTOptionsGetter
	timeline *Timeline
}

func (g timelineOptions) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	options, err := g.RESTOptionsGetter.GetRESTOptions(resource, example)
	if err != nil || !cached(options.Decorator) {
		return options, err
	}
	options.Decorator = CacherWithTimeline(g.timeline)
	return options, nil
}

// cached says whether a storage decorator is the watch cache: the storage
// factory gives every resource either the cacher or UndecoratedStorage.
func cached(decorator generic.StorageDecorator) bool {
	return decorator != nil && reflect.ValueOf(decorator).Pointer() != reflect.ValueOf(generic.StorageDecorator(generic.UndecoratedStorage)).Pointer()
}

// CacherWithTimeline is k8s.io/apiserver's StorageWithCacher with timeline
// fed beneath the cacher, by the list and watch the cacher reads etcd
// with (timelineTap). A timeline feeds one cacher: a second store is an
// error.
func CacherWithTimeline(timeline *Timeline) generic.StorageDecorator {
	return func(config *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, getAttrs storage.AttrFunc, trigger storage.IndexerFuncs, indexers *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		if !timeline.fed.CompareAndSwap(false, true) {
			return nil, nil, errors.New("the timeline already feeds a watch cache")
		}
		s, destroyStorage, err := generic.NewRawStorage(config, newFunc, newListFunc, resourcePrefix)
		if err != nil {
			return nil, nil, err
		}
		cacher, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
			Storage:             timelineTap{Interface: s, timeline: timeline},
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
		timeline.feed(s, func(ctx context.Context, name types.NamespacedName, rv string) (*core.Event, error) {
			key, err := keyFunc(&core.Event{ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name}})
			if err != nil {
				return nil, err
			}
			event := &core.Event{}
			// Not older than the list that read it; the timeline checks it
			// is the state it ordered.
			if err := delegator.Get(ctx, key, storage.GetOptions{ResourceVersion: rv}, event); err != nil {
				return nil, err
			}
			return event, nil
		})
		var once sync.Once
		return delegator, func() {
			once.Do(func() {
				delegator.Stop()
				cacher.Stop()
				destroyStorage()
			})
		}, nil
	}
}

// timelineTap is the storage the cacher lists and watches etcd through:
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
