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
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/metadata"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/cacher/delegator"
	cachekey "k8s.io/apiserver/pkg/storage/cacher/key"
	"k8s.io/apiserver/pkg/storage/cacher/progress"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
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
const DefaultHistoryBytes = 8 << 20

const (
	// freshTimeout is how long a read waits for the store to reach the
	// resourceVersion it asks for, as the watch cache's blockTimeout.
	freshTimeout = 3 * time.Second
	// tooHighRetrySeconds is the Retry-After of a read that waited in vain.
	tooHighRetrySeconds = 1
	// listPageSize is the page of the lists that (re)load the store: no
	// more than this many objects are decoded at once.
	listPageSize = 10000
	// bookmarkFrequency is how often a watcher that allows bookmarks gets
	// one, at the least (the watch cache's).
	bookmarkFrequency = time.Minute
)

// Store is the compact live store: a storage.Interface whose writes go to
// Config.Storage and whose reads are served from a Table fed by a list and
// a watch of Config.Storage, with the watch cache's semantics (the
// CacheDelegator's routing with no snapshots: an exact resourceVersion and
// a continue token are etcd's to answer).
type Store struct {
	config    Config
	versioner storage.Versioner
	clock     clock.WithTicker
	indexes   []storeIndex
	trigger   *storeIndex
	progress  *progress.ConditionalProgressRequester
	logger    klog.Logger

	// encoded is the buffer objects are encoded into for the table, which
	// copies them: prepare runs on the goroutine that feeds the table.
	encoded bytes.Buffer

	// mu guards everything below; cond wakes the reads waiting for rv.
	mu       sync.RWMutex
	cond     *sync.Cond
	table    *Table
	rv       uint64
	ready    bool
	history  *history
	watchers *watcherSet

	cancel context.CancelFunc
	done   chan struct{}
}

// storeIndex is an index of the table (or the watchers' trigger): the
// values an object is found under.
type storeIndex struct {
	name   string // storage.FieldIndex(field)
	values cache.IndexFunc
}

var _ storage.Interface = &Store{}

// New starts a store over config.Storage: it lists and watches etcd through
// it and serves reads from memory once it has listed (before that, reads
// go to etcd). Stop ends it.
func New(config Config) (*Store, error) {
	if config.Storage == nil || config.Codec == nil || config.KeyFunc == nil || config.NewFunc == nil || config.NewListFunc == nil || config.GetAttrsFunc == nil {
		return nil, fmt.Errorf("livestore: incomplete configuration for %v", config.GroupResource)
	}
	registerMetrics()
	if config.HistoryBytes <= 0 {
		config.HistoryBytes = DefaultHistoryBytes
	}
	clk, ok := config.Clock.(clock.WithTicker)
	if !ok {
		clk = clock.RealClock{}
	}
	s := &Store{
		config:    config,
		versioner: storage.APIObjectVersioner{},
		clock:     clk,
		watchers:  newWatcherSet(config.GroupResource.String()),
		logger:    klog.Background().WithName("livestore").WithValues("resource", config.GroupResource.String()),
		done:      make(chan struct{}),
	}
	s.cond = sync.NewCond(s.mu.RLocker())
	var names []string
	if config.Indexers != nil {
		for name, values := range *config.Indexers {
			s.indexes = append(s.indexes, storeIndex{name: name, values: values})
		}
		sort.Slice(s.indexes, func(i, j int) bool { return s.indexes[i].name < s.indexes[j].name })
		for _, index := range s.indexes {
			names = append(names, index.name)
		}
	}
	switch len(config.IndexerFuncs) {
	case 0:
	case 1:
		for field, value := range config.IndexerFuncs {
			s.trigger = &storeIndex{name: field, values: func(obj any) ([]string, error) {
				return []string{value(obj.(runtime.Object))}, nil
			}}
		}
	default:
		return nil, fmt.Errorf("livestore: at most one trigger, got %d", len(config.IndexerFuncs))
	}
	if utilfeature.DefaultFeatureGate.Enabled(features.SizeBasedListCostEstimate) {
		if err := config.Storage.EnableResourceSizeEstimation(s.keys); err != nil {
			return nil, fmt.Errorf("livestore: enabling the size estimation of %v: %w", config.GroupResource, err)
		}
	}
	s.table = NewTable(names)
	s.history = newHistory(config.HistoryBytes)
	metadataSource := metadata.New(map[string]string{"source": "livestore"})
	s.progress = progress.NewConditionalProgressRequester(config.Storage.RequestWatchProgress, clk, metadataSource)

	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(context.Background(), metadataSource))
	s.cancel = cancel
	go s.progress.Run(ctx.Done())
	go s.bookmarks(ctx)
	go func() {
		defer close(s.done)
		s.run(ctx)
	}()
	return s, nil
}

