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
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

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
