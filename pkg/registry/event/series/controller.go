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
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
	"github.com/kube-events/events-apiserver/pkg/storedevent"
)

// controllerWorkers is how many events the controller writes at once.
const controllerWorkers = 2

// pollInterval is how often the controller lists the series stored
// without a state.
const pollInterval = time.Second

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
// write would be refused). It lists those events every pollInterval (field
// selector series.stateless=true, served from the store cache's index
// of them) and writes with optimistic concurrency, so a newer write always
// wins.
//
// It lists rather than watches: the store's cache hands a watch every event
// of the store unless the watch selects one regarding name (its one
// trigger), through a buffer sized when the watch starts (ten events on the
// empty cache of a starting server), and holds every other watcher's
// events while that buffer is full. Under load, such a watch filled it
// whenever the controller waited ten milliseconds for a CPU, and delayed
// the delivery to 10,000 watchers by up to 200 ms. An indexed list reads
// the stateless series alone: nothing, when no writer bypasses our API.
type StateController struct {
	events     *eventstorage.REST
	thresholds eventpolicy.Series
	clock      clock.PassiveClock
}

// NewStateController returns the controller over events, with the
// policy's series thresholds.
func NewStateController(events *eventstorage.REST, thresholds eventpolicy.Series, clk clock.PassiveClock) *StateController {
	return &StateController{events: events, thresholds: thresholds, clock: clk}
}

// Name is the controller's name in logs.
func (*StateController) Name() string { return "series-state" }

// Run lists the stateless series every pollInterval and sets the state of
// each, until ctx ends; it returns once its writes ended.
func (c *StateController) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.Info("Giving a state to event series stored without one", "finishAfter", c.thresholds.FinishAfter.Duration, "every", pollInterval)
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
		if err := c.enqueueStateless(ctx, queue); err != nil && ctx.Err() == nil {
			logger.Error(err, "Listing event series without state failed; listing again", "after", pollInterval)
		}
	}, pollInterval)
	queue.ShutDown()
	wg.Wait()
}

// stateless selects the series stored without a state.
var stateless = fields.OneTermEqualSelector(storedevent.FieldStatelessSeries, "true")

// enqueueStateless queues every series stored without a state (the list's
// selector picks them; sync checks each again as it reads it); the queue
// holds each once, however many lists find it before it is written, and
// one whose write failed is left to the queue's backoff.
func (c *StateController) enqueueStateless(ctx context.Context, queue workqueue.TypedRateLimitingInterface[types.NamespacedName]) error {
	list, err := listEvents(ctx, c.events, stateless)
	if err != nil {
		return err
	}
	for i := range list.Items {
		event := &list.Items[i]
		key := types.NamespacedName{Namespace: event.Namespace, Name: event.Name}
		if queue.NumRequeues(key) == 0 {
			queue.Add(key)
		}
	}
	return nil
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
	if !storedevent.IsStatelessSeries(event) {
		return nil
	}
	updated := event.DeepCopy()
	// The stored state is gone: judge the write alone, as a write to a
	// series already stored.
	updated.Series.State = c.thresholds.StateOfWrite(updated.Series, "", false, c.clock.Now())
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