// Stop ends the store's list and watch, and every watch it serves.
func (s *Store) Stop() {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchers.terminateAll()
	s.table.Close()
	s.table = NewTable(nil)
	s.history.close()
	s.ready = false
}

// Ready says whether the store has loaded its first list.
func (s *Store) Ready() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ready
}

// run keeps the store current until ctx ends: list, then watch from the
// list's revision, and again from a list whenever the watch fails (a
// compacted revision, etcd gone).
func (s *Store) run(ctx context.Context) {
	// From 100 ms, doubling to 30 s, back to 100 ms after two minutes
	// without a failure.
	delay := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 30 * time.Second}.
		DelayWithReset(s.clock, 2*time.Minute)
	for ctx.Err() == nil {
		err := s.listAndWatch(ctx)
		if ctx.Err() != nil {
			return
		}
		s.logger.Info("Live store relisting", "err", err)
		relistsTotal.WithLabelValues(s.config.GroupResource.String()).Inc()
		select {
		case <-ctx.Done():
			return
		case <-s.clock.After(delay()):
		}
	}
}

// listAndWatch loads the table from a paged list, then applies the
// watch's changes to it until the watch ends.
func (s *Store) listAndWatch(ctx context.Context) error {
	table := NewTable(s.indexNames())
	listRV, err := s.load(ctx, table)
	if err != nil {
		table.Close()
		return err
	}
	s.mu.Lock()
	s.table.Close()
	s.table = table
	s.rv = listRV
	s.ready = true
	s.history.reset(listRV)
	objectsGauge.WithLabelValues(s.config.GroupResource.String()).Set(float64(table.Len()))
	// The watchers were served from the table just replaced: a watch
	// started before a relist cannot go on, as the watch cache's.
	s.watchers.terminateAll()
	s.cond.Broadcast()
	s.mu.Unlock()

	w, err := s.config.Storage.Watch(ctx, s.config.ResourcePrefix, storage.ListOptions{
		ResourceVersion: strconv.FormatUint(listRV, 10),
		Recursive:       true,
		Predicate:       storage.Everything,
		ProgressNotify:  true,
	})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case event, ok := <-w.ResultChan():
			if !ok {
				return errors.New("watch closed")
			}
			if err := s.apply(event); err != nil {
				return err
			}
		}
	}
}

func (s *Store) indexNames() []string {
	names := make([]string, len(s.indexes))
	for i, index := range s.indexes {
		names[i] = index.name
	}
	return names
}

// load lists every object into table, a page at a time, at one revision.
func (s *Store) load(ctx context.Context, table *Table) (uint64, error) {
	var listRV uint64
	opts := storage.ListOptions{Recursive: true, Predicate: storage.Everything}
	opts.Predicate.Limit = listPageSize
	for {
		list := s.config.NewListFunc()
		if err := s.config.Storage.GetList(ctx, s.config.ResourcePrefix, opts, list); err != nil {
			return 0, err
		}
		listMeta, err := meta.ListAccessor(list)
		if err != nil {
			return 0, err
		}
		if listRV == 0 {
			if listRV, err = s.versioner.ParseResourceVersion(listMeta.GetResourceVersion()); err != nil {
				return 0, err
			}
		}
		err = meta.EachListItem(list, func(obj runtime.Object) error {
			o, err := s.prepare(obj)
			if err != nil {
				return err
			}
			table.Put(o.key, o.rv, o.value, o.indexValues)
			return nil
		})
		if err != nil {
			return 0, err
		}
		if listMeta.GetContinue() == "" {
			return listRV, nil
		}
		opts.Predicate.Continue = listMeta.GetContinue()
	}
}

