package eventseries

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/core/validation"
)

// DefaultSweepInterval is how often the server should run the sweeper: the
// delay between a series becoming abandoned and it being marked Unknown.
const DefaultSweepInterval = time.Minute

// maxAttemptsPerEvent bounds how often the sweeper re-reads an event that
// keeps changing under it before giving up on it until the next sweep.
const maxAttemptsPerEvent = 5

// SeriesStore is what the sweeper needs from the server's event storage. The
// server backs it with its registry store (pkg/apiserver).
type SeriesStore interface {
	// ListSeries returns the stored events of every namespace that may carry
	// an Ongoing series. It may return more (singletons, other states): the
	// sweeper selects again.
	ListSeries(ctx context.Context) ([]*core.Event, error)
	// GetEvent returns the stored event, or an error for which
	// apierrors.IsNotFound is true.
	GetEvent(ctx context.Context, namespace, name string) (*core.Event, error)
	// UpdateSeriesState sets series.state of the stored event to state, on
	// condition that it is still at event.ResourceVersion; otherwise it
	// returns an error for which apierrors.IsConflict is true.
	UpdateSeriesState(ctx context.Context, event *core.Event, state core.EventSeriesState) error
}

// Sweeper marks Unknown the Ongoing series whose reporters went silent: no
// heartbeat for longer than heartbeatInterval+heartbeatSlack. It never
// finishes a series; only its reporter knows that it ended.
type Sweeper struct {
	store      SeriesStore
	thresholds Thresholds
	clock      clock.WithTicker
}

// NewSweeper returns a sweeper over store using the plugin's thresholds and
// clk (clock.RealClock{} outside tests).
func NewSweeper(store SeriesStore, thresholds Thresholds, clk clock.WithTicker) (*Sweeper, error) {
	if errs := thresholds.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("invalid %s thresholds: %w", PluginName, errs.ToAggregate())
	}
	return &Sweeper{store: store, thresholds: thresholds, clock: clk}, nil
}

// Run sweeps at once and then every interval (DefaultSweepInterval if not
// positive) until ctx is done.
func (s *Sweeper) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultSweepInterval
	}
	logger := klog.FromContext(ctx).WithName("eventseries-sweeper")
	ticker := s.clock.NewTicker(interval)
	defer ticker.Stop()
	for {
		marked, err := s.Sweep(ctx)
		if err != nil {
			logger.Error(err, "Sweeping abandoned event series failed", "markedUnknown", marked)
		} else if marked > 0 {
			logger.V(2).Info("Marked abandoned event series Unknown", "count", marked)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// Sweep marks Unknown every abandoned Ongoing series once and returns how
// many it marked. Errors for single events do not stop the sweep.
func (s *Sweeper) Sweep(ctx context.Context) (int, error) {
	candidates, err := s.store.ListSeries(ctx)
	if err != nil {
		return 0, fmt.Errorf("listing event series: %w", err)
	}
	marked := 0
	var errs []error
	for _, event := range candidates {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		if !s.abandoned(event) {
			continue
		}
		ok, err := s.markUnknown(ctx, event)
		if err != nil {
			errs = append(errs, fmt.Errorf("event %s/%s: %w", event.Namespace, event.Name, err))
		}
		if ok {
			marked++
		}
	}
	return marked, utilerrors.NewAggregate(errs)
}

// abandoned tells whether event has an Ongoing series not observed for
// longer than a heartbeat plus slack: the same test the plugin applies to
// a write that sets Unknown, so the sweeper's writes pass admission.
func (s *Sweeper) abandoned(event *core.Event) bool {
	return event.Series != nil &&
		validation.EffectiveSeriesState(event.Series.State) == core.EventSeriesStateOngoing &&
		QuietFor(event.Series, s.clock.Now(), s.thresholds.AbandonedAfter())
}

// markUnknown writes Unknown into event's series. On a conflict it re-reads
// the event and writes again only if it is still abandoned: a heartbeat that
// came in between keeps the series Ongoing.
func (s *Sweeper) markUnknown(ctx context.Context, event *core.Event) (bool, error) {
	for attempt := 1; ; attempt++ {
		err := s.store.UpdateSeriesState(ctx, event, core.EventSeriesStateUnknown)
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case !apierrors.IsConflict(err):
			return false, err
		case attempt >= maxAttemptsPerEvent:
			return false, fmt.Errorf("gave up after %d conflicting writes: %w", attempt, err)
		}
		event, err = s.store.GetEvent(ctx, event.Namespace, event.Name)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("re-reading after a conflict: %w", err)
		}
		if !s.abandoned(event) {
			return false, nil
		}
	}
}
