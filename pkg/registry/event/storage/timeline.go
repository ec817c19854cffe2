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
	"cmp"
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

// Timeline orders the live events by their last observation (core.LastObserved),
// newest first, in each namespace and across namespaces, so that a page of
// history reads the live events of its page instead of every live event
// that matches (pkg/registry/event/history).
//
// It is fed beneath the store's cache (the compact live store or the watch
// cache), by the list and the watch the cache reads etcd with
// (Options.Timeline): every change reaches the timeline before the cache, so
// once the cache has answered a consistent read at revision R, the
// timeline holds every change up to R. Over the watch
// cache it keeps the objects the watch delivers, which the watch cache keeps
// too (no copy); for an event the cache's list read and nothing changed since,
// and for every event over the compact live store (which keeps bytes), it
// keeps the order alone and reads the object from the store when a page
// needs it.
type Timeline struct {
	mu          sync.RWMutex
	byName      map[types.NamespacedName]*timelineEntry
	all         *btree.BTreeG[*timelineEntry]
	byNamespace map[string]*btree.BTreeG[*timelineEntry]
	// listing holds the pages of the store cache's list under way, committed
	// when its last page arrives.
	listing   []*timelineEntry
	listingRV uint64
	// fetch reads from the store's cache an event the timeline holds the
	// order of only; etcd is the storage beneath the cache, whose
	// revision Sync waits for. Both set by the store cache (pipeline.storeCache).
	fetch fetchFunc
	etcd  storage.Interface
	// cloneMu serializes the clones of the trees that Newest walks.
	cloneMu sync.Mutex
	// keepWatched says the timeline keeps the events the watch delivers:
	// the watch cache flavor keeps them too, and a fetch would cost a copy. The
	// compact live store keeps bytes: the timeline keeps the order alone,
	// and fetches.
	keepWatched bool
	// fed says a store cache feeds the timeline.
	fed atomic.Bool
	// resourceVersion is the newest revision the timeline has seen (of an
	// event, a bookmark or a list); advanced is closed, and replaced, when
	// it grows.
	resourceVersion uint64
	advanced        chan struct{}
}

// timelineEntry is one live event's place in the timeline.
type timelineEntry struct {
	name     types.NamespacedName
	uid      types.UID
	observed time.Time
	// resourceVersion is that of the state the entry orders.
	resourceVersion uint64
	// event is that state, as the watch delivered it; nil for a state the
	// store cache's list read (fetch reads it).
	event *core.Event
}

// timelineDegree is the B-trees' degree, as the watch cache's.
const timelineDegree = 32

// newestFirst orders entries by last observation, newest first, then by
// UID and name, as history pages are ordered.
func newestFirst(a, b *timelineEntry) bool {
	if c := b.observed.Compare(a.observed); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(a.uid, b.uid); c != 0 {
		return c < 0
	}
	return cmp.Or(cmp.Compare(a.name.Namespace, b.name.Namespace), cmp.Compare(a.name.Name, b.name.Name)) < 0
}

// NewTimeline returns an empty timeline; the store's cache feeds it
// (Options.Timeline).
func NewTimeline() *Timeline {
	t := &Timeline{advanced: make(chan struct{})}
	t.reset(nil)
	return t
}

func (t *Timeline) reset(entries []*timelineEntry) {
	t.byName = make(map[types.NamespacedName]*timelineEntry, len(entries))
	t.all = btree.NewG(timelineDegree, newestFirst)
	t.byNamespace = map[string]*btree.BTreeG[*timelineEntry]{}
	for _, e := range entries {
		t.put(e)
	}
}

func newTimelineEntry(event *core.Event, keep bool) (*timelineEntry, error) {
	rv, err := strconv.ParseUint(event.ResourceVersion, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("event %s/%s: resourceVersion %q: %w", event.Namespace, event.Name, event.ResourceVersion, err)
	}
	e := &timelineEntry{
		name:            types.NamespacedName{Namespace: event.Namespace, Name: event.Name},
		uid:             event.UID,
		observed:        core.LastObserved(event),
		resourceVersion: rv,
	}
	if keep {
		e.event = event
	}
	return e, nil
}