// object is a watched or listed object, ready for the table and the
// watchers: its key and revision, its encoded bytes (those prepare makes
// are valid until the next prepare), its index values and its selectable
// attributes.
type object struct {
	obj         runtime.Object
	key         string
	rv          uint64
	value       []byte
	indexValues [][]string
	labels      labels.Set
	fields      fields.Set
}

func (s *Store) prepare(obj runtime.Object) (*object, error) {
	key, err := s.config.KeyFunc(obj)
	if err != nil {
		return nil, err
	}
	rv, err := s.versioner.ObjectResourceVersion(obj)
	if err != nil {
		return nil, err
	}
	s.encoded.Reset()
	if err := s.config.Codec.Encode(obj, &s.encoded); err != nil {
		return nil, err
	}
	o := &object{obj: obj, key: key, rv: rv, value: s.encoded.Bytes()}
	if len(s.indexes) > 0 {
		o.indexValues = make([][]string, len(s.indexes))
		for i, index := range s.indexes {
			if o.indexValues[i], err = index.values(obj); err != nil {
				return nil, err
			}
		}
	}
	return o, nil
}

// decode is the object whose encoded bytes are value, at rv.
func (s *Store) decode(value []byte, rv uint64) (runtime.Object, error) {
	obj, _, err := s.config.Codec.Decode(value, nil, s.config.NewFunc())
	if err != nil {
		return nil, err
	}
	if err := s.versioner.UpdateObject(obj, rv); err != nil {
		return nil, err
	}
	return obj, nil
}

// apply applies one change of the watch: to the table, the history and
// the watchers.
func (s *Store) apply(event watch.Event) error {
	switch event.Type {
	case watch.Bookmark:
		rv, err := s.versioner.ObjectResourceVersion(event.Object)
		if err != nil {
			return err
		}
		s.mu.Lock()
		if rv > s.rv {
			s.rv = rv
		}
		s.watchers.progressed(s)
		s.cond.Broadcast()
		s.mu.Unlock()
		return nil
	case watch.Error:
		return apierrors.FromObject(event.Object)
	case watch.Added, watch.Modified, watch.Deleted:
	default:
		return fmt.Errorf("unexpected watch event %q", event.Type)
	}
	o, err := s.prepare(event.Object)
	if err != nil {
		return err
	}
	if o.labels, o.fields, err = s.config.GetAttrsFunc(o.obj); err != nil {
		return err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	var prev *object
	if value, rv, ok := s.table.Get(o.key); ok {
		prev = &object{key: o.key, rv: rv, value: bytes.Clone(value)}
	}
	if event.Type == watch.Deleted {
		s.table.Delete(o.key)
	} else {
		s.table.Put(o.key, o.rv, o.value, o.indexValues)
	}
	s.rv = o.rv
	change := &change{eventType: event.Type, object: o, prev: prev}
	s.history.add(change)
	o.value = nil // the next prepare's buffer; the watchers read obj
	s.watchers.dispatch(s, change)
	objectsGauge.WithLabelValues(s.config.GroupResource.String()).Set(float64(s.table.Len()))
	s.cond.Broadcast()
	return nil
}

// waitFresh waits, holding the read lock, until the store has reached rv
// or freshTimeout has passed.
func (s *Store) waitFreshLocked(ctx context.Context, rv uint64) error {
	if rv <= s.rv {
		return nil
	}
	s.progress.Add()
	defer s.progress.Remove()
	deadline := s.clock.Now().Add(freshTimeout)
	// The wakeups take the write lock, so that they cannot fall between a
	// check of the loop below and its Wait.
	wake := func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	}
	timer := s.clock.NewTimer(freshTimeout)
	defer timer.Stop()
	waited := make(chan struct{})
	defer close(waited)
	go func() {
		select {
		case <-timer.C():
			wake()
		case <-waited:
		}
	}()
	stop := context.AfterFunc(ctx, wake)
	defer stop()
	for s.rv < rv {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !s.clock.Now().Before(deadline) {
			return storage.NewTooLargeResourceVersionError(rv, s.rv, tooHighRetrySeconds)
		}
		s.cond.Wait()
	}
	return nil
}

// Versioner is the API objects' versioner.
func (s *Store) Versioner() storage.Versioner { return s.versioner }

