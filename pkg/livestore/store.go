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
	"k8s.io/apimachinery/pkg/util/validation/field"
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

// Config is what a Store holds and how: the cacher's configuration
// (cacher.Config), less what only the cacher uses.
type Config struct {
	// Storage is etcd: writes go through it, and so do the reads the
	// store does not serve from memory (continue tokens, exact
	// resourceVersions, reads before the store has listed).
	Storage storage.Interface
	// Feed is what the store lists and watches to stay current, and the
	// only reads that go through it; nil means Storage. Whatever observes
	// the store's changes (the history timeline) sits in Feed, apart from
	// clients' reads, as the cacher's storage beneath a CacheDelegator.
	Feed storage.Interface
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
	// value (storage.IndexerFuncs, the cacher's trigger); at most one.
	IndexerFuncs storage.IndexerFuncs
	// HistoryWindow is how long the changes are kept for watches that
	// resume from a resourceVersion (the cacher's EventsHistoryWindow); 0
	// means DefaultHistoryWindow.
	HistoryWindow time.Duration
	// HistoryBytes caps the bytes of the states those changes hold; 0
	// means DefaultHistoryBytes. The states are the table's records,
	// which the history shares: what it costs beyond the live table is
	// the records the window's changes replaced or deleted.
	HistoryBytes int
	// RelistBytes bounds the memory of the table a relist loads while the
	// old table still serves the reads that need not be fresh: once the
	// new table maps more, the old one is dropped, and every read goes to
	// etcd until the new table is complete. So a relist maps at most the
	// old table plus RelistBytes at once. 0 means DefaultRelistBytes.
	RelistBytes int64
	// ListPageSize is the page of the lists that load the store: no more
	// objects than this are decoded at once. 0 means DefaultListPageSize.
	ListPageSize int64
	// Clock is the clock of bookmarks and waits; nil means the real one.
	Clock clock.Clock
}

const (
	// DefaultHistoryWindow is the cacher's default EventsHistoryWindow.
	DefaultHistoryWindow = 75 * time.Second
	// DefaultHistoryBytes caps the states of the window's changes: 75 s
	// of 2,500 changes a second of 1 KiB states, with room.
	DefaultHistoryBytes = 256 << 20
	// DefaultRelistBytes is the memory a relist's new table may map
	// beside the old one: about 200,000 events of 1 KiB. A larger store
	// drops its old table during a relist, and serves its reads from etcd
	// until the new one is complete, rather than hold both.
	DefaultRelistBytes = 256 << 20
	// DefaultListPageSize is the page of the lists that (re)load the store.
	DefaultListPageSize = 10000
)

const (
	// freshTimeout is how long a read waits for the store to reach the
	// resourceVersion it asks for, as the cacher's blockTimeout.
	freshTimeout = 3 * time.Second
	// tooHighRetrySeconds is the Retry-After of a read that waited in vain.
	tooHighRetrySeconds = 1
	// bookmarkFrequency is how often a watcher that allows bookmarks gets
	// one, at the least (the cacher's).
	bookmarkFrequency = time.Minute
	// MaxSelectorTerms bounds the terms of a label or a field selector of
	// a list or a watch: each is matched against every candidate.
	MaxSelectorTerms = 64
)

// errNotServing says the store does not serve a read from memory now
// (not listed yet, relisting for a consistent read, or stopped): the read
// goes to etcd.
var errNotServing = errors.New("livestore: not serving from memory")

