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
	"fmt"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
	"github.com/kube-events/events-apiserver/pkg/storedevent"
)

// The store's cache indexes events by the fields users select on most, so
// that a list by an exact value of one of them reads one index bucket
// instead of every cached event, and so that a watch event reaches only the
// watchers selecting its regarding name instead of every watcher.
//
// Labels are the canonical core/v1 ones; the other versions' labels
// (regarding.name, ...) are converted to them before selection.
const (
	// IndexRegardingName is what an object's events are listed and watched
	// by: kubectl describe, controllers following one object.
	IndexRegardingName = eventconversion.PrefixInvolvedObject + "name"
	// IndexRelatedName finds the events about a secondary object (the node a
	// pod was scheduled to, the volume it mounts).
	IndexRelatedName = eventconversion.PrefixRelated + "name"
	// IndexAncestor finds the events of an object's ownership tree, by its
	// "Kind/name" or UID: each event is indexed under those of its
	// regarding object and of every ancestor of it.
	IndexAncestor = eventconversion.FieldAncestor
	// IndexSeriesState finds the series in a state: the sweeper lists the
	// Ongoing ones every interval. Events without a series state are
	// indexed under no value.
	IndexSeriesState = eventconversion.FieldSeriesState
)

// indexedFields are the fields with an index, in the order the store's cache
// tries them when a selector names several. storedevent.FieldStatelessSeries
// is the series-state controller's: its index holds only the series stored
// without a state, so the controller's periodic list reads those alone.
var indexedFields = []string{IndexRegardingName, IndexAncestor, IndexRelatedName, storedevent.FieldStatelessSeries, IndexSeriesState}

// Indexers are the indexes of the store's cache, one per indexed field,
// named as k8s.io/apiserver's storage expects (storage.FieldIndex).
func Indexers() *cache.Indexers {
	return &cache.Indexers{
		storage.FieldIndex(IndexRegardingName): indexBy(RegardingName),
		storage.FieldIndex(IndexRelatedName):   indexBy(relatedName),
		storage.FieldIndex(IndexAncestor): func(obj any) ([]string, error) {
			event, ok := obj.(*core.Event)
			if !ok {
				return nil, fmt.Errorf("not an event: %T", obj)
			}
			regarding := &event.InvolvedObject
			return ownerchain.Terms(regarding.Kind, regarding.Name, string(regarding.UID), event.Annotations[ownerchain.Annotation]), nil
		},
		storage.FieldIndex(IndexSeriesState): func(obj any) ([]string, error) {
			event, ok := obj.(*core.Event)
			if !ok {
				return nil, fmt.Errorf("not an event: %T", obj)
			}
			if event.Series == nil || event.Series.State == "" {
				return nil, nil
			}
			return []string{string(event.Series.State)}, nil
		},
		storage.FieldIndex(storedevent.FieldStatelessSeries): func(obj any) ([]string, error) {
			event, ok := obj.(*core.Event)
			if !ok {
				return nil, fmt.Errorf("not an event: %T", obj)
			}
			if !storedevent.IsStatelessSeries(event) {
				return nil, nil // indexed under no value: every other event costs the index nothing
			}
			return []string{"true"}, nil
		},
	}
}

// TriggerFuncs pick the watchers a watch event goes to: only those whose
// selector requires its regarding name (and those that do not select on it
// at all). k8s.io/apiserver's watch cache supports one trigger; regarding
// name is the one per-object watchers use.
func TriggerFuncs() storage.IndexerFuncs {
	return storage.IndexerFuncs{IndexRegardingName: RegardingName}
}

// RegardingName is the name of the object an event is about: its
// involvedObject.name, regarding.name in events.k8s.io.
func RegardingName(obj runtime.Object) string {
	return obj.(*core.Event).InvolvedObject.Name
}

// relatedName is the name of the event's related object, or "" without
// one, as storedevent.SelectableFields selects it.
func relatedName(obj runtime.Object) string {
	if related := obj.(*core.Event).Related; related != nil {
		return related.Name
	}
	return ""
}

func indexBy(value func(runtime.Object) string) cache.IndexFunc {
	return func(obj any) ([]string, error) {
		event, ok := obj.(*core.Event)
		if !ok {
			return nil, fmt.Errorf("not an event: %T", obj)
		}
		return []string{value(event)}, nil
	}
}

// SelectsIndexedField says whether a field selector requires an exact
// value of an indexed field: the store's cache lists it from one index
// bucket, the events of one object, instead of every cached event.
func SelectsIndexedField(selector fields.Selector) bool {
	if selector == nil {
		return false
	}
	for _, field := range indexedFields {
		if _, ok := selector.RequiresExactMatch(field); ok {
			return true
		}
	}
	return false
}
