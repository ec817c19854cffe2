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
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corevalidation "github.com/kube-events/events-apiserver/pkg/apis/core/validation"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/validation"
	"github.com/kube-events/events-apiserver/pkg/recorder/seriesid"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
)

// seriesKey is what the folder joins creates by: one series (see
// validation.SeriesKey) written by one user, so that a create never
// changes an event another user wrote.
type seriesKey struct {
	series seriesid.Key
	user   string
}

// seriesKeyOf is the key of event's series, as validation and the
// recorder have it.
func seriesKeyOf(e *core.Event) seriesid.Key { return corevalidation.SeriesKey(e) }

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
	// finished is true once the live event's series was found Finished:
	// nothing more is folded into it.
	finished bool
	// batch holds the folded creates waiting for the next write; nil when
	// none waits.
	batch *foldBatch
	// armed is true while a write is scheduled or in flight (one at a
	// time); timer is the scheduled one, lastWrite when the last started.
	armed     bool
	timer     clock.Timer
	lastWrite time.Time
}

// foldBatch is the folded creates of one series that one write stores:
// their number and the last of their times. done is closed once the write
// ended, with the event as it stored it or its error.
type foldBatch struct {
	// first is the batch's first create as sent: stored in place of the
	// live event if that is gone (deleted or expired).
	first       *core.Event
	occurrences int32
	last        time.Time
	done        chan struct{}
	stored      *core.Event
	err         error
}

// eventStore is what the folder writes folded occurrences through: the
// registry store, so that the strategy judges those writes too.
type eventStore interface {
	rest.Creater //nolint:misspell // the interface is named so in k8s.io/apiserver
	rest.Updater
}

// Folder folds isomorphic creates of a hot series into its live event: the
// first Folding.After creates of a burst are stored as sent; each later one
// adds an occurrence to the last stored event (its count, series.count,
// lastTimestamp, series.lastObservedTime, series.state Ongoing).
//
// Folding is a group commit: the folded creates of a series that arrive
// while its previous write is in flight or within the window
// (Folding.FlushInterval, at most eventpolicy.MaxFoldFlushInterval) after
// it started are written together, in one update of the live event, and
// each is answered only once that write succeeded, with the event as it
// stored it. A failed write answers each of its creates with an error
// (503 and a Retry-After unless the storage's error asks for a retry
// itself), so nothing is acknowledged that is not in etcd, and a crash
// loses no acknowledged occurrence. A series has one write in flight at a
// time, and one a window at most; every write has a deadline
// (foldWriteTimeout). A series forgotten (least recently used, or all of
// them when Run ends) has its waiting creates written at once.
//
// It folds above the generic registry store (REST.Create), at the last
// step of a create's validation: a create reaches it after the strategy
// prepared and validated it, admission validated it and its name was
// generated, exactly as a create that is stored; and the folder writes
// through the events store (REST, as an in-process writer), so that the
// strategy judges its writes and resolves their chains too.
type Folder struct {
	config eventpolicy.Folding
	// window is the group-commit window: FlushInterval, at most
	// MaxFoldFlushInterval.
	window time.Duration
	// store is the events store the folder writes through, given when
	// the folder is made.
	store eventStore
	clock clock.WithDelayedExecution

	mu     sync.Mutex // serializes get-or-add of series
	series *lru.Cache

	// wg counts the writes scheduled or in flight, waiting the folded
	// creates waiting for them.
	wg      sync.WaitGroup
	waiting atomic.Int32
}

// newFolder returns a folder that writes through store.
func newFolder(config eventpolicy.Folding, store eventStore, clk clock.WithDelayedExecution) (*Folder, error) {
	if errs := validation.ValidateFolding(config, field.NewPath("folding")); len(errs) > 0 {
		return nil, fmt.Errorf("invalid folding configuration: %w", errs.ToAggregate())
	}
	registerFoldMetrics()
	f := &Folder{config: config, window: min(config.FlushInterval.Duration, eventpolicy.MaxFoldFlushInterval), store: store, clock: clk}
	// A series forgotten (least recently used, or all at shutdown) has
	// its waiting creates written now rather than at the end of its
	// window.
	f.series = lru.NewWithEvictionFunc(int(config.CacheSize), func(_ lru.Key, value any) {
		f.writeNow(value.(*foldedSeries))
	})
	return f, nil
}

// foldable is true for creates the folder may fold: plain singletons (no
// series, no count of their own beyond one occurrence). Creates that carry a
// series or a count come from a reporter that counts itself. Dry runs are
// never folded (REST.create).
func foldable(e *core.Event) bool {
	return e.Series == nil && e.Count <= 1
}

// folds says whether the folder may fold a create of event under ctx:
// a foldable event, not written by the server itself
// (InternalWriteContext: the folder's own writes among them).
func (*Folder) folds(ctx context.Context, event *core.Event) bool {
	return foldable(event) && !eventregistry.IsInternalWrite(ctx)
}

// foldCreate is what the folder made of one create: a create to store
// (batch nil), which becomes its series' live event once stored, or one
// folded into batch, answered once batch is written.
type foldCreate struct {
	series *foldedSeries
	batch  *foldBatch
	start  time.Time
}

