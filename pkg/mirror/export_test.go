package mirror

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// RunWorkers runs m's workers, without its reflector, until ctx ends;
// the returned function waits for them.
func (m *Mirror) RunWorkers(ctx context.Context) (wait func()) {
	var wg sync.WaitGroup
	for range m.options.Workers {
		wg.Go(func() { m.work(ctx) })
	}
	context.AfterFunc(ctx, m.queue.shutDown)
	return wg.Wait
}

// Enqueue queues an upstream event as the reflector does.
func (m *Mirror) Enqueue(event *corev1.Event) { m.enqueue(event) }
