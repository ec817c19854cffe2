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
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	cachekey "k8s.io/apiserver/pkg/storage/cacher/key"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	"k8s.io/component-base/metrics"
	"k8s.io/utils/clock"
)

const (
	// The input buffers of watchers: a watcher selecting on the trigger
	// gets the changes of few objects.
	triggeredWatcherBuffer = 100
	watcherBuffer          = 1000
	// resultBuffer is the buffer of a watch's result: what a stopped
	// watch still delivers, as the cacher's.
	resultBuffer = 10
	// The dispatch budget, as the cacher's: the time the feed may wait, in
	// all, for watchers whose buffers are full before ending them,
	// refilled at refreshPerSecond up to maxDispatchBudget.
	maxDispatchBudget = 100 * time.Millisecond
	refreshPerSecond  = 50 * time.Millisecond
)

// change is one change of the watch as the watchers get it: the object
// after it (decoded, with its attributes) and the state before it, if
// any. A bookmark carries only its revision.
type change struct {
	eventType watch.EventType
	object    *object
	prev      *object
}

// preparePrev decodes the previous state of a change and reads its
// attributes, once, before the change reaches the watchers.
func (s *Store) preparePrev(prev *object) error {
	if prev == nil || prev.obj != nil {
		return nil
	}
	obj, err := s.decode(prev.value, prev.rv)
	if err != nil {
		return err
	}
	prev.obj = obj
	prev.labels, prev.fields, err = s.config.GetAttrsFunc(obj)
	return err
}

// watcher is one watch the store serves.
type watcher struct {
	store     *Store
	prefix    string
	recursive bool
	pred      storage.SelectionPredicate
	// triggerValue is the value of the trigger this watcher requires;
	// triggered says there is one.
	triggerValue string
	triggered    bool

	input  chan *change
	result chan watch.Event
	done   chan struct{}
	once   sync.Once

	allowBookmarks bool
	// progressNotify says the watcher gets a bookmark whenever etcd
	// reports the store's watch progress (storage.ListOptions.ProgressNotify),
	// as a watch of etcd does.
	progressNotify bool
	deadline       time.Time
	// nextBookmark is when the watcher is due a bookmark; guarded by the
	// watcher set's lock.
	nextBookmark time.Time
}

// ResultChan is the watch's events.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch.
func (w *watcher) Stop() {
	w.store.watchers.remove(w)
	w.terminate()
}

func (w *watcher) terminate() { w.once.Do(func() { close(w.done) }) }

// matches says whether the watcher selects an object with these
// attributes at key.
func (w *watcher) matches(key string, l labels.Set, f fields.Set) bool {
	if w.recursive {
		if !cachekey.HasPathPrefix(key, w.prefix) {
			return false
		}
	} else if key != w.prefix {
		return false
	}
	return w.pred.MatchesObjectAttributes(l, f)
}

// event is what the watcher sends for a change, nil for nothing: the
// cacher's rule, by which an object that stops matching is deleted from
// the watcher's view and one that starts matching is added to it.
func (w *watcher) event(c *change) *watch.Event {
	if c.eventType == watch.Bookmark {
		return &watch.Event{Type: watch.Bookmark, Object: c.object.obj}
	}
	cur := c.eventType != watch.Deleted && w.matches(c.object.key, c.object.labels, c.object.fields)
	old := c.prev != nil && c.prev.obj != nil && w.matches(c.prev.key, c.prev.labels, c.prev.fields)
	switch {
	case cur && !old:
		return &watch.Event{Type: watch.Added, Object: c.object.obj}
	case cur && old:
		return &watch.Event{Type: watch.Modified, Object: c.object.obj}
	case old:
		deleted := c.prev.obj.DeepCopyObject()
		if err := w.store.versioner.UpdateObject(deleted, c.object.rv); err != nil {
			utilruntime.HandleError(err)
			return nil
		}
		return &watch.Event{Type: watch.Deleted, Object: deleted}
	}
	return nil
}

// watchStart is where a watch begins, as read under the store's lock when
// it was registered: the revision it follows from, and either a scan of
// the state it begins with or the changes it replays.
type watchStart struct {
	rv     uint64
	scan   *Scan
	replay []historyRecord
	// endBookmark asks for the bookmark that ends the initial events.
	endBookmark bool
}

