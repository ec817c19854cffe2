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
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/validation"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
)

// seriesKey is what makes events isomorphic (one series): the same
// namespace, regarding, related, action, reason, reporter and type.
type seriesKey struct {
	namespace           string
	regarding           core.ObjectReference
	related             core.ObjectReference
	action, reason      string
	reportingController string
	reportingInstance   string
	source              core.EventSource
	eventType           string
}

func seriesKeyOf(e *core.Event) seriesKey {
	key := seriesKey{
		namespace:           e.Namespace,
		regarding:           e.InvolvedObject,
		action:              e.Action,
		reason:              e.Reason,
		reportingController: e.ReportingController,
		reportingInstance:   e.ReportingInstance,
		source:              e.Source,
		eventType:           e.Type,
	}
	if e.Related != nil {
		key.related = *e.Related
	}
	return key
}

// foldedSeries is what the folder knows of one series.
type foldedSeries struct {
	mu sync.Mutex
	// creates counts the isomorphic creates of the current burst, the last
	// at lastCreate.
	creates    int
	lastCreate time.Time
	// live is the event creates are folded into, as last stored; nil until
	// a create of this burst was stored.
	live *core.Event
	// count is the number of occurrences the live event stands for,
	// lastObserved when the last was seen, pending how many of them are not
	// written yet.
	count        int32
	lastObserved time.Time
	pending      int32
	// flushArmed is true while a flush is scheduled or running; timer is
	// the scheduled one.
	flushArmed bool
	timer      clock.Timer
	lastFlush  time.Time
	// failures counts the flushes that failed in a row.
	failures int
	// finished is true once the live event's series was found Finished:
	// nothing more is folded into it.
	finished bool
}

// eventStore is what the folder writes folded occurrences through: the
// registry store, so that the strategy judges those writes too.
type eventStore interface {
	rest.Creater //nolint:misspell // the interface is named so in k8s.io/apiserver
	rest.Updater
}

// Folder folds isomorphic creates of a hot series into its live event: the
// first Folding.After creates of a burst are stored as sent; each later
// one adds an occurrence to the last stored event (its count, series.count,
// lastTimestamp, series.lastObservedTime, series.state Ongoing) in memory,
// and answers with that event as if it had been created. The folded counts
// are written to etcd at most once per FlushInterval per series, on the
// first of them straight after that interval, and when the series is
// forgotten or the server shuts down (Run, Flush). A crash loses at most
// the counts of the last interval, never an event: the first creates of a
// burst were stored before they were answered.
//
// It folds in the store's storage (foldingStorage), below the generic
// registry store: a create reaches it after the strategy prepared and
// validated it, admission validated it and its name was generated, exactly
// as a create that is stored.
type Folder struct {
	config eventpolicy.Folding
	// store is the registry store the folder is part of, set by NewREST
	// once it is complete.
	store eventStore
	clock clock.WithDelayedExecution

	mu     sync.Mutex // serializes get-or-add of series
	series *lru.Cache

	wg sync.WaitGroup
}

// newFolder returns a folder; NewREST gives it its store.
func newFolder(config eventpolicy.Folding, clk clock.WithDelayedExecution) (*Folder, error) {
	if errs := validation.ValidateFolding(config, field.NewPath("folding")); len(errs) > 0 {
		return nil, fmt.Errorf("invalid folding configuration: %w", errs.ToAggregate())
	}
	registerFoldMetrics()
	f := &Folder{config: config, clock: clk}
	// A series forgotten (least recently used, or all at shutdown) is
	// flushed now rather than at its scheduled time.
	f.series = lru.NewWithEvictionFunc(int(config.CacheSize), func(_ lru.Key, value any) {
		s := value.(*foldedSeries)
		f.wg.Go(func() {
			f.cancelFlush(s)
			f.flush(context.Background(), s)
		})
	})
	return f, nil
}

// foldable is true for creates the folder may fold: plain singletons (no
// series, no count of their own beyond one occurrence). Creates that carry a
// series or a count come from a reporter that counts itself. Dry runs never
// reach the storage.
func foldable(e *core.Event) bool {
	return e.Series == nil && e.Count <= 1
}

// foldingStorage is the events store's storage: creates of a hot series
// are folded (Folder), everything else goes to the storage it wraps.
type foldingStorage struct {
	storage.Interface
	folder *Folder
}

// Create stores a new event, or folds it into the live event of its series
// when the series is hot and answers with the live event in out. Writes of
// the server's own (InternalWriteContext) are always stored.
func (s foldingStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	event, ok := obj.(*core.Event)
	if !ok || eventregistry.IsInternalWrite(ctx) || !foldable(event) {
		return s.Interface.Create(ctx, key, obj, out, ttl)
	}
	return s.folder.create(ctx, event, out, func() error { return s.Interface.Create(ctx, key, obj, out, ttl) })
}