// put places e, in place of the entry of the same name.
func (t *Timeline) put(e *timelineEntry) {
	t.remove(e.name)
	t.byName[e.name] = e
	t.all.ReplaceOrInsert(e)
	tree := t.byNamespace[e.name.Namespace]
	if tree == nil {
		tree = btree.NewG(timelineDegree, newestFirst)
		t.byNamespace[e.name.Namespace] = tree
	}
	tree.ReplaceOrInsert(e)
}

func (t *Timeline) remove(name types.NamespacedName) {
	old, ok := t.byName[name]
	if !ok {
		return
	}
	delete(t.byName, name)
	t.all.Delete(old)
	if tree := t.byNamespace[name.Namespace]; tree != nil {
		tree.Delete(old)
		if tree.Len() == 0 {
			delete(t.byNamespace, name.Namespace)
		}
	}
}

// listed takes a page of the store cache's list: first says it is the list's
// first page; the list's last page (no continue) commits it, in place of
// everything the timeline held.
func (t *Timeline) listed(first bool, list *core.EventList) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if first {
		t.listing, t.listingRV = nil, 0
	}
	for i := range list.Items {
		// Not kept: the store's cache holds the listed events, and
		// keeping the list's would hold a second copy of each.
		e, err := newTimelineEntry(&list.Items[i], false)
		if err != nil {
			return err
		}
		t.listing = append(t.listing, e)
	}
	if list.Continue == "" {
		rv, err := strconv.ParseUint(list.ResourceVersion, 10, 64)
		if err != nil {
			return fmt.Errorf("list resourceVersion %q: %w", list.ResourceVersion, err)
		}
		t.reset(t.listing)
		t.listing = nil
		t.advance(rv)
	}
	return nil
}

// advance records that the timeline holds every change up to rv; t.mu is
// held.
func (t *Timeline) advance(rv uint64) {
	if rv <= t.resourceVersion {
		return
	}
	t.resourceVersion = rv
	close(t.advanced)
	t.advanced = make(chan struct{})
}

// Sync waits, at most within, until the timeline holds every change etcd
// had when Sync was called (what a consistent list reads), and returns
// that revision; false if the timeline did not catch up in time (the watch
// cache is not watching: starting, relisting).
func (t *Timeline) Sync(ctx context.Context, within time.Duration) (string, bool, error) {
	t.mu.RLock()
	etcd := t.etcd
	t.mu.RUnlock()
	if etcd == nil {
		return "", false, nil
	}
	rv, err := etcd.GetCurrentResourceVersion(ctx)
	if err != nil {
		return "", false, err
	}
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	// Writes to other keys (leases, the compactor's) move the revision
	// and no event: etcd's progress notification on the watch tells the
	// timeline, as it tells the store's cache, that nothing is left to wait for.
	progress := time.NewTicker(progressInterval)
	defer progress.Stop()
	for {
		t.mu.RLock()
		reached, advanced := t.resourceVersion >= rv, t.advanced
		t.mu.RUnlock()
		if reached {
			return strconv.FormatUint(rv, 10), true, nil
		}
		select {
		case <-advanced:
		case <-progress.C:
			if err := etcd.RequestWatchProgress(ctx); err != nil {
				return "", false, err
			}
		case <-deadline.C:
			return "", false, nil
		case <-ctx.Done():
			return "", false, ctx.Err()
		}
	}
}

// progressInterval is how long Sync waits for a change before it asks etcd
// for a progress notification.
const progressInterval = 10 * time.Millisecond