// run sends the watch's initial changes, then the changes dispatched to
// it after the start's revision, until the watch is stopped. Changes and
// bookmarks at or below what the watch has delivered are not sent again:
// its resourceVersions never go backwards.
func (w *watcher) run(ctx context.Context, start watchStart) {
	defer close(w.result)
	defer w.Stop()
	initial, err := w.store.initialChanges(ctx, w, start)
	if err != nil {
		w.sendError(err)
		return
	}
	for _, c := range initial {
		if !w.send(c) {
			return
		}
	}
	// The watch holds its API Priority and Fairness seat until it has
	// sent its initial events, as the cacher's.
	utilflowcontrol.WatchInitialized(ctx)
	sentRV, bookmarkRV := start.rv, uint64(0)
	if start.endBookmark {
		bookmarkRV = start.rv
	}
	for {
		select {
		case <-w.done:
			return
		case c := <-w.input:
			rv := c.object.rv
			if c.eventType == watch.Bookmark {
				if rv < sentRV || rv <= bookmarkRV {
					continue
				}
				bookmarkRV = rv
			} else if rv <= sentRV {
				continue // among the initial changes, or before the start
			}
			sentRV = rv
			if !w.send(c) {
				return
			}
		}
	}
}

func (w *watcher) send(c *change) bool {
	event := w.event(c)
	if event == nil {
		return true
	}
	select {
	case <-w.done:
		return false
	case w.result <- *event:
		return true
	}
}

func (w *watcher) sendError(err error) {
	select {
	case <-w.done:
	case w.result <- watch.Event{Type: watch.Error, Object: statusOf(err)}:
	}
}

// initialChanges are the changes a watch begins with: the state it
// selects, decoded from the start's scan (released then), ending with a
// bookmark when asked; or the history's changes after the watch's
// resourceVersion. They are decoded on the watch's goroutine, outside the
// store's lock.
func (s *Store) initialChanges(ctx context.Context, w *watcher, start watchStart) ([]*change, error) {
	var changes []*change
	if start.scan != nil {
		var decodeErr error
		err := start.scan.Each(ctx, "", func(key string, rv uint64, value []byte) bool {
			if !s.selects(key, w.prefix, w.recursive) {
				return w.recursive
			}
			c, err := s.addedChange(key, rv, value, w)
			if err != nil {
				decodeErr = err
				return false
			}
			if c != nil {
				changes = append(changes, c)
			}
			return true
		})
		start.scan.Release()
		if err == nil {
			err = decodeErr
		}
		if err != nil {
			return nil, err
		}
	}
	for i := range start.replay {
		c, err := s.replayed(&start.replay[i])
		if err != nil {
			return nil, err
		}
		changes = append(changes, c)
	}
	if start.endBookmark {
		end := s.bookmark(start.rv)
		if end == nil {
			return nil, fmt.Errorf("cannot make a bookmark")
		}
		if err := storage.AnnotateInitialEventsEndBookmark(end.object.obj); err != nil {
			return nil, err
		}
		changes = append(changes, end)
	}
	return changes, nil
}

// addedChange is the entry at key as an added change, when w selects it
// (nil otherwise). The key is copied: the change outlives the scan.
func (s *Store) addedChange(key string, rv uint64, value []byte, w *watcher) (*change, error) {
	obj, err := s.decode(value, rv)
	if err != nil {
		return nil, err
	}
	o := &object{obj: obj, rv: rv}
	if o.labels, o.fields, err = s.config.GetAttrsFunc(obj); err != nil {
		return nil, err
	}
	if !w.pred.MatchesObjectAttributes(o.labels, o.fields) {
		return nil, nil
	}
	o.key = string([]byte(key))
	return &change{eventType: watch.Added, object: o}, nil
}

// timeBudget is the time the feed may spend waiting on watchers whose
// buffers are full, refilled over time: the cacher's dispatch budget.
type timeBudget struct {
	clock  clock.Clock
	budget time.Duration
	last   time.Time
}

// take returns the budget available now, which the caller owns until it
// gives back what it did not use.
func (b *timeBudget) take() time.Duration {
	now := b.clock.Now()
	b.budget = min(b.budget+time.Duration(now.Sub(b.last).Seconds()*float64(refreshPerSecond)), maxDispatchBudget)
	b.last = now
	taken := b.budget
	b.budget = 0
	return taken
}