// admit counts a create of event in its series' burst and says whether it
// is stored or folded: the first Folding.After creates of a burst are
// stored, and so is every create while the series has no live event.
func (f *Folder) admit(ctx context.Context, event *core.Event) foldCreate {
	now := f.clock.Now()
	s := f.seriesFor(seriesKey{series: seriesKeyOf(event), user: userOf(ctx)})

	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.lastCreate) > f.config.Window.Duration || s.finished {
		// A new burst, or the live event was finished meanwhile: store
		// the next creates again, each becoming the live event.
		s.creates, s.finished = 0, false
	}
	s.creates++
	s.lastCreate = now
	if s.creates <= int(f.config.After) || s.live == nil {
		return foldCreate{series: s, start: now}
	}
	b := s.batch
	if b == nil {
		b = &foldBatch{first: event.DeepCopy(), done: make(chan struct{})}
		s.batch = b
	}
	b.occurrences++
	b.last = maxTime(b.last, now)
	f.schedule(s)
	f.waiting.Add(1)
	return foldCreate{series: s, batch: b, start: now}
}

// stored makes created, which a create the folder did not fold stored,
// its series' live event, unless a write of the previous live event is
// coming.
func (f *Folder) stored(c foldCreate, created *core.Event) {
	c.series.mu.Lock()
	defer c.series.mu.Unlock()
	if !c.series.armed {
		c.series.live = created.DeepCopy()
	}
}

// wait answers a folded create once the write that holds it ended: with
// the event as that write stored it, or its error.
func (f *Folder) wait(ctx context.Context, c foldCreate) (*core.Event, error) {
	defer f.waiting.Add(-1)
	select {
	case <-c.batch.done:
	case <-ctx.Done():
		foldWaitSeconds.Observe(f.clock.Since(c.start).Seconds())
		return nil, apierrors.NewTimeoutError(fmt.Sprintf("the request ended before the write of its folded occurrence did (it may still be counted): %v", ctx.Err()), 1)
	}
	foldWaitSeconds.Observe(f.clock.Since(c.start).Seconds())
	if c.batch.err != nil {
		return nil, c.batch.err
	}
	foldedTotal.WithLabelValues(apiOf(ctx)).Inc()
	return c.batch.stored.DeepCopy(), nil
}

// schedule arms the next write of s unless one is scheduled or in flight
// (that one schedules the next when it ends): at once if the last write
// started a window ago or more, else at the end of the window. s.mu must be
// held.
func (f *Folder) schedule(s *foldedSeries) {
	if s.armed {
		return
	}
	s.armed = true
	f.wg.Add(1)
	delay := f.window - f.clock.Since(s.lastWrite)
	if delay <= 0 {
		go f.writeBatch(s)
		return
	}
	// The write runs in a goroutine of its own: a fake clock calls this
	// function while holding its lock, and writeBatch reads the clock.
	s.timer = f.clock.AfterFunc(delay, func() { go f.writeBatch(s) })
}

// writeNow starts the scheduled write of s at once, if it has not started.
func (f *Folder) writeNow(s *foldedSeries) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil && s.timer.Stop() {
		s.timer = nil
		go f.writeBatch(s)
	}
}

// foldWriteTimeout bounds each write of folded occurrences.
const foldWriteTimeout = 10 * time.Second

// writeBatch writes the batch of s to its live event, answers the batch's
// creates and schedules the next write if more creates wait.
func (f *Folder) writeBatch(s *foldedSeries) {
	defer f.wg.Done()
	s.mu.Lock()
	b, live := s.batch, s.live
	s.batch, s.timer = nil, nil
	s.lastWrite = f.clock.Now()
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), foldWriteTimeout)
	defer cancel()
	stored, finished, err := f.write(ctx, live, b)
	if err == nil {
		foldWritesTotal.WithLabelValues("written").Inc()
	} else {
		foldWritesTotal.WithLabelValues("error").Inc()
		klog.FromContext(ctx).Error(err, "Writing folded occurrences failed; their creates are answered with an error",
			"event", klog.KObj(live), "occurrences", b.occurrences)
		err = writeFailed(live, err)
	}

	s.mu.Lock()
	if err == nil {
		// The live event was finished: the occurrences went to a new
		// event, and later creates start a new burst.
		s.finished = finished
		s.live = stored
	}
	s.armed = false
	if s.batch != nil {
		f.schedule(s)
	}
	s.mu.Unlock()
	b.stored, b.err = stored, err
	close(b.done)
}

// writeFailed is the answer to the creates of a failed write: the storage's
// error when it asks for a retry itself (etcd out of space: 503 with a
// Retry-After), else 503 with a Retry-After: nothing they reported was
// stored, and the same create may succeed later. client-go retries both.
func writeFailed(live *core.Event, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil && status.Status().Details.RetryAfterSeconds > 0 {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusServiceUnavailable,
		Reason:  metav1.StatusReasonServiceUnavailable,
		Message: fmt.Sprintf("the write of folded occurrences into event %s/%s failed, retry later: %v", live.Namespace, live.Name, err),
		Details: &metav1.StatusDetails{Kind: "events", RetryAfterSeconds: foldRetryAfterSeconds},
	}}
}