// Create writes to etcd.
func (s *Store) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	return s.config.Storage.Create(ctx, key, obj, out, ttl)
}

// Delete writes to etcd, from the cached object when the caller has one.
func (s *Store) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	return s.config.Storage.Delete(ctx, key, out, preconditions, validateDeletion, cachedExistingObject, opts)
}

// GuaranteedUpdate writes to etcd.
func (s *Store) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	return s.config.Storage.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cachedExistingObject)
}

// Stats are etcd's.
func (s *Store) Stats(ctx context.Context) (storage.Stats, error) { return s.config.Storage.Stats(ctx) }

// ReadinessCheck is ready once the store has listed.
func (s *Store) ReadinessCheck() error {
	if !s.Ready() {
		return storage.ErrStorageNotReady
	}
	return nil
}

// RequestWatchProgress asks etcd, whose watch feeds the store.
func (s *Store) RequestWatchProgress(ctx context.Context) error {
	return s.config.Storage.RequestWatchProgress(ctx)
}

// GetCurrentResourceVersion is etcd's current revision.
func (s *Store) GetCurrentResourceVersion(ctx context.Context) (uint64, error) {
	return s.config.Storage.GetCurrentResourceVersion(ctx)
}

// EnableResourceSizeEstimation is etcd's.
func (s *Store) EnableResourceSizeEstimation(keys storage.KeysFunc) error {
	return s.config.Storage.EnableResourceSizeEstimation(keys)
}

// CompactRevision is etcd's.
func (s *Store) CompactRevision() int64 { return s.config.Storage.CompactRevision() }

// Get reads from etcd without a resourceVersion (or before the store has
// listed), and from memory otherwise, once the store has reached it.
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	if opts.ResourceVersion == "" || !s.Ready() {
		return s.config.Storage.Get(ctx, key, opts, objPtr)
	}
	rv, err := s.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return err
	}
	key, err = storage.PrepareKey(s.config.ResourcePrefix, key, false)
	if err != nil {
		return err
	}
	value, objRV, currentRV, found, err := s.getFresh(ctx, key, rv)
	if err != nil {
		return err
	}
	if !found {
		if opts.IgnoreNotFound {
			return runtime.SetZeroValue(objPtr)
		}
		return storage.NewKeyNotFoundError(key, int64(currentRV))
	}
	obj, err := s.decode(value, objRV)
	if err != nil {
		return err
	}
	out, err := conversion.EnforcePtr(objPtr)
	if err != nil {
		return err
	}
	in, err := conversion.EnforcePtr(obj)
	if err != nil {
		return err
	}
	out.Set(in)
	return nil
}

// keys are the keys of every object, once the store has reached etcd's
// current revision: what etcd's size estimation counts, as the watch
// cache gives it.
func (s *Store) keys(ctx context.Context) ([]string, error) {
	rv, err := s.config.Storage.GetCurrentResourceVersion(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.waitFreshLocked(ctx, rv); err != nil {
		return nil, err
	}
	keys := make([]string, 0, s.table.Len())
	s.table.Ascend(s.config.ResourcePrefix, "", func(key string, _ uint64, _ []byte) bool {
		keys = append(keys, strings.Clone(key))
		return true
	})
	return keys, nil
}

// getFresh is key's value once the store has reached rv, copied out of
// the table, with the store's revision.
func (s *Store) getFresh(ctx context.Context, key string, rv uint64) (value []byte, objRV, currentRV uint64, found bool, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.waitFreshLocked(ctx, rv); err != nil {
		return nil, 0, 0, false, err
	}
	value, objRV, found = s.table.Get(key)
	return bytes.Clone(value), objRV, s.rv, found, nil
}

// GetList serves what the watch cache would from memory, and delegates to
// etcd what the CacheDelegator without snapshots delegates.
func (s *Store) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if _, _, err := storage.ValidateListOptions(s.config.ResourcePrefix, s.versioner, opts); err != nil {
		return err
	}
	route, err := delegator.ShouldDelegateList(opts, delegator.CacheWithoutSnapshots{})
	if err != nil {
		return err
	}
	if route.ShouldDelegate || !s.Ready() {
		return s.config.Storage.GetList(ctx, key, opts, listObj)
	}
	listRV, err := s.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return err
	}
	if route.ConsistentRead {
		if listRV, err = s.config.Storage.GetCurrentResourceVersion(ctx); err != nil {
			return err
		}
	}
	err = s.list(ctx, key, opts, listRV, listObj)
	if route.ConsistentRead && storage.IsTooLargeResourceVersion(err) {
		return s.config.Storage.GetList(ctx, key, opts, listObj)
	}
	return err
}