func (b *timeBudget) giveBack(unused time.Duration) {
	b.budget = min(b.budget+max(unused, 0), maxDispatchBudget)
}

// watcherSet is the store's watchers, those requiring a trigger value by
// that value. Changes reach them outside the store's lock, in the order
// the feed applied them.
type watcherSet struct {
	mu sync.Mutex
	// watchers counts them in the metrics.
	watchers    metrics.GaugeMetric
	resource    string
	all         map[*watcher]struct{}
	untriggered map[*watcher]struct{}
	byTrigger   map[string]map[*watcher]struct{}
	// dispatchedRV is the revision of the last change handed to every
	// watcher: the revision of the bookmarks.
	dispatchedRV uint64
	// Owned by the feed's goroutine: the dispatch budget, and the
	// watchers of the change being dispatched.
	budget  timeBudget
	targets []*watcher
}

func newWatcherSet(resource string, clk clock.Clock) *watcherSet {
	return &watcherSet{
		watchers: watchersGauge.WithLabelValues(resource),
		resource: resource,
		all:      map[*watcher]struct{}{}, untriggered: map[*watcher]struct{}{}, byTrigger: map[string]map[*watcher]struct{}{},
		budget: timeBudget{clock: clk, budget: maxDispatchBudget, last: clk.Now()},
	}
}

func (ws *watcherSet) add(w *watcher) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.all[w] = struct{}{}
	ws.watchers.Set(float64(len(ws.all)))
	if !w.triggered {
		ws.untriggered[w] = struct{}{}
		return
	}
	set := ws.byTrigger[w.triggerValue]
	if set == nil {
		set = map[*watcher]struct{}{}
		ws.byTrigger[w.triggerValue] = set
	}
	set[w] = struct{}{}
}

func (ws *watcherSet) remove(w *watcher) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.removeLocked(w)
}

func (ws *watcherSet) removeLocked(w *watcher) {
	delete(ws.all, w)
	ws.watchers.Set(float64(len(ws.all)))
	delete(ws.untriggered, w)
	if set := ws.byTrigger[w.triggerValue]; set != nil {
		delete(set, w)
		if len(set) == 0 {
			delete(ws.byTrigger, w.triggerValue)
		}
	}
}

// terminateAll ends every watch, and starts the bookmarks again from rv:
// the table they were served from is gone.
func (ws *watcherSet) terminateAll(rv uint64) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.all {
		w.terminate()
		ws.removeLocked(w)
	}
	ws.dispatchedRV = rv
}

// collect is the watchers a change may concern: those without a trigger
// value and those whose value is the object's, before or after the change.
func (ws *watcherSet) collect(s *Store, c *change) []*watcher {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	targets := ws.targets[:0]
	for w := range ws.untriggered {
		targets = append(targets, w)
	}
	if len(ws.byTrigger) > 0 && s.trigger != nil {
		values := s.triggerValues(c.object.obj)
		if c.prev != nil && c.prev.obj != nil {
			for _, prev := range s.triggerValues(c.prev.obj) {
				if len(values) == 0 || values[0] != prev {
					values = append(values, prev)
				}
			}
		}
		for _, value := range values {
			for w := range ws.byTrigger[value] {
				targets = append(targets, w)
			}
		}
	}
	ws.targets = targets
	return targets
}

// dispatch hands a change to the watchers it may concern, in the feed's
// order. A watcher whose buffer is full is waited for within the dispatch
// budget, then ended as too slow to follow: its client resumes from the
// last revision it got.
func (ws *watcherSet) dispatch(s *Store, c *change) {
	ws.mu.Lock()
	watching := len(ws.all) > 0
	ws.mu.Unlock()
	if watching {
		if err := s.preparePrev(c.prev); err != nil {
			utilruntime.HandleError(fmt.Errorf("decoding the previous state of %s: %w", c.object.key, err))
			c.prev = nil
		}
		ws.deliver(s, c, ws.collect(s, c))
	}
	ws.mu.Lock()
	ws.dispatchedRV = c.object.rv
	ws.mu.Unlock()
}

