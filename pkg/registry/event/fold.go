package event

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
)

// Folding defaults: like client-go's legacy aggregator (10 similar events in
// 10 minutes), a reporter may create 10 isomorphic events close together
// before the next ones are folded; a folded series is written at most once
// every 10 seconds.
const (
	DefaultFoldAfter         = 10
	DefaultFoldWindow        = 10 * time.Minute
	DefaultFoldFlushInterval = 10 * time.Second
	DefaultFoldCacheSize     = 4096
)

// FoldConfig says when isomorphic creates are folded into the live event of
// their series instead of being stored as new events.
type FoldConfig struct {
	// After is how many isomorphic creates, each arriving within Window of
	// the previous one, are stored as events of their own; the ones after
	// them are folded into the last one stored.
	After int
	// Window is the longest gap between two isomorphic creates for them to
	// count as one burst. A longer gap starts over.
	Window time.Duration
	// FlushInterval bounds the etcd writes of a folded series: its count is
	// kept in memory and written at most once per interval.
	FlushInterval time.Duration
	// CacheSize is how many series the folder tracks at once (least
	// recently used ones are flushed and forgotten).
	CacheSize int
}

// DefaultFoldConfig is the folding configuration when none is given.
func DefaultFoldConfig() FoldConfig {
	return FoldConfig{
		After:         DefaultFoldAfter,
		Window:        DefaultFoldWindow,
		FlushInterval: DefaultFoldFlushInterval,
		CacheSize:     DefaultFoldCacheSize,
	}
}

// Validate checks that every setting is positive.
func (c FoldConfig) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.After < 1 {
		errs = append(errs, field.Invalid(path.Child("after"), c.After, "must be at least 1"))
	}
	if c.CacheSize < 1 {
		errs = append(errs, field.Invalid(path.Child("cacheSize"), c.CacheSize, "must be at least 1"))
	}
	if c.Window <= 0 {
		errs = append(errs, field.Invalid(path.Child("window"), c.Window.String(), "must be a positive duration"))
	}
	if c.FlushInterval <= 0 {
		errs = append(errs, field.Invalid(path.Child("flushInterval"), c.FlushInterval.String(), "must be a positive duration"))
	}
	return errs
}

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

// eventStore is what the folder needs of the store.
type eventStore interface {
	rest.Creater //nolint:misspell // the interface is named so in k8s.io/apiserver
	rest.Updater
}

// Folder folds isomorphic creates of a hot series into its live event: the
// first FoldConfig.After creates of a burst are stored as sent; each later
// one adds an occurrence to the last stored event (its count, series.count,
// lastTimestamp, series.lastObservedTime, series.state Ongoing) in memory,
// and answers with that event as if it had been created. The folded counts
// are written to etcd at most once per FlushInterval per series, on the
// first of them straight after that interval, and when the series is
// forgotten or the server shuts down. A crash loses at most the counts of
// the last interval, never an event: the first creates of a burst were
// stored before they were answered.
type Folder struct {
	config FoldConfig
	store  eventStore
	clock  clock.WithDelayedExecution

	mu     sync.Mutex // serializes get-or-add of series
	series *lru.Cache

	wg sync.WaitGroup
}

// NewFolder returns a folder writing through store.
func NewFolder(config FoldConfig, store eventStore, clk clock.WithDelayedExecution) (*Folder, error) {
	if errs := config.Validate(field.NewPath("folding")); len(errs) > 0 {
		return nil, fmt.Errorf("invalid folding configuration: %w", errs.ToAggregate())
	}
	registerFoldMetrics()
	f := &Folder{config: config, store: store, clock: clk}
	// A series forgotten (least recently used, or all at shutdown) is
	// flushed now rather than at its scheduled time.
	f.series = lru.NewWithEvictionFunc(config.CacheSize, func(_ lru.Key, value any) {
		s := value.(*foldedSeries)
		f.wg.Go(func() {
			f.cancelFlush(s)
			f.flush(context.Background(), s)
		})
	})
	return f, nil
}

