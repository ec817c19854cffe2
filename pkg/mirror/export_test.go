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