func (ws *watcherSet) deliver(s *Store, c *change, targets []*watcher) {
	var blocked []*watcher
	for _, w := range targets {
		select {
		case w.input <- c:
		case <-w.done:
		default:
			blocked = append(blocked, w)
		}
	}
	if len(blocked) == 0 {
		return
	}
	budget := ws.budget.take()
	started := s.clock.Now()
	timer := s.clock.NewTimer(budget)
	defer timer.Stop()
	expired := false
	for _, w := range blocked {
		if !expired {
			select {
			case w.input <- c:
				continue
			case <-w.done:
				continue
			case <-timer.C():
				expired = true
			}
		}
		select {
		case w.input <- c:
			continue
		case <-w.done:
			continue
		default:
		}
		s.logger.V(2).Info("Ending a watcher too slow to follow", "prefix", w.prefix)
		slowWatchersTotal.WithLabelValues(ws.resource).Inc()
		w.Stop()
	}
	ws.budget.giveBack(budget - s.clock.Since(started))
}

// progressed hands a bookmark at rv, which every change up to it has
// reached, to the watchers that asked for etcd's progress notifications.
func (ws *watcherSet) progressed(s *Store, rv uint64) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.dispatchedRV = max(ws.dispatchedRV, rv)
	var bookmark *change
	for w := range ws.all {
		if !w.progressNotify {
			continue
		}
		if bookmark == nil {
			if bookmark = s.bookmark(ws.dispatchedRV); bookmark == nil {
				return
			}
		}
		select {
		case w.input <- bookmark:
		default:
		}
	}
}

func (s *Store) triggerValues(obj runtime.Object) []string {
	values, err := s.trigger.values(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return nil
	}
	return values
}

// bookmarks sends the watchers that allow them a bookmark at least every
// bookmarkFrequency and just before their deadline, as the cacher, at the
// revision every change has reached them up to.
func (s *Store) bookmarks(ctx context.Context) {
	ticker := s.clock.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		s.watchers.sendBookmarks(s)
		s.expireHistory()
	}
}

func (ws *watcherSet) sendBookmarks(s *Store) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	now := s.clock.Now()
	var bookmark *change
	for w := range ws.all {
		if !w.allowBookmarks || now.Before(w.nextBookmark) {
			continue
		}
		if bookmark == nil {
			if bookmark = s.bookmark(ws.dispatchedRV); bookmark == nil {
				return
			}
		}
		select {
		case w.input <- bookmark:
		default:
		}
		w.nextBookmark = nextBookmark(now, w.deadline)
	}
}

// bookmark is a bookmark at rv, nil when none can be made.
func (s *Store) bookmark(rv uint64) *change {
	obj := s.config.NewFunc()
	if err := s.versioner.UpdateObject(obj, rv); err != nil {
		utilruntime.HandleError(err)
		return nil
	}
	return &change{eventType: watch.Bookmark, object: &object{obj: obj, rv: rv}}
}

// nextBookmark is when a watcher with deadline is due its next bookmark:
// in bookmarkFrequency, or two seconds before its deadline if that comes
// first (never, past it).
func nextBookmark(now, deadline time.Time) time.Time {
	next := now.Add(bookmarkFrequency)
	if deadline.IsZero() {
		return next
	}
	if before := deadline.Add(-2 * time.Second); before.Before(next) {
		if before.Before(now) {
			return deadline.Add(time.Hour) // past: none
		}
		return before
	}
	return next
}

// Watch serves a watch from memory with the cacher's semantics: without a
// resourceVersion or at "0" it begins with the current state (unless
// sendInitialEvents says otherwise), from a resourceVersion it replays
// the changes after it, and with sendInitialEvents it sends the state at
// least as fresh as the resourceVersion (etcd's current one when empty),
// then a bookmark marking the end of the initial events. While the store
// does not serve from memory, etcd serves the watch.
func (s *Store) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	if err := checkSelectors(opts.Predicate); err != nil {
		return nil, err
	}
	prefix, err := storage.PrepareKey(s.config.ResourcePrefix, key, opts.Recursive)
	if err != nil {
		return nil, err
	}
	requestedRV, err := s.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	sendInitial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	requiredRV := requestedRV
	if sendInitial && opts.ResourceVersion == "" {
		if requiredRV, err = s.config.Storage.GetCurrentResourceVersion(ctx); err != nil {
			return newErrWatcher(etcdReadError(err)), nil
		}
	}
	w := s.newWatcher(ctx, prefix, opts)
	start, err := s.register(ctx, w, opts, requestedRV, requiredRV)
	if errors.Is(err, errNotServing) {
		return s.config.Storage.Watch(ctx, key, opts)
	}
	if err != nil {
		return newErrWatcher(err), nil
	}
	context.AfterFunc(ctx, w.Stop)
	go w.run(ctx, start)
	return w, nil
}

