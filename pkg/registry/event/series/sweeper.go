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

package series

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	"github.com/kube-events/events-apiserver/pkg/apis/core/validation"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	policyvalidation "github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/validation"
	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
)

// conflictRetry bounds how often the sweeper writes an event that keeps
// changing under it (re-reading it in between) before giving up on it until
// the next sweep: client-go's default, five writes 10 ms apart.
var conflictRetry = retry.DefaultRetry

// The sweeper and the state controller read the series they look after
// with one list per selector, without a limit, so that the store's cache
// serves each list whole from memory. A limited list is served by etcd
// from its second page on (neither store cache keeps a snapshot per write;
// see ListFromCacheSnapshot), and etcd then reads every event after the last
// page, singletons included, to find the next matches: with 100,000 events
// cached, a sweep every minute read all of them through etcd.

// listEvents lists the events of all namespaces that selector selects.
func listEvents(ctx context.Context, events *eventstorage.REST, selector fields.Selector) (*core.EventList, error) {
	ctx = genericapirequest.WithNamespace(ctx, metav1.NamespaceAll)
	obj, err := events.List(ctx, &metainternalversion.ListOptions{FieldSelector: selector})
	if err != nil {
		return nil, err
	}
	list, ok := obj.(*core.EventList)
	if !ok {
		return nil, fmt.Errorf("listing events returned %T", obj)
	}
	return list, nil
}

// SeriesStore is what the sweeper needs of the events store; the server's
// is the registry store (NewSweeper).
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
// heartbeat for longer than heartbeatInterval+heartbeatSlack (the event
// policy's series thresholds), the test the EventSeries plugin applies to a
// write that sets Unknown. It never
// finishes a series; only its reporter knows that it ended. It works with
// optimistic concurrency and re-checks an event after a conflict, so a
// heartbeat that lands first keeps its series Ongoing.
type Sweeper struct {
	store      SeriesStore
	thresholds eventpolicy.Series
	interval   time.Duration
	clock      clock.WithTicker
}

// NewSweeper returns the sweeper of the events store, with the policy's
// series thresholds (sweeping every SweepInterval).
func NewSweeper(events *eventstorage.REST, thresholds eventpolicy.Series) (*Sweeper, error) {
	return newSweeper(registryStore{events: events}, thresholds, clock.RealClock{})
}

func newSweeper(store SeriesStore, thresholds eventpolicy.Series, clk clock.WithTicker) (*Sweeper, error) {
	if errs := policyvalidation.ValidateSeries(thresholds, field.NewPath("series")); len(errs) > 0 {
		return nil, fmt.Errorf("invalid series thresholds: %w", errs.ToAggregate())
	}
	return &Sweeper{store: store, thresholds: thresholds, interval: thresholds.SweepInterval.Duration, clock: clk}, nil
}

// Name is the sweeper's name in logs.
func (*Sweeper) Name() string { return "eventseries-sweeper" }

// Run sweeps at once and then every interval until ctx is done.
func (s *Sweeper) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.Info("Sweeping abandoned event series", "abandonedAfter", s.thresholds.AbandonedAfter(), "interval", s.interval)
	ticker := s.clock.NewTicker(s.interval)
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
// longer than a heartbeat plus slack.
func (s *Sweeper) abandoned(event *core.Event) bool {
	return event.Series != nil &&
		validation.EffectiveSeriesState(event.Series.State) == core.EventSeriesStateOngoing &&
		eventpolicy.QuietFor(event.Series, s.clock.Now(), s.thresholds.AbandonedAfter())
}

// markUnknown writes Unknown into event's series. On a conflict it re-reads
// the event and writes again only if it is still abandoned: a heartbeat that
// came in between keeps the series Ongoing.
func (s *Sweeper) markUnknown(ctx context.Context, event *core.Event) (bool, error) {
	marked, writes := false, 0
	err := retry.RetryOnConflict(conflictRetry, func() error {
		if writes > 0 {
			current, err := s.store.GetEvent(ctx, event.Namespace, event.Name)
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("re-reading after a conflict: %w", err)
			}
			if !s.abandoned(current) {
				return nil
			}
			event = current
		}
		writes++
		err := s.store.UpdateSeriesState(ctx, event, core.EventSeriesStateUnknown)
		if apierrors.IsNotFound(err) {
			return nil
		}
		marked = err == nil
		return err
	})
	if apierrors.IsConflict(err) {
		return false, fmt.Errorf("gave up after %d conflicting writes: %w", writes, err)
	}
	return marked, err
}

// registryStore is the sweeper's SeriesStore: the registry store, used
// in-process with event.InternalWriteContext, so that the strategy judges
// the sweeper's write as it judges a client's (no authentication,
// authorization or admission: the sweeper applied the plugin's rule
// itself). Like every write, it renews the event's TTL, so a series marked
// Unknown stays visible for a full TTL.
type registryStore struct {
	events *eventstorage.REST
}

var _ SeriesStore = registryStore{}

// mayBeOngoing selects the series the sweeper looks at: those stored
// Ongoing and those stored without a state, which count as Ongoing.
var mayBeOngoing = []fields.Selector{
	fields.OneTermEqualSelector(eventconversion.FieldSeriesState, string(core.EventSeriesStateOngoing)),
	stateless,
}

// ListSeries lists the events of all namespaces whose series may be Ongoing.
func (s registryStore) ListSeries(ctx context.Context) ([]*core.Event, error) {
	var series []*core.Event
	for _, selector := range mayBeOngoing {
		list, err := listEvents(ctx, s.events, selector)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			series = append(series, &list.Items[i])
		}
	}
	return series, nil
}

// GetEvent reads one stored event.
func (s registryStore) GetEvent(ctx context.Context, namespace, name string) (*core.Event, error) {
	obj, err := s.events.Get(genericapirequest.WithNamespace(ctx, namespace), name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	event, ok := obj.(*core.Event)
	if !ok {
		return nil, fmt.Errorf("getting event %s/%s returned %T", namespace, name, obj)
	}
	return event, nil
}

// UpdateSeriesState writes state into the series of event, on condition
// that the stored event is still at event's resourceVersion (the store
// answers a Conflict otherwise).
func (s registryStore) UpdateSeriesState(ctx context.Context, event *core.Event, state core.EventSeriesState) error {
	updated := event.DeepCopy()
	updated.Series.State = state
	_, _, err := s.events.Update(eventregistry.InternalWriteContext(ctx, event.Namespace, corev1.SchemeGroupVersion), event.Name,
		rest.DefaultUpdatedObjectInfo(updated), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc,
		false, &metav1.UpdateOptions{})
	return err
}