// observe applies an event of the store cache's watch.
func (t *Timeline) observe(event watch.Event) {
	obj := event.Object
	if timed, ok := obj.(storage.WatchEventWithRecordTime); ok {
		obj = timed.Unwrap() // as the store's cache unwraps it
	}
	ev, ok := obj.(*core.Event)
	if !ok {
		return // an error
	}
	rv, err := strconv.ParseUint(ev.ResourceVersion, 10, 64)
	if err != nil {
		return // the store cache's error too
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch event.Type {
	case watch.Added, watch.Modified:
		e, _ := newTimelineEntry(ev, t.keepWatched) // rv parsed above
		t.put(e)
	case watch.Deleted:
		t.remove(types.NamespacedName{Namespace: ev.Namespace, Name: ev.Name})
	}
	t.advance(rv) // bookmarks too
}

// Position is a place in the timeline's order: what comes after it is
// observed before Time, or at Time with a UID that sorts after UID.
type Position struct {
	Time time.Time
	UID  string
}

// Newest calls visit with the live events of namespace ("" for every
// namespace) after from in the timeline's order (newest first), until
// visit returns false or no event is left. The events are read-only.
// Newest walks the timeline as it was when called, without holding the
// lock the feed needs, so a caller that made the store answer a consistent
// read first sees every change up to that read.
func (t *Timeline) Newest(ctx context.Context, namespace string, from Position, visit func(*core.Event) bool) error {
	tree, fetch := t.snapshot(namespace)
	if tree == nil {
		return nil
	}
	pivot := &timelineEntry{observed: from.Time, uid: types.UID(from.UID)}
	var err error
	tree.AscendGreaterOrEqual(pivot, func(e *timelineEntry) bool {
		if e.observed.Equal(from.Time) && string(e.uid) == from.UID {
			return true // from itself
		}
		var event *core.Event
		if event, err = eventOf(ctx, fetch, e); err != nil {
			return false
		}
		return visit(event)
	})
	return err
}

// snapshot is a copy of the timeline of namespace ("" for every
// namespace), which the feed does not change: Newest reads the events it
// orders without the timeline's lock, which the feed needs.
func (t *Timeline) snapshot(namespace string) (*btree.BTreeG[*timelineEntry], fetchFunc) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	tree := t.all
	if namespace != "" {
		if tree = t.byNamespace[namespace]; tree == nil {
			return nil, nil
		}
	}
	// Cloning marks the tree's nodes shared: a reader's clone races
	// another's, not the feed's changes, which wait for the write lock.
	t.cloneMu.Lock()
	defer t.cloneMu.Unlock()
	return tree.Clone(), t.fetch
}

// Get returns the live event of that name, or nil: read-only.
func (t *Timeline) Get(ctx context.Context, name types.NamespacedName) (*core.Event, error) {
	t.mu.RLock()
	e, ok := t.byName[name]
	fetch := t.fetch
	t.mu.RUnlock()
	if !ok {
		return nil, nil
	}
	return eventOf(ctx, fetch, e)
}

// fetchFunc reads an event the timeline orders the state of, at that
// state's resourceVersion.
type fetchFunc func(ctx context.Context, name types.NamespacedName, resourceVersion string) (*core.Event, error)

func (t *Timeline) feed(etcd storage.Interface, fetch fetchFunc, keepWatched bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.etcd, t.fetch, t.keepWatched = etcd, fetch, keepWatched
}

// eventOf is e's state: the one the entry holds, or the one fetch reads.
func eventOf(ctx context.Context, fetch fetchFunc, e *timelineEntry) (*core.Event, error) {
	if e.event != nil {
		return e.event, nil
	}
	if fetch == nil {
		return nil, fmt.Errorf("event %s: the timeline has no store to read it from", e.name)
	}
	rv := strconv.FormatUint(e.resourceVersion, 10)
	event, err := fetch(ctx, e.name, rv)
	if err != nil {
		return nil, fmt.Errorf("reading event %s from the store: %w", e.name, err)
	}
	if event.UID != e.uid || event.ResourceVersion != rv {
		return nil, fmt.Errorf("event %s: the store holds resourceVersion %s, the timeline %s", e.name, event.ResourceVersion, rv)
	}
	return event, nil
}

// Fed says whether a store cache feeds the timeline: without one it stays
// empty, and the live events are the store's list.
func (t *Timeline) Fed() bool { return t.fed.Load() }

// Len is how many live events the timeline orders.
func (t *Timeline) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.byName)
}
