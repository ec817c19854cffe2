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

package livestore

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Config is what a Store caches and how: the watch cache's configuration
// (cacher.Config), less what only the watch cache uses.
type Config struct {
	// Storage is etcd: writes go through it, and the store lists and
	// watches it to stay current.
	Storage storage.Interface
	// Codec encodes the objects the store holds and decodes what it
	// returns: the storage codec.
	Codec runtime.Codec
	// GroupResource names the resource in errors and metrics.
	GroupResource schema.GroupResource
	// ResourcePrefix is the key prefix under which every object lives.
	ResourcePrefix string
	// KeyFunc is an object's key in Storage.
	KeyFunc func(runtime.Object) (string, error)
	// NewFunc and NewListFunc make an empty object and list.
	NewFunc, NewListFunc func() runtime.Object
	// GetAttrsFunc gives the labels and fields selectors match.
	GetAttrsFunc storage.AttrFunc
	// Indexers make a list selecting an exact value of an indexed field
	// read that value's postings instead of every object.
	Indexers *cache.Indexers
	// IndexerFuncs pick the watchers a change reaches by one field's
	// value (storage.IndexerFuncs, as the watch cache's trigger); at most
	// one.
	IndexerFuncs storage.IndexerFuncs
	// HistoryBytes bounds the recent changes kept for watches resuming
	// from a resourceVersion; 0 means DefaultHistoryBytes.
	HistoryBytes int
	// Clock is the clock of bookmarks and waits; nil means the real one.
	Clock clock.Clock
}

// DefaultHistoryBytes is the default bound of the watch history.
const DefaultHistoryBytes = 16 << 20