// list answers a list from the table once it has reached listRV: the
// objects under key (the one at key when not recursive) that match the
// predicate, in key order, from the postings of an indexed value the
// predicate requires when there is one.
func (s *Store) list(ctx context.Context, key string, opts storage.ListOptions, listRV uint64, listObj runtime.Object) error {
	prefix, err := storage.PrepareKey(s.config.ResourcePrefix, key, opts.Recursive)
	if err != nil {
		return err
	}
	items, err := meta.GetItemsPtr(listObj)
	if err != nil {
		return err
	}
	itemsValue, err := conversion.EnforcePtr(items)
	if err != nil {
		return err
	}
	if itemsValue.Kind() != reflect.Slice {
		return fmt.Errorf("need a pointer to slice, got %v", itemsValue.Kind())
	}
	pred := opts.Predicate
	limit := pred.Limit
	if opts.ResourceVersion == "0" {
		limit = 0 // as the watch cache: a list at "0" ignores the limit
	}

	type match struct {
		key string
		obj runtime.Object
	}
	var (
		matches   []match
		hasMore   bool
		decodeErr error
		currentRV uint64
	)
	visit := func(objKey string, rv uint64, value []byte) bool {
		if limit > 0 && int64(len(matches)) >= limit {
			hasMore = true
			return false
		}
		obj, err := s.decode(value, rv)
		if err != nil {
			decodeErr = err
			return false
		}
		if !pred.Empty() {
			matched, err := pred.Matches(obj)
			if err != nil {
				decodeErr = err
				return false
			}
			if !matched {
				return true
			}
		}
		matches = append(matches, match{key: objKey, obj: obj})
		return true
	}
	var remaining int
	func() {
		s.mu.RLock()
		defer s.mu.RUnlock()
		if err = s.waitFreshLocked(ctx, listRV); err != nil {
			return
		}
		currentRV = s.rv
		s.scanLocked(ctx, prefix, opts.Recursive, pred, visit)
		if hasMore && pred.Empty() && len(matches) > 0 {
			remaining = s.table.Count(prefix, matches[len(matches)-1].key)
		}
	}()
	if err != nil {
		return err
	}
	if decodeErr != nil {
		return decodeErr
	}

	itemsValue.Set(reflect.MakeSlice(itemsValue.Type(), len(matches), len(matches)))
	for i, m := range matches {
		itemsValue.Index(i).Set(reflect.ValueOf(m.obj).Elem())
	}
	var lastKey string
	if len(matches) > 0 {
		lastKey = matches[len(matches)-1].key
	}
	continueValue, remainingItemCount, err := storage.PrepareContinueToken(lastKey, key, int64(currentRV), int64(len(matches)+remaining), hasMore, opts)
	if err != nil {
		return err
	}
	return s.versioner.UpdateList(listObj, currentRV, continueValue, remainingItemCount)
}

// scanLocked calls fn for the table's entries under prefix (the one at
// prefix when not recursive) in key order: those of the postings of an
// indexed value pred requires when there is one (it says so), every entry
// under prefix otherwise. fn decodes and filters.
func (s *Store) scanLocked(ctx context.Context, prefix string, recursive bool, pred storage.SelectionPredicate, fn func(key string, rv uint64, value []byte) bool) (indexUsed bool) {
	if !recursive {
		if value, rv, ok := s.table.Get(prefix); ok {
			fn(prefix, rv, value)
		}
		return false
	}
	underPrefix := func(key string, rv uint64, value []byte) bool {
		if !cachekey.HasPathPrefix(key, prefix) {
			return true
		}
		return fn(key, rv, value)
	}
	for _, value := range pred.MatcherIndex(ctx) {
		if s.table.Lookup(value.IndexName, value.Value, prefix, underPrefix) {
			return true
		}
	}
	s.table.Ascend(prefix, "", underPrefix)
	return false
}