// create folds event into its series' live event, writing the answer into
// out, or stores it with store when the series is not hot.
func (f *Folder) create(ctx context.Context, event *core.Event, out runtime.Object, store func() error) error {
	now := f.clock.Now()
	s := f.seriesFor(seriesKeyOf(event))

	s.mu.Lock()
	if now.Sub(s.lastCreate) > f.config.Window.Duration || s.finished {
		// A new burst, or the live event was finished meanwhile: store
		// the next creates again, each becoming the live event.
		s.creates, s.finished = 0, false
	}
	s.creates++
	s.lastCreate = now
	hot := s.creates > int(f.config.After) && s.live != nil
	s.mu.Unlock()

	if !hot {
		if err := store(); err != nil {
			return err
		}
		s.mu.Lock()
		if s.pending == 0 {
			s.setLive(out.(*core.Event).DeepCopy())
		}
		s.mu.Unlock()
		return nil
	}
	answer, ok := out.(*core.Event)
	if !ok {
		return fmt.Errorf("folding into %T, not an event", out)
	}
	f.fold(ctx, s, now).DeepCopyInto(answer)
	return nil
}

// fold adds an occurrence at now to the live event of s and returns what a
// read of the live event will show once flushed.
func (f *Folder) fold(ctx context.Context, s *foldedSeries, now time.Time) *core.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	s.pending++
	if now.After(s.lastObserved) {
		s.lastObserved = now
	}
	foldedTotal.WithLabelValues(apiOf(ctx)).Inc()
	if !s.flushArmed {
		f.armFlush(s, max(f.config.FlushInterval.Duration-now.Sub(s.lastFlush), 0))
	}
	answer := s.live.DeepCopy()
	applyOccurrences(answer, s.count, s.lastObserved)
	return answer
}

// setLive makes stored the live event of s.
func (s *foldedSeries) setLive(stored *core.Event) {
	s.live = stored
	s.count = max(stored.Count, 1)
	if stored.Series != nil {
		s.count = max(s.count, stored.Series.Count)
	}
	s.lastObserved = lastObserved(stored)
}

// lastObserved is when the last occurrence of a stored event was seen.
func lastObserved(e *core.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// applyOccurrences sets the count and last observation of an event, in both
// the legacy fields and its series, which is Ongoing while folding.
func applyOccurrences(e *core.Event, count int32, last time.Time) {
	e.Count = max(e.Count, count)
	if last.After(e.LastTimestamp.Time) {
		e.LastTimestamp = metav1.NewTime(last)
	}
	if e.FirstTimestamp.IsZero() {
		e.FirstTimestamp = e.CreationTimestamp
	}
	if e.Series == nil {
		e.Series = &core.EventSeries{}
	}
	e.Series.Count = max(e.Series.Count, count)
	if last.After(e.Series.LastObservedTime.Time) {
		e.Series.LastObservedTime = metav1.NewMicroTime(last)
	}
	e.Series.State = core.EventSeriesStateOngoing
}

// maxFlushFailures is how many flushes of a series may fail in a row before
// its pending occurrences are given up (counted and logged).
const maxFlushFailures = 5

// flush writes the pending occurrences of s to its live event. A failed
// write keeps them pending for the next flush, up to maxFlushFailures.
func (f *Folder) flush(ctx context.Context, s *foldedSeries) {
	s.mu.Lock()
	live, count, last, pending := s.live, s.count, s.lastObserved, s.pending
	if pending == 0 || live == nil {
		s.flushArmed = false
		s.mu.Unlock()
		return
	}
	s.pending = 0
	s.mu.Unlock()

	stored, err := f.write(ctx, live, count, last, pending)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushArmed = false
	s.lastFlush = f.clock.Now()
	logger := klog.FromContext(ctx)
	switch {
	case err == nil:
		foldWritesTotal.WithLabelValues("written").Inc()
		s.failures = 0
		if stored.Name != live.Name {
			// The live event was finished: the occurrences went to a
			// new event, and later creates start a new burst.
			s.finished = true
		}
		observed := s.lastObserved
		s.setLive(stored)
		s.count += s.pending
		s.lastObserved = maxTime(s.lastObserved, observed)
	case s.failures+1 >= maxFlushFailures:
		foldWritesTotal.WithLabelValues("given_up").Inc()
		logger.Error(err, "Giving up folded occurrences after repeated write failures",
			"event", klog.KObj(live), "occurrences", pending, "failures", s.failures+1)
		s.failures = 0
	default:
		foldWritesTotal.WithLabelValues("error").Inc()
		logger.Error(err, "Writing folded occurrences failed; keeping them for the next flush",
			"event", klog.KObj(live), "occurrences", pending)
		s.failures++
		s.pending += pending
	}
	if s.pending > 0 {
		f.armFlush(s, f.config.FlushInterval.Duration)
	}
}

// armFlush schedules a flush of s after delay; s.mu must be held.
func (f *Folder) armFlush(s *foldedSeries, delay time.Duration) {
	s.flushArmed = true
	f.wg.Add(1)
	// The flush runs in a goroutine of its own: a fake clock calls this
	// function while holding its lock, and flush reads the clock.
	s.timer = f.clock.AfterFunc(delay, func() {
		go func() {
			defer f.wg.Done()
			f.flush(context.Background(), s)
		}()
	})
}

// cancelFlush stops the scheduled flush of s, if it has not started.
func (f *Folder) cancelFlush(s *foldedSeries) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil && s.timer.Stop() {
		s.timer = nil
		s.flushArmed = false
		f.wg.Done()
	}
}