// newWatcher is a watcher of prefix as opts select, not yet registered.
func (s *Store) newWatcher(ctx context.Context, prefix string, opts storage.ListOptions) *watcher {
	pred := opts.Predicate
	w := &watcher{
		store:          s,
		prefix:         prefix,
		recursive:      opts.Recursive,
		pred:           pred,
		input:          make(chan *change, watcherBuffer),
		result:         make(chan watch.Event, resultBuffer),
		done:           make(chan struct{}),
		allowBookmarks: pred.AllowWatchBookmarks,
		progressNotify: opts.ProgressNotify,
	}
	w.deadline, _ = ctx.Deadline()
	if s.trigger == nil {
		return w
	}
	for _, field := range pred.IndexFields {
		if field != s.trigger.name {
			continue
		}
		if value, ok := pred.Field.RequiresExactMatch(field); ok {
			w.triggerValue, w.triggered = value, true
			w.input = make(chan *change, triggeredWatcherBuffer)
		}
	}
	return w
}

// register reads where a watch begins and adds its watcher to the set,
// under the store's read lock, which the feed's changes wait for: every
// change after the start reaches the watcher, and those up to it are in
// the scan or the replay.
func (s *Store) register(ctx context.Context, w *watcher, opts storage.ListOptions, requestedRV, requiredRV uint64) (watchStart, error) {
	sendInitial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.servingLocked(true) {
		return watchStart{}, errNotServing
	}
	if sendInitial {
		if err := s.waitFreshLocked(ctx, requiredRV); err != nil {
			return watchStart{}, err
		}
	}
	start := watchStart{rv: s.rv}
	switch {
	case sendInitial || (requestedRV == 0 && opts.SendInitialEvents == nil):
		start.scan = s.scanLocked(ctx, w.prefix, w.recursive, w.pred)
		start.endBookmark = sendInitial && w.allowBookmarks
	case requestedRV == 0:
		// sendInitialEvents=false at "0": from now on.
	case requestedRV > s.rv:
		// A watch from a revision the store has not reached yet begins
		// after it, as the cacher's.
		start.rv = requestedRV
	default:
		var err error
		if start.replay, err = s.history.since(requestedRV); err != nil {
			return watchStart{}, err
		}
	}
	w.nextBookmark = nextBookmark(s.clock.Now(), w.deadline)
	s.watchers.add(w)
	return start, nil
}

// replayed is a change of the history, decoded.
func (s *Store) replayed(r *historyRecord) (*change, error) {
	c := &change{eventType: r.eventType, object: &object{key: r.key, rv: r.rv, value: r.value}}
	obj, err := s.decode(r.value, r.rv)
	if err != nil {
		return nil, err
	}
	c.object.obj = obj
	if c.object.labels, c.object.fields, err = s.config.GetAttrsFunc(obj); err != nil {
		return nil, err
	}
	if r.prevValue != nil {
		c.prev = &object{key: r.key, rv: r.prevRV, value: r.prevValue}
		if err := s.preparePrev(c.prev); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// errWatcher is a watch that ends with one error, as the cacher answers a
// watch it cannot serve once the request is admitted.
type errWatcher struct{ result chan watch.Event }

func newErrWatcher(err error) *errWatcher {
	w := &errWatcher{result: make(chan watch.Event, 1)}
	w.result <- watch.Event{Type: watch.Error, Object: statusOf(err)}
	close(w.result)
	return w
}

func (w *errWatcher) ResultChan() <-chan watch.Event { return w.result }
func (w *errWatcher) Stop()                          {}

// statusOf is the Status an error watch event carries.
func statusOf(err error) runtime.Object {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		return &s
	}
	return &metav1.Status{
		Status:  metav1.StatusFailure,
		Message: err.Error(),
		Reason:  metav1.StatusReasonInternalError,
		Code:    http.StatusInternalServerError,
	}
}
