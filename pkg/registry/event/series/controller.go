package series

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/admission/eventseries"
	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
)

// controllerWorkers is how many events the controller writes at once.
const controllerWorkers = 2

// relistAfter is the pause before listing again after a failed list or
// watch.
const relistAfter = time.Second

// StateController gives a state to every series stored without one: writes
// that bypassed our API (kube-apiserver in offload mode, whose core/v1 and
// events.k8s.io/v1 know no series.state and drop it on update; in-process
// writers) get the state the EventSeries plugin gives a write through our
// API: Finished when the write is the reporter's final one (its
// lastObservedTime older than finishAfter when seen), Ongoing otherwise.
// An update through kube-apiserver drops the stored state too; the
// controller gives it back by the same rule, judging the write alone: a
// bypassing writer cannot be refused, so a series that kube-apiserver
// reopens after it was Finished reads Ongoing again (through our API that
// write would be refused). It watches the store for such events (field
// selector series.state=) and writes with optimistic concurrency, so a
// newer write always wins.
type StateController struct {
	events     *eventregistry.REST
	thresholds eventseries.Thresholds
	clock      clock.PassiveClock
}

// NewStateController returns the controller over events, with the
// plugin's thresholds.
func NewStateController(events *eventregistry.REST, thresholds eventseries.Thresholds, clk clock.PassiveClock) *StateController {
	return &StateController{events: events, thresholds: thresholds, clock: clk}
}

// Name is the controller's name in logs.
func (*StateController) Name() string { return "series-state" }

// Run lists and watches stateless events, and sets the state of each
// series among them, until ctx ends; it returns once its writes ended.
func (c *StateController) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.Info("Giving a state to event series stored without one", "finishAfter", c.thresholds.FinishAfter)
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "events_apiserver_series_state"})
	var wg sync.WaitGroup
	for range controllerWorkers {
		wg.Go(func() {
			for c.processNext(ctx, queue) {
			}
		})
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := c.listAndWatch(ctx, queue); err != nil && ctx.Err() == nil {
			logger.Error(err, "Watching event series without state failed; listing again", "after", relistAfter)
		}
	}, relistAfter)
	queue.ShutDown()
	wg.Wait()
}

// stateless selects the series stored without a state.
var stateless = fields.OneTermEqualSelector(eventregistry.FieldStatelessSeries, "true")

// listAndWatch queues every stateless series, then each one the watch
// reports, until the watch ends.
func (c *StateController) listAndWatch(ctx context.Context, queue workqueue.TypedRateLimitingInterface[types.NamespacedName]) error {
	list, err := listEvents(ctx, c.events, stateless)
	if err != nil {
		return fmt.Errorf("listing: %w", err)
	}
	for i := range list.Items {
		enqueue(queue, &list.Items[i])
	}

	ctx = genericapirequest.WithNamespace(ctx, metav1.NamespaceAll)
	w, err := c.events.Watch(ctx, &metainternalversion.ListOptions{FieldSelector: stateless, ResourceVersion: list.ResourceVersion})
	if err != nil {
		return fmt.Errorf("watching: %w", err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			switch e.Type {
			case watch.Added, watch.Modified:
				event, err := eventOf(e.Object)
				if err != nil {
					return err
				}
				enqueue(queue, event)
			case watch.Error:
				return apierrors.FromObject(e.Object)
			}
		}
	}
}

// eventOf unwraps a watched event: the watch cache hands out what it sends
// to its watchers as a runtime.CacheableObject, to encode it once.
func eventOf(obj runtime.Object) (*core.Event, error) {
	if cacheable, ok := obj.(runtime.CacheableObject); ok {
		obj = cacheable.GetObject()
	}
	event, ok := obj.(*core.Event)
	if !ok {
		return nil, fmt.Errorf("watching events returned %T", obj)
	}
	return event, nil
}

func enqueue(queue workqueue.TypedRateLimitingInterface[types.NamespacedName], event *core.Event) {
	if event.Series != nil && event.Series.State == "" {
		queue.Add(types.NamespacedName{Namespace: event.Namespace, Name: event.Name})
	}
}

// processNext syncs one queued event; false once the queue shut down.
func (c *StateController) processNext(ctx context.Context, queue workqueue.TypedRateLimitingInterface[types.NamespacedName]) bool {
	key, shutdown := queue.Get()
	if shutdown {
		return false
	}
	defer queue.Done(key)
	if err := c.sync(ctx, key); err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Error(err, "Setting the state of an event series failed; retrying", "event", key)
		queue.AddRateLimited(key)
		return true
	}
	queue.Forget(key)
	return true
}

// sync sets the state of the stored event key if it is a series without
// one, on condition that it did not change since it was read.
func (c *StateController) sync(ctx context.Context, key types.NamespacedName) error {
	ctx = eventregistry.InternalWriteContext(ctx, key.Namespace, corev1.SchemeGroupVersion)
	obj, err := c.events.Get(ctx, key.Name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	event, ok := obj.(*core.Event)
	if !ok {
		return fmt.Errorf("getting event %s returned %T", key, obj)
	}
	if event.Series == nil || event.Series.State != "" {
		return nil
	}
	updated := event.DeepCopy()
	// The stored state is gone: judge the write alone.
	updated.Series.State = eventseries.StateOfWrite(updated.Series, "", c.clock.Now(), c.thresholds)
	_, _, err = c.events.Update(ctx, key.Name, rest.DefaultUpdatedObjectInfo(updated),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		klog.FromContext(ctx).V(4).Info("Set the state of an event series", "event", key, "state", updated.Series.State)
	}
	return err
}