// errSeriesFinished says that the live event's series was finished meanwhile.
var errSeriesFinished = errors.New("the series was finished meanwhile")

// write stores count and last on the live event, recreating it from live if
// it is gone (deleted or expired meanwhile). If its series was finished
// meanwhile, the pending occurrences become a new event of their own.
func (f *Folder) write(ctx context.Context, live *core.Event, count int32, last time.Time, pending int32) (*core.Event, error) {
	ctx = eventregistry.InternalWriteContext(ctx, live.Namespace, schema.GroupVersion{Version: "v1"}) // core/v1 rules let count, lastTimestamp and series move on
	update := rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, oldObj runtime.Object) (runtime.Object, error) {
		old := oldObj.(*core.Event)
		var updated *core.Event
		if old.Name == "" {
			updated = live.DeepCopy()
			updated.ResourceVersion = ""
		} else {
			updated = old.DeepCopy()
		}
		if updated.Series != nil && updated.Series.State == core.EventSeriesStateFinished {
			return nil, errSeriesFinished
		}
		applyOccurrences(updated, count, last)
		return updated, nil
	})
	obj, _, err := f.store.Update(ctx, live.Name, update, rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if errors.Is(err, errSeriesFinished) {
		return f.createContinuation(ctx, live, pending, last)
	}
	if err != nil {
		return nil, err
	}
	return obj.(*core.Event), nil
}

// createContinuation stores the occurrences folded after the live event
// was finished as a new event, named after it.
func (f *Folder) createContinuation(ctx context.Context, live *core.Event, pending int32, last time.Time) (*core.Event, error) {
	next := live.DeepCopy()
	next.ObjectMeta = metav1.ObjectMeta{
		Namespace: live.Namespace, GenerateName: generateNamePrefix(live.Name),
		Labels: live.Labels, Annotations: live.Annotations,
	}
	next.Series, next.Count = nil, 0
	next.FirstTimestamp, next.LastTimestamp = metav1.Time{}, metav1.Time{}
	if pending > 1 {
		applyOccurrences(next, pending, last)
	} else {
		next.Count = 1
		next.FirstTimestamp, next.LastTimestamp = metav1.NewTime(last), metav1.NewTime(last)
	}
	obj, err := f.store.Create(ctx, next, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*core.Event), nil
}

// generateNamePrefix is name shortened so that a generated suffix fits.
func generateNamePrefix(name string) string {
	const maxPrefix = 253 - 6
	if len(name) > maxPrefix {
		name = name[:maxPrefix]
	}
	return name + "-"
}

// flushTimeout bounds the final write of folded counts when Run ends.
const flushTimeout = 10 * time.Second

// Name is the folder's name among the server's loops.
func (*Folder) Name() string { return "event-folding" }

// Run waits for ctx to end, then writes every pending occurrence (Flush,
// within flushTimeout): the server runs it from its start and ends it
// before its store is destroyed.
func (f *Folder) Run(ctx context.Context) {
	<-ctx.Done()
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	f.Flush(flushCtx)
}

// Flush writes every pending occurrence and waits for flushes in flight,
// or for ctx to end.
func (f *Folder) Flush(ctx context.Context) {
	// Remove every series: the eviction function flushes each.
	f.series.Clear()
	done := make(chan struct{})
	go func() {
		f.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// seriesFor returns the state of a series, tracking it if it is new.
func (f *Folder) seriesFor(key seriesKey) *foldedSeries {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.series.Get(key); ok {
		return s.(*foldedSeries)
	}
	s := &foldedSeries{}
	f.series.Add(key, s)
	foldSeries.Set(float64(f.series.Len()))
	return s
}

// apiOf is the API group of the request ("core" for /api/v1), a bounded
// label value.
func apiOf(ctx context.Context) string {
	if info, ok := genericapirequest.RequestInfoFrom(ctx); ok && info.APIGroup != "" {
		return info.APIGroup
	}
	return "core"
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
