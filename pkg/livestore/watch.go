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
)

const (
	// The input buffers of watchers: a watcher selecting on the trigger
	// gets the changes of few objects.
	triggeredWatcherBuffer = 100
	watcherBuffer          = 1000
	// resultBuffer is the buffer of a watch's result: what a stopped
	// watch still delivers, as the watch cache's.
	resultBuffer = 10
)

// change is one change of the watch as the watchers get it: the object
// after it (decoded, with its attributes) and the state before it, if
// any. A bookmark carries only its revision.
type change struct {
	eventType watch.EventType
	object    *object
	prev      *object
}

// prepared decodes the previous state of a change and reads its
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
	// store's lock.
	nextBookmark time.Time
}

// ResultChan is the watch's events.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch.
func (w *watcher) Stop() {
	w.store.mu.Lock()
	w.store.watchers.remove(w)
	w.store.mu.Unlock()
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
// watch cache's rule, by which an object that stops matching is deleted
// from the watcher's view and one that starts matching is added to it.
func (w *watcher) event(c *change) *watch.Event {
	if c.eventType == watch.Bookmark {
		return &watch.Event{Type: watch.Bookmark, Object: c.object.obj}
	}
	cur := c.eventType != watch.Deleted && w.matches(c.object.key, c.object.labels, c.object.fields)
	old := c.prev != nil && w.matches(c.prev.key, c.prev.labels, c.prev.fields)
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

// run sends the watch's initial changes, then the changes dispatched to
// it after startRV, until the watch is stopped.
func (w *watcher) run(ctx context.Context, initial []*change, startRV uint64) {
	defer close(w.result)
	defer w.Stop()
	for _, c := range initial {
		if !w.send(c) {
			return
		}
	}
	// The watch holds its API Priority and Fairness seat until it has
	// sent its initial events, as the watch cache's.
	utilflowcontrol.WatchInitialized(ctx)
	for {
		select {
		case <-w.done:
			return
		case c := <-w.input:
			if c.eventType != watch.Bookmark && c.object.rv <= startRV {
				continue // already among the initial changes
			}
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

// watcherSet is the store's watchers, those requiring a trigger value
// by that value.
type watcherSet struct {
	// watchers counts them in the metrics.
	watchers  metrics.GaugeMetric
	all       map[*watcher]struct{}
	untrigged map[*watcher]struct{}
	byTrigger map[string]map[*watcher]struct{}
}

func newWatcherSet(resource string) *watcherSet {
	return &watcherSet{
		watchers: watchersGauge.WithLabelValues(resource),
		all:      map[*watcher]struct{}{}, untrigged: map[*watcher]struct{}{}, byTrigger: map[string]map[*watcher]struct{}{},
	}
}

func (ws *watcherSet) add(w *watcher) {
	ws.all[w] = struct{}{}
	ws.watchers.Set(float64(len(ws.all)))
	if !w.triggered {
		ws.untrigged[w] = struct{}{}
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
	delete(ws.all, w)
	ws.watchers.Set(float64(len(ws.all)))
	delete(ws.untrigged, w)
	if set := ws.byTrigger[w.triggerValue]; set != nil {
		delete(set, w)
		if len(set) == 0 {
			delete(ws.byTrigger, w.triggerValue)
		}
	}
}

// terminateAll ends every watch: the table they were served from is gone.
func (ws *watcherSet) terminateAll() {
	for w := range ws.all {
		w.terminate()
		ws.remove(w)
	}
}

// dispatch hands a change to the watchers it may concern: those without
// a trigger value and those whose value is the object's, before or after
// the change. A watcher whose buffer is full is too slow to follow: it is
// ended, and its client resumes from the last revision it got.
func (ws *watcherSet) dispatch(s *Store, c *change) {
	if len(ws.all) == 0 {
		return
	}
	if err := s.preparePrev(c.prev); err != nil {
		utilruntime.HandleError(fmt.Errorf("decoding the previous state of %s: %w", c.object.key, err))
		c.prev = nil
	}
	deliver := func(w *watcher) {
		select {
		case w.input <- c:
		default:
			s.logger.V(2).Info("Ending a watcher too slow to follow", "prefix", w.prefix)
			slowWatchersTotal.WithLabelValues(s.config.GroupResource.String()).Inc()
			ws.remove(w)
			w.terminate()
		}
	}
	for w := range ws.untrigged {
		deliver(w)
	}
	if len(ws.byTrigger) == 0 || s.trigger == nil {
		return
	}
	values := s.triggerValues(c.object.obj)
	if c.prev != nil {
		for _, prev := range s.triggerValues(c.prev.obj) {
			if len(values) == 0 || values[0] != prev {
				values = append(values, prev)
			}
		}
	}
	for _, value := range values {
		for w := range ws.byTrigger[value] {
			deliver(w)
		}
	}
}

// progressed hands a bookmark at the store's revision to the watchers
// that asked for etcd's progress notifications.
func (ws *watcherSet) progressed(s *Store) {
	var bookmark *change
	for w := range ws.all {
		if !w.progressNotify {
			continue
		}
		if bookmark == nil {
			if bookmark = s.bookmark(); bookmark == nil {
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
// bookmarkFrequency and just before their deadline, as the watch cache.
func (s *Store) bookmarks(ctx context.Context) {
	ticker := s.clock.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		s.mu.Lock()
		now := s.clock.Now()
		var bookmark *change
		for w := range s.watchers.all {
			if !w.allowBookmarks || now.Before(w.nextBookmark) {
				continue
			}
			if bookmark == nil {
				if bookmark = s.bookmark(); bookmark == nil {
					break
				}
			}
			select {
			case w.input <- bookmark:
			default:
			}
			w.nextBookmark = nextBookmark(now, w.deadline)
		}
		s.mu.Unlock()
	}
}

// bookmark is a bookmark at the store's revision, nil when none can be made.
func (s *Store) bookmark() *change {
	obj := s.config.NewFunc()
	if err := s.versioner.UpdateObject(obj, s.rv); err != nil {
		utilruntime.HandleError(err)
		return nil
	}
	return &change{eventType: watch.Bookmark, object: &object{obj: obj, rv: s.rv}}
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

// Watch serves a watch from memory with the watch cache's semantics:
// without a resourceVersion or at "0" it begins with the current state
// (unless sendInitialEvents says otherwise), from a resourceVersion it
// replays the changes after it, and with sendInitialEvents it sends the
// state at least as fresh as the resourceVersion (etcd's current one when
// empty), then a bookmark marking the end of the initial events.
func (s *Store) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	if !s.Ready() {
		return s.config.Storage.Watch(ctx, key, opts)
	}
	prefix, err := storage.PrepareKey(s.config.ResourcePrefix, key, opts.Recursive)
	if err != nil {
		return nil, err
	}
	requestedRV, err := s.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	pred := opts.Predicate
	sendInitial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	requiredRV := requestedRV
	if sendInitial && opts.ResourceVersion == "" {
		if requiredRV, err = s.config.Storage.GetCurrentResourceVersion(ctx); err != nil {
			return newErrWatcher(err), nil
		}
	}
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
	if s.trigger != nil {
		for _, field := range pred.IndexFields {
			if field != s.trigger.name {
				continue
			}
			if value, ok := pred.Field.RequiresExactMatch(field); ok {
				w.triggerValue, w.triggered = value, true
				w.input = make(chan *change, triggeredWatcherBuffer)
			}
		}
	}

	var initial []*change
	var replay []historyRecord
	var startRV uint64
	err = func() error {
		s.mu.RLock()
		defer s.mu.RUnlock()
		if sendInitial {
			if err := s.waitFreshLocked(ctx, requiredRV); err != nil {
				return err
			}
		}
		startRV = s.rv
		switch {
		case sendInitial || (requestedRV == 0 && opts.SendInitialEvents == nil):
			var err error
			if initial, err = s.stateLocked(ctx, prefix, opts.Recursive, pred); err != nil {
				return err
			}
			if sendInitial && w.allowBookmarks {
				end := s.bookmark()
				if end == nil {
					return fmt.Errorf("cannot make a bookmark")
				}
				if err := storage.AnnotateInitialEventsEndBookmark(end.object.obj); err != nil {
					return err
				}
				initial = append(initial, end)
			}
		case requestedRV == 0:
			// sendInitialEvents=false at "0": from now on.
		default:
			var err error
			if replay, err = s.history.since(requestedRV); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		return newErrWatcher(err), nil
	}
	if len(replay) > 0 {
		initial = make([]*change, 0, len(replay))
		for i := range replay {
			c, err := s.replayed(&replay[i])
			if err != nil {
				return newErrWatcher(err), nil
			}
			initial = append(initial, c)
		}
		startRV = replay[len(replay)-1].rv
	}
	if requestedRV > startRV && !sendInitial {
		// A watch from a revision the store has not reached yet begins
		// after it, as the watch cache's.
		startRV = requestedRV
	}

	// Registered with the write lock: every change after the state or
	// history read above reaches the watcher's input, and those up to
	// startRV are skipped there.
	s.mu.Lock()
	if !s.ready {
		s.mu.Unlock()
		return newErrWatcher(storage.ErrStorageNotReady), nil
	}
	missed, err := s.history.since(startRV)
	if err == nil {
		for i := range missed {
			c, err := s.replayed(&missed[i])
			if err != nil {
				s.mu.Unlock()
				return newErrWatcher(err), nil
			}
			initial = append(initial, c)
		}
		if len(missed) > 0 {
			startRV = missed[len(missed)-1].rv
		}
	}
	w.nextBookmark = nextBookmark(s.clock.Now(), w.deadline)
	s.watchers.add(w)
	s.mu.Unlock()
	if err != nil {
		w.terminate()
		return newErrWatcher(err), nil
	}
	context.AfterFunc(ctx, w.Stop)
	go w.run(ctx, initial, startRV)
	return w, nil
}

// stateLocked is the current state of the objects a watch selects, as
// added changes.
func (s *Store) stateLocked(ctx context.Context, prefix string, recursive bool, pred storage.SelectionPredicate) ([]*change, error) {
	var changes []*change
	var err error
	s.scanLocked(ctx, prefix, recursive, pred, func(key string, rv uint64, value []byte) bool {
		var obj runtime.Object
		if obj, err = s.decode(value, rv); err != nil {
			return false
		}
		o := &object{obj: obj, key: key, rv: rv}
		if o.labels, o.fields, err = s.config.GetAttrsFunc(obj); err != nil {
			return false
		}
		if !pred.MatchesObjectAttributes(o.labels, o.fields) {
			return true
		}
		changes = append(changes, &change{eventType: watch.Added, object: o})
		return true
	})
	return changes, err
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

// errWatcher is a watch that ends with one error, as the watch cache
// answers a watch it cannot serve once the request is admitted.
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
