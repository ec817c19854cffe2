package series

import (
	"context"
	"fmt"
	"time"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/admission/eventseries"
	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
)

// listChunk bounds how many events the sweeper reads from etcd at a
// time.
const listChunk = 500

// seriesStore is the sweeper's view of the events store. It works on the
// registry store directly, in-process: the sweeper's write is a state change
// the server makes itself after applying the same rule as the EventSeries
// plugin (see eventseries.Sweeper), so it needs no authentication,
// authorization or admission webhooks, and no client or conversion. Like
// every write, it renews the event's TTL, so a series marked Unknown stays
// visible for a full TTL.
type seriesStore struct {
	events *eventregistry.REST
}

var _ eventseries.SeriesStore = seriesStore{}

// ListSeries lists, in chunks, the events of all namespaces whose series may
// be Ongoing (state Ongoing or unset) and returns those with a series.
func (s seriesStore) ListSeries(ctx context.Context) ([]*core.Event, error) {
	ctx = genericapirequest.WithNamespace(ctx, metav1.NamespaceAll)
	selector := fields.AndSelectors(
		fields.OneTermNotEqualSelector(eventconversion.FieldSeriesState, string(core.EventSeriesStateFinished)),
		fields.OneTermNotEqualSelector(eventconversion.FieldSeriesState, string(core.EventSeriesStateUnknown)),
	)
	var series []*core.Event
	options := &metainternalversion.ListOptions{FieldSelector: selector, Limit: listChunk}
	for {
		obj, err := s.events.List(ctx, options)
		if err != nil {
			return nil, err
		}
		list, ok := obj.(*core.EventList)
		if !ok {
			return nil, fmt.Errorf("listing events returned %T", obj)
		}
		for i := range list.Items {
			if list.Items[i].Series != nil {
				series = append(series, &list.Items[i])
			}
		}
		if list.Continue == "" {
			return series, nil
		}
		options.Continue = list.Continue
	}
}

// GetEvent reads one stored event.
func (s seriesStore) GetEvent(ctx context.Context, namespace, name string) (*core.Event, error) {
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
func (s seriesStore) UpdateSeriesState(ctx context.Context, event *core.Event, state core.EventSeriesState) error {
	updated := event.DeepCopy()
	updated.Series.State = state
	_, _, err := s.events.Update(eventregistry.InternalWriteContext(ctx, event.Namespace, corev1.SchemeGroupVersion), event.Name,
		rest.DefaultUpdatedObjectInfo(updated), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc,
		false, &metav1.UpdateOptions{})
	return err
}

// SweeperController runs the series sweeper as one of the server's
// controllers.
type SweeperController struct {
	sweeper  *eventseries.Sweeper
	interval time.Duration
	abandon  time.Duration
}

// NewSweeper returns the sweeper of events as a server controller.
func NewSweeper(events *eventregistry.REST, thresholds eventseries.Thresholds) (*SweeperController, error) {
	sweeper, err := eventseries.NewSweeper(seriesStore{events: events}, thresholds, clock.RealClock{})
	if err != nil {
		return nil, err
	}
	interval := thresholds.SweepInterval
	if interval <= 0 {
		interval = eventseries.DefaultSweepInterval
	}
	return &SweeperController{sweeper: sweeper, interval: interval, abandon: thresholds.AbandonedAfter()}, nil
}

// Name is the controller's name in logs.
func (*SweeperController) Name() string { return "eventseries-sweeper" }

// Run sweeps every interval until ctx ends.
func (s *SweeperController) Run(ctx context.Context) {
	klog.FromContext(ctx).Info("Sweeping abandoned event series", "abandonedAfter", s.abandon, "interval", s.interval)
	s.sweeper.Run(ctx, s.interval)
}
