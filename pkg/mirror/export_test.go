package mirror

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
)

// StartWorkers runs m's workers, without a reader of kube-apiserver, until
// ctx ends. offer queues an upstream event as the reader does; wait stops
// the workers and waits for them.
func (m *Mirror) StartWorkers(ctx context.Context) (offer func(*corev1.Event, time.Time), wait func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	r := &run{
		Mirror:  m,
		pending: newPending(m.options.MaxPending),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](m.options.RetryBaseDelay, m.options.RetryMaxDelay),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: queueName + "_test", Clock: m.clock}),
		cancel: cancel,
	}
	var workers sync.WaitGroup
	for range m.options.Workers {
		workers.Go(func() {
			for r.processNext(ctx) {
			}
		})
	}
	return func(e *corev1.Event, storedAt time.Time) { r.offer(ctx, e, storedAt) }, func() {
		cancel(nil)
		r.queue.ShutDown()
		workers.Wait()
	}
}