// foldable is true for creates the folder may fold: plain singletons (no
// series, no count of their own beyond one occurrence), not dry runs.
// Creates that carry a series or a count come from a reporter that counts
// itself.
func foldable(e *core.Event, options *metav1.CreateOptions) bool {
	return len(options.DryRun) == 0 && e.Series == nil && e.Count <= 1
}

// Create stores a new event, or folds it into the live event of its series
// when the series is hot. A folded create is validated (strategy and
// admission) like a stored one, and answered with the live event.
func (f *Folder) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	event, ok := obj.(*core.Event)
	if !ok || IsInternalWrite(ctx) || !foldable(event, options) {
		return f.store.Create(ctx, obj, createValidation, options)
	}
	now := f.clock.Now()
	s := f.seriesFor(seriesKeyOf(event))

	s.mu.Lock()
	if now.Sub(s.lastCreate) > f.config.Window || s.finished {
		// A new burst, or the live event was finished meanwhile: store
		// the next creates again, each becoming the live event.
		s.creates, s.finished = 0, false
	}
	s.creates++
	s.lastCreate = now
	hot := s.creates > f.config.After && s.live != nil
	s.mu.Unlock()

	if !hot {
		created, err := f.store.Create(ctx, obj, createValidation, options)
		if err == nil {
			s.mu.Lock()
			if s.pending == 0 {
				s.setLive(created.(*core.Event))
			}
			s.mu.Unlock()
		}
		return created, err
	}
	if err := f.validate(ctx, event, createValidation); err != nil {
		return nil, err
	}
	return f.fold(ctx, s, event, now), nil
}

// validate holds a create that will be folded to the same rules as one that
// is stored: the strategy's and the validating admission plugins'.
func (f *Folder) validate(ctx context.Context, event *core.Event, createValidation rest.ValidateObjectFunc) error {
	event = event.DeepCopy()
	strategy := NewStrategy(nil)
	if event.Name == "" && event.GenerateName != "" {
		event.Name = strategy.GenerateName(event.GenerateName)
	}
	if errs := strategy.Validate(ctx, event); len(errs) > 0 {
		return apierrors.NewInvalid(core.Kind("Event"), event.Name, errs)
	}
	if createValidation != nil {
		return createValidation(ctx, event)
	}
	return nil
}

// fold adds the occurrence of event to the live event of s and returns what
// a read of the live event will show once flushed.
func (f *Folder) fold(ctx context.Context, s *foldedSeries, event *core.Event, now time.Time) *core.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	s.pending++
	if now.After(s.lastObserved) {
		s.lastObserved = now
	}
	foldedTotal.WithLabelValues(apiOf(ctx)).Inc()
	if !s.flushArmed {
		f.armFlush(s, max(f.config.FlushInterval-now.Sub(s.lastFlush), 0))
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
		f.armFlush(s, f.config.FlushInterval)
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
	ctx = InternalWriteContext(ctx, live.Namespace, schema.GroupVersion{Version: "v1"}) // core/v1 rules let count, lastTimestamp and series move on
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

// Flush writes every pending occurrence and waits for flushes in flight;
// the server calls it before it stops.
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

// EnableFolding makes creates through r fold isomorphic creates of hot
// series (see Folder). The caller must call the folder's Flush before the
// store is destroyed.
func (r *REST) EnableFolding(config FoldConfig, clk clock.WithDelayedExecution) (*Folder, error) {
	folder, err := NewFolder(config, r.Store, clk)
	if err != nil {
		return nil, err
	}
	r.folder = folder
	return folder, nil
}

// Create stores a new event, through the folder when folding is enabled.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	if r.folder == nil {
		return r.Store.Create(ctx, obj, createValidation, options)
	}
	return r.folder.Create(ctx, obj, createValidation, options)
}