// foldRetryAfterSeconds is the Retry-After of a create whose folded write
// failed.
const foldRetryAfterSeconds = 1

// addOccurrences adds n occurrences, the last at last, to an event: its
// count in both the legacy fields and its series, which is Ongoing while
// folding, and its last observation, which never goes back.
func addOccurrences(e *core.Event, n int32, last time.Time) {
	count := core.Occurrences(e) + n
	last = maxTime(last, core.LastObserved(e))
	e.Count = count
	e.LastTimestamp = metav1.NewTime(last)
	if e.FirstTimestamp.IsZero() {
		e.FirstTimestamp = e.CreationTimestamp
	}
	if e.Series == nil {
		e.Series = &core.EventSeries{}
	}
	e.Series.Count = count
	e.Series.LastObservedTime = metav1.NewMicroTime(last)
	e.Series.State = core.EventSeriesStateOngoing
}

// errSeriesFinished says that the live event's series was finished meanwhile.
var errSeriesFinished = errors.New("the series was finished meanwhile")

// errLiveGone says that the live event was deleted (or expired) meanwhile.
var errLiveGone = errors.New("the live event is gone")

// write adds the batch's occurrences to the live event as stored. If its
// series was finished meanwhile, they become a new event of their own; if
// it is gone (deleted or expired, or replaced by another of its name), the
// batch's first create is stored with them: a deleted event never comes
// back. finished tells that the series was finished.
func (f *Folder) write(ctx context.Context, live *core.Event, b *foldBatch) (stored *core.Event, finished bool, err error) {
	ctx = eventregistry.InternalWriteContext(ctx, live.Namespace, schema.GroupVersion{Version: "v1"}) // core/v1 rules let count, lastTimestamp and series move on
	update := rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, oldObj runtime.Object) (runtime.Object, error) {
		old := oldObj.(*core.Event)
		if old.Name == "" || old.UID != live.UID {
			return nil, errLiveGone
		}
		if old.Series != nil && old.Series.State == core.EventSeriesStateFinished {
			return nil, errSeriesFinished
		}
		updated := old.DeepCopy()
		addOccurrences(updated, b.occurrences, b.last)
		return updated, nil
	})
	obj, _, err := f.store.Update(ctx, live.Name, update, rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	switch {
	case errors.Is(err, errSeriesFinished):
		stored, err = f.createContinuation(ctx, live, b.occurrences, b.last)
		return stored, true, err
	case errors.Is(err, errLiveGone) || apierrors.IsNotFound(err):
		stored, err = f.createFirst(ctx, b)
		return stored, false, err
	case err != nil:
		return nil, false, err
	}
	return obj.(*core.Event), false, nil
}

// createFirst stores the batch's first create with the batch's occurrences,
// in place of a live event that is gone.
func (f *Folder) createFirst(ctx context.Context, b *foldBatch) (*core.Event, error) {
	first := b.first.DeepCopy()
	if b.occurrences > 1 {
		addOccurrences(first, b.occurrences-1, b.last)
	}
	obj, err := f.store.Create(ctx, first, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*core.Event), nil
}

// createContinuation stores the n occurrences folded after the live event
// was finished as a new event, named after it.
func (f *Folder) createContinuation(ctx context.Context, live *core.Event, n int32, last time.Time) (*core.Event, error) {
	next := live.DeepCopy()
	next.ObjectMeta = metav1.ObjectMeta{
		Namespace: live.Namespace, GenerateName: generateNamePrefix(live.Name),
		Labels: live.Labels, Annotations: live.Annotations,
	}
	next.Series, next.Count = nil, 1
	next.FirstTimestamp, next.LastTimestamp = metav1.NewTime(last), metav1.NewTime(last)
	if n > 1 {
		addOccurrences(next, n-1, last)
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

// flushTimeout bounds the writes of the creates still waiting when Run
// ends.
const flushTimeout = 10 * time.Second

// Name is the folder's name among the server's loops.
func (*Folder) Name() string { return "event-folding" }

// Run waits for ctx to end, then writes the creates still waiting at once
// and waits for the writes in flight (Flush, within flushTimeout): the
// server runs it from its start and ends it before its store is destroyed.
func (f *Folder) Run(ctx context.Context) {
	if f.window < f.config.FlushInterval.Duration {
		klog.FromContext(ctx).Info("Folding writes a series at most once a window, and the window is at most a second: flushInterval is taken as that",
			"flushInterval", f.config.FlushInterval.Duration, "window", f.window)
	}
	<-ctx.Done()
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	f.Flush(flushCtx)
}

// Flush writes the creates still waiting at once and waits for the writes
// in flight, or for ctx to end.
func (f *Folder) Flush(ctx context.Context) {
	// Remove every series: the eviction function writes each at once.
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

// userOf is the name of the user who makes the request, "" for none.
func userOf(ctx context.Context) string {
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		return u.GetName()
	}
	return ""
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