// Store is the compact live store: a storage.Interface whose writes go to
// Config.Storage and whose reads are served from a Table fed by a list and
// a watch of Config.Feed, with the cacher's semantics (the
// CacheDelegator's routing with no snapshots: an exact resourceVersion and
// a continue token are etcd's to answer).
//
// Reads take a Scan of the table under the store's read lock and decode
// and filter outside it, so that no read holds the feed back for longer
// than it takes to find where its entries are.
type Store struct {
	config    Config
	feed      storage.Interface
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
	mu    sync.RWMutex
	cond  *sync.Cond
	table *Table
	rv    uint64
	// ready says the table is loaded: reads are served from memory.
	ready bool
	// relisting says the feed broke and the table is being loaded
	// again: reads that must be fresh go to etcd, the others are served
	// from the table, which is older than etcd.
	relisting bool
	// dropped says the relist's new table outgrew Config.RelistBytes and
	// the old table was let go: every read goes to etcd until the new
	// table is in place.
	dropped  bool
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

// New starts a store over config.Feed: it lists and watches etcd through
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
	if config.HistoryWindow <= 0 {
		config.HistoryWindow = DefaultHistoryWindow
	}
	if config.RelistBytes <= 0 {
		config.RelistBytes = DefaultRelistBytes
	}
	if config.ListPageSize <= 0 {
		config.ListPageSize = DefaultListPageSize
	}
	if config.Feed == nil {
		config.Feed = config.Storage
	}
	clk, ok := config.Clock.(clock.WithTicker)
	if !ok {
		clk = clock.RealClock{}
	}
	s := &Store{
		config:    config,
		feed:      config.Feed,
		versioner: storage.APIObjectVersioner{},
		clock:     clk,
		logger:    klog.Background().WithName("livestore").WithValues("resource", config.GroupResource.String()),
		done:      make(chan struct{}),
	}
	s.watchers = newWatcherSet(config.GroupResource.String(), clk)
	s.cond = sync.NewCond(s.mu.RLocker())
	if config.Indexers != nil {
		for name, values := range *config.Indexers {
			s.indexes = append(s.indexes, storeIndex{name: name, values: values})
		}
		sort.Slice(s.indexes, func(i, j int) bool { return s.indexes[i].name < s.indexes[j].name })
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
	s.table = NewTable(s.indexNames())
	s.history = newHistory(config.HistoryWindow, config.HistoryBytes)
	s.history.reset(s.table, 0)
	metadataSource := metadata.New(map[string]string{"source": "livestore"})
	s.progress = progress.NewConditionalProgressRequester(s.feed.RequestWatchProgress, clk, metadataSource)

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

// Stop ends the store's list and watch, and every watch it serves; reads
// after it go to etcd.
func (s *Store) Stop() {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ready = false
	s.watchers.terminateAll(0)
	s.table.Close()
	s.history.close()
}

// Ready says whether the store serves reads from memory.
func (s *Store) Ready() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ready
}

// serving is whether a read is served from memory now: the store has
// listed, and a read that must be fresh does not wait for a relist.
func (s *Store) servingLocked(fresh bool) bool {
	return s.ready && !s.dropped && (!fresh || !s.relisting)
}

// errFeedBroken wraps what the store could not apply from its watch: the
// table no longer follows etcd, and must be listed again.
var errFeedBroken = errors.New("livestore: the feed cannot be applied")

// run keeps the store current until ctx ends: list, then watch from the
// store's revision; watch again from there whenever the watch ends, and
// list again only when the revision was compacted or a change could not
// be applied.
func (s *Store) run(ctx context.Context) {
	// From 100 ms, doubling to 30 s, back to 100 ms after two minutes
	// without a failure.
	delay := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 30 * time.Second}.
		DelayWithReset(s.clock, 2*time.Minute)
	listed := false
	for ctx.Err() == nil {
		var err error
		if !listed {
			if err = s.relist(ctx); err == nil {
				listed = true
				continue
			}
		} else {
			err = s.follow(ctx)
			if ctx.Err() != nil {
				return
			}
			if mustRelist(err) {
				listed = false
				s.beginRelist()
				relistsTotal.WithLabelValues(s.config.GroupResource.String()).Inc()
				s.logger.Info("Live store relisting", "err", err)
			} else {
				rewatchesTotal.WithLabelValues(s.config.GroupResource.String()).Inc()
				s.logger.V(2).Info("Live store watching again", "err", err)
			}
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil && !listed {
			s.logger.Info("Live store list failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.clock.After(delay()):
		}
	}
}

// mustRelist is whether the watch ended because the table cannot follow
// etcd from its revision any more.
func mustRelist(err error) bool {
	return errors.Is(err, errFeedBroken) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// beginRelist sends the reads that must be fresh to etcd until the table
// is loaded again: the table is behind etcd meanwhile.
func (s *Store) beginRelist() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.relisting = s.ready
}

// relist loads a new table from a paged list and puts it in place of the
// old one, which serves the reads that need not be fresh meanwhile. The
// watches served from the old table end: their clients resume from their
// last resourceVersion (410 when it is older than the list).
func (s *Store) relist(ctx context.Context) error {
	table := NewTable(s.indexNames())
	listRV, err := s.load(ctx, table)
	loadingBytesGauge.WithLabelValues(s.config.GroupResource.String()).Set(0)
	if err != nil {
		table.Close()
		return err
	}
	s.mu.Lock()
	old := s.table
	s.table = table
	s.rv = listRV
	s.ready = true
	s.relisting, s.dropped = false, false
	s.history.reset(table, listRV)
	s.watchers.terminateAll(listRV)
	objectsGauge.WithLabelValues(s.config.GroupResource.String()).Set(float64(table.Len()))
	s.cond.Broadcast()
	s.mu.Unlock()
	old.Close()
	return nil
}

// dropOldTable lets the old table go while a relist loads the new one,
// past Config.RelistBytes: the reads it served go to etcd, and the watches
// it served end (their clients resume from their last resourceVersion)
// until the new table is in place.
func (s *Store) dropOldTable() {
	s.mu.Lock()
	if !s.relisting {
		// The first list: there is no old table.
		s.mu.Unlock()
		return
	}
	old := s.table
	s.table = NewTable(s.indexNames())
	s.relisting, s.dropped = false, true
	s.history.reset(s.table, s.rv)
	s.watchers.terminateAll(s.rv)
	objectsGauge.WithLabelValues(s.config.GroupResource.String()).Set(0)
	s.cond.Broadcast()
	s.mu.Unlock()
	old.Close()
	droppedTablesTotal.WithLabelValues(s.config.GroupResource.String()).Inc()
	s.logger.Info("Live store dropped its old table during a relist: reads go to etcd until the new one is complete", "relistBytes", s.config.RelistBytes)
}

// follow applies the changes of a watch from the store's revision until
// the watch ends, and says why it ended.
func (s *Store) follow(ctx context.Context) error {
	s.mu.RLock()
	from := s.rv
	s.mu.RUnlock()
	w, err := s.feed.Watch(ctx, s.config.ResourcePrefix, storage.ListOptions{
		ResourceVersion: strconv.FormatUint(from, 10),
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

// load lists every object into table, a page at a time, at one revision,
// dropping the old table once table maps more than Config.RelistBytes.
func (s *Store) load(ctx context.Context, table *Table) (uint64, error) {
	var listRV uint64
	opts := storage.ListOptions{Recursive: true, Predicate: storage.Everything}
	opts.Predicate.Limit = s.config.ListPageSize
	bounded := false
	for {
		list := s.config.NewListFunc()
		if err := s.feed.GetList(ctx, s.config.ResourcePrefix, opts, list); err != nil {
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
			return table.Put(o.key, o.rv, o.value, o.indexValues)
		})
		if err != nil {
			return 0, err
		}
		loadingBytesGauge.WithLabelValues(s.config.GroupResource.String()).Set(float64(table.arena.mapped.Load()))
		if !bounded && table.arena.mapped.Load() > s.config.RelistBytes {
			bounded = true
			s.dropOldTable()
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

// apply applies one change of the watch to the table and the history,
// then hands it to the watchers, outside the store's lock.
func (s *Store) apply(event watch.Event) error {
	switch event.Type {
	case watch.Bookmark:
		rv, err := s.versioner.ObjectResourceVersion(event.Object)
		if err != nil {
			return fmt.Errorf("%w: %w", errFeedBroken, err)
		}
		s.mu.Lock()
		if rv > s.rv {
			s.rv = rv
		}
		rv = s.rv
		s.cond.Broadcast()
		s.mu.Unlock()
		s.watchers.progressed(s, rv)
		return nil
	case watch.Error:
		return apierrors.FromObject(event.Object)
	case watch.Added, watch.Modified, watch.Deleted:
	default:
		return fmt.Errorf("%w: unexpected watch event %q", errFeedBroken, event.Type)
	}
	c, err := s.applyLocked(event)
	if err != nil {
		return fmt.Errorf("%w: %w", errFeedBroken, err)
	}
	s.watchers.dispatch(s, c)
	return nil
}

// applyLocked applies a change to the table and the history under the
// store's lock, and returns it for the watchers.
func (s *Store) applyLocked(event watch.Event) (*change, error) {
	o, err := s.prepare(event.Object)
	if err != nil {
		return nil, err
	}
	if o.labels, o.fields, err = s.config.GetAttrsFunc(o.obj); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	epoch := s.history.begin()
	var cur, old slot
	var existed bool
	if event.Type == watch.Deleted {
		old, existed = s.table.remove(o.key)
		cur = old
	} else if cur, old, existed, err = s.table.put(o.key, o.rv, o.value, o.indexValues); err != nil {
		return nil, err
	}
	var prev *object
	if existed {
		prev = &object{key: o.key, rv: old.rv, value: bytes.Clone(s.table.recordAt(old).value)}
	}
	s.rv = o.rv
	if existed || event.Type != watch.Deleted {
		s.history.add(event.Type, o.rv, epoch, cur, old, existed, s.clock.Now())
	}
	o.value = nil // the next prepare's buffer; the watchers read obj
	objectsGauge.WithLabelValues(s.config.GroupResource.String()).Set(float64(s.table.Len()))
	s.cond.Broadcast()
	return &change{eventType: event.Type, object: o, prev: prev}, nil
}

// expireHistory lets go of the history's changes past its window.
func (s *Store) expireHistory() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.history.expire(s.clock.Now())
}

// waitFreshLocked waits, holding the read lock, until the store has
// reached rv or freshTimeout has passed.
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
		if !s.servingLocked(false) {
			return errNotServing
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
	return s.feed.RequestWatchProgress(ctx)
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

// Get reads from etcd without a resourceVersion (or while the store does
// not serve from memory), and from memory otherwise, once the store has
// reached it.
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	if opts.ResourceVersion == "" {
		return s.config.Storage.Get(ctx, key, opts, objPtr)
	}
	rv, err := s.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return err
	}
	storageKey, err := storage.PrepareKey(s.config.ResourcePrefix, key, false)
	if err != nil {
		return err
	}
	value, objRV, currentRV, found, err := s.getFresh(ctx, storageKey, rv)
	if errors.Is(err, errNotServing) {
		return s.config.Storage.Get(ctx, key, opts, objPtr)
	}
	if err != nil {
		return err
	}
	if !found {
		if opts.IgnoreNotFound {
			return runtime.SetZeroValue(objPtr)
		}
		return storage.NewKeyNotFoundError(storageKey, int64(currentRV))
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
// current revision: what etcd's size estimation counts, as the cacher
// gives it.
func (s *Store) keys(ctx context.Context) ([]string, error) {
	rv, err := s.config.Storage.GetCurrentResourceVersion(ctx)
	if err != nil {
		return nil, err
	}
	scan, err := func() (*Scan, error) {
		s.mu.RLock()
		defer s.mu.RUnlock()
		if !s.servingLocked(true) {
			return nil, errNotServing
		}
		if err := s.waitFreshLocked(ctx, rv); err != nil {
			return nil, err
		}
		return s.table.Scan(s.config.ResourcePrefix), nil
	}()
	if err != nil {
		return nil, err
	}
	defer scan.Release()
	var keys []string
	err = scan.Each(ctx, "", func(key string, _ uint64, _ []byte) bool {
		keys = append(keys, strings.Clone(key))
		return true
	})
	return keys, err
}

// getFresh is key's value once the store has reached rv, copied out of
// the table, with the store's revision.
func (s *Store) getFresh(ctx context.Context, key string, rv uint64) (value []byte, objRV, currentRV uint64, found bool, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.servingLocked(rv > s.rv) {
		return nil, 0, 0, false, errNotServing
	}
	if err := s.waitFreshLocked(ctx, rv); err != nil {
		return nil, 0, 0, false, err
	}
	value, objRV, found = s.table.Get(key)
	return bytes.Clone(value), objRV, s.rv, found, nil
}

// checkSelectors refuses selectors of more than MaxSelectorTerms terms,
// with the request's field path.
func checkSelectors(pred storage.SelectionPredicate) error {
	var errs field.ErrorList
	if pred.Label != nil {
		if requirements, _ := pred.Label.Requirements(); len(requirements) > MaxSelectorTerms {
			errs = append(errs, field.TooMany(field.NewPath("labelSelector"), len(requirements), MaxSelectorTerms))
		}
	}
	if pred.Field != nil {
		if n := len(pred.Field.Requirements()); n > MaxSelectorTerms {
			errs = append(errs, field.TooMany(field.NewPath("fieldSelector"), n, MaxSelectorTerms))
		}
	}
	if len(errs) > 0 {
		return apierrors.NewBadRequest(errs.ToAggregate().Error())
	}
	return nil
}

// GetList serves what the cacher would from memory, and delegates to etcd
// what the CacheDelegator without snapshots delegates.
func (s *Store) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if _, _, err := storage.ValidateListOptions(s.config.ResourcePrefix, s.versioner, opts); err != nil {
		return err
	}
	if err := checkSelectors(opts.Predicate); err != nil {
		return err
	}
	route, err := delegator.ShouldDelegateList(opts, delegator.CacheWithoutSnapshots{})
	if err != nil {
		return err
	}
	if route.ShouldDelegate {
		return s.config.Storage.GetList(ctx, key, opts, listObj)
	}
	listRV, err := s.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return err
	}
	if route.ConsistentRead {
		if !s.serving(true) {
			return s.config.Storage.GetList(ctx, key, opts, listObj)
		}
		if listRV, err = s.config.Storage.GetCurrentResourceVersion(ctx); err != nil {
			return etcdReadError(err)
		}
	} else if err := s.reachable(ctx, listRV); err != nil {
		return err
	}
	err = s.list(ctx, key, opts, listRV, route.ConsistentRead, listObj)
	if errors.Is(err, errNotServing) || route.ConsistentRead && storage.IsTooLargeResourceVersion(err) {
		return s.config.Storage.GetList(ctx, key, opts, listObj)
	}
	return err
}

// reachable refuses a read at a revision etcd has not reached at once,
// as kube-apiserver's etcd storage answers such a list of events (504,
// no Retry-After), rather than holding it freshTimeout for writes that
// may never come and having client-go send it again after a second. A
// revision the store has reached costs nothing; one only the store lags
// behind costs a read of etcd's revision, and then waits for the store.
func (s *Store) reachable(ctx context.Context, rv uint64) error {
	s.mu.RLock()
	reached := rv <= s.rv
	s.mu.RUnlock()
	if reached {
		return nil
	}
	current, err := s.config.Storage.GetCurrentResourceVersion(ctx)
	if err != nil || rv <= current {
		return nil // etcd away: the wait decides
	}
	return storage.NewTooLargeResourceVersionError(rv, current, 0)
}

// etcdReadError is what a read answers when it could not read etcd's
// current revision: 504 when etcd did not answer within the request's
// time (paused, partitioned), as an etcd read out of time answers.
func etcdReadError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return apierrors.NewTimeoutError(fmt.Sprintf("reading etcd's current revision: %v", err), tooHighRetrySeconds)
	}
	return err
}

// serving is servingLocked under the read lock.
func (s *Store) serving(fresh bool) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.servingLocked(fresh)
}

// scanLocked is a scan of the entries a read under prefix may select:
// those of the postings of an indexed value pred requires when there is
// one, every entry under prefix otherwise (the one at prefix, when not
// recursive, is among them). The caller filters what it decodes.
func (s *Store) scanLocked(ctx context.Context, prefix string, recursive bool, pred storage.SelectionPredicate) *Scan {
	if recursive {
		for _, value := range pred.MatcherIndex(ctx) {
			if scan, ok := s.table.ScanIndex(value.IndexName, value.Value, prefix); ok {
				return scan
			}
		}
	}
	return s.table.Scan(prefix)
}

// readScan is a read of the table: the scan, taken under the read lock
// once the store reached the read's revision, and that revision.
type readScan struct {
	scan *Scan
	rv   uint64
}

// takeScan takes a scan for a read at rv (fresh: rv is etcd's current
// revision, and the read does not wait for a relist).
func (s *Store) takeScan(ctx context.Context, prefix string, recursive bool, pred storage.SelectionPredicate, rv uint64, fresh bool) (readScan, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.servingLocked(fresh || rv > s.rv) {
		return readScan{}, errNotServing
	}
	if err := s.waitFreshLocked(ctx, rv); err != nil {
		return readScan{}, err
	}
	return readScan{scan: s.scanLocked(ctx, prefix, recursive, pred), rv: s.rv}, nil
}

// list answers a list from the table once it has reached listRV: the
// objects under key (the one at key when not recursive) that match the
// predicate, in key order. It decodes and filters outside the store's
// lock, and stops when ctx ends.
func (s *Store) list(ctx context.Context, key string, opts storage.ListOptions, listRV uint64, fresh bool, listObj runtime.Object) error {
	prefix, err := storage.PrepareKey(s.config.ResourcePrefix, key, opts.Recursive)
	if err != nil {
		return err
	}
	itemsValue, err := listItems(listObj)
	if err != nil {
		return err
	}
	pred := opts.Predicate
	limit := pred.Limit
	if opts.ResourceVersion == "0" {
		limit = 0 // as the cacher: a list at "0" ignores the limit
	}
	read, err := s.takeScan(ctx, prefix, opts.Recursive, pred, listRV, fresh)
	if err != nil {
		return err
	}
	defer read.scan.Release()

	var (
		objs      []runtime.Object
		lastKey   string
		hasMore   bool
		decodeErr error
	)
	err = read.scan.Each(ctx, "", func(objKey string, rv uint64, value []byte) bool {
		if !s.selects(objKey, prefix, opts.Recursive) {
			return opts.Recursive // past the one key of a non-recursive read
		}
		if limit > 0 && int64(len(objs)) >= limit {
			hasMore = true
			return false
		}
		obj, matched, err := s.decodeMatching(value, rv, pred)
		if err != nil {
			decodeErr = err
			return false
		}
		if matched {
			objs = append(objs, obj)
			lastKey = strings.Clone(objKey)
		}
		return true
	})
	if err == nil {
		err = decodeErr
	}
	if err != nil {
		return err
	}
	var remaining int
	if hasMore && pred.Empty() && lastKey != "" {
		remaining = read.scan.Count(lastKey)
	}
	itemsValue.Set(reflect.MakeSlice(itemsValue.Type(), len(objs), len(objs)))
	for i, obj := range objs {
		itemsValue.Index(i).Set(reflect.ValueOf(obj).Elem())
	}
	continueValue, remainingItemCount, err := storage.PrepareContinueToken(lastKey, key, int64(read.rv), int64(len(objs)+remaining), hasMore, opts)
	if err != nil {
		return err
	}
	return s.versioner.UpdateList(listObj, read.rv, continueValue, remainingItemCount)
}

// selects is whether the entry at key is under prefix, as a read of
// prefix (recursive or not) selects it.
func (s *Store) selects(key, prefix string, recursive bool) bool {
	if !recursive {
		return key == prefix
	}
	return cachekey.HasPathPrefix(key, prefix)
}

// decodeMatching decodes an entry and says whether pred selects it.
func (s *Store) decodeMatching(value []byte, rv uint64, pred storage.SelectionPredicate) (runtime.Object, bool, error) {
	obj, err := s.decode(value, rv)
	if err != nil {
		return nil, false, err
	}
	if pred.Empty() {
		return obj, true, nil
	}
	matched, err := pred.Matches(obj)
	return obj, matched, err
}

// listItems is the settable slice of a list's items.
func listItems(listObj runtime.Object) (reflect.Value, error) {
	items, err := meta.GetItemsPtr(listObj)
	if err != nil {
		return reflect.Value{}, err
	}
	itemsValue, err := conversion.EnforcePtr(items)
	if err != nil {
		return reflect.Value{}, err
	}
	if itemsValue.Kind() != reflect.Slice {
		return reflect.Value{}, fmt.Errorf("need a pointer to slice, got %v", itemsValue.Kind())
	}
	return itemsValue, nil
}
