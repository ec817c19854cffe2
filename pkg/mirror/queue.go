package mirror

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// queue is the bounded queue between the reflector and the workers, keyed
// by namespace/name. It holds the latest upstream version of each key only:
// an update of a key already waiting replaces it in place and takes no new
// slot. A key being written by a worker is not handed to another worker
// until that write is done, so writes of one event never race. A version
// whose write failed is held for a retry, in a slot of its own, until the
// retry or a newer version of the key. Add never blocks: when the queue
// holds max keys (waiting or held), a new key is refused.
type queue struct {
	mu         sync.Mutex
	cond       *sync.Cond
	max        int
	items      map[string]queued        // waiting keys and their latest version
	order      []string                 // waiting keys not in processing, oldest first
	processing map[string]bool          // keys a worker is writing
	held       map[string]*corev1.Event // keys held for a retry, with the version that failed
	closed     bool
}

// queued is an upstream event waiting to be written, with how many writes
// of it already failed.
type queued struct {
	event    *corev1.Event
	failures int
}

// What became of a failed write; see queue.failed.
type failure int

const (
	failureHeld       failure = iota // held for a retry
	failureSuperseded                // a newer version waits: no retry
	failureQueueFull                 // no room to hold it: dropped
)

func newQueue(max int) *queue {
	q := &queue{max: max, items: map[string]queued{}, processing: map[string]bool{}, held: map[string]*corev1.Event{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// add queues event under key, replacing a waiting version of the same key
// and cancelling a retry of an older one. It returns false, leaving the
// queue unchanged, when the key is new and the queue is full.
func (q *queue) add(key string, event *corev1.Event) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.held, key)
	if _, waiting := q.items[key]; waiting {
		q.items[key] = queued{event: event}
		return true
	}
	return q.insert(key, queued{event: event})
}

// insert adds a key that is not waiting, if there is room; q.mu is held.
func (q *queue) insert(key string, item queued) bool {
	if len(q.items)+len(q.held) >= q.max {
		return false
	}
	q.items[key] = item
	if !q.processing[key] {
		q.order = append(q.order, key)
		q.cond.Signal()
	}
	q.updateLength()
	return true
}

func (q *queue) updateLength() {
	queueLength.Set(float64(len(q.items) + len(q.held)))
}

// get blocks until a key is ready and hands it out with how many writes of
// it failed before; the caller must call done with the key. ok is false
// once the queue is shut down.
func (q *queue) get() (key string, event *corev1.Event, failures int, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.order) == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return "", nil, 0, false
	}
	key = q.order[0]
	q.order[0] = ""
	q.order = q.order[1:]
	item := q.items[key]
	delete(q.items, key)
	q.processing[key] = true
	q.updateLength()
	return key, item.event, item.failures, true
}

// done ends the processing of key; a version that arrived meanwhile
// becomes ready.
func (q *queue) done(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.finish(key)
}

// finish is done with q.mu held.
func (q *queue) finish(key string) {
	delete(q.processing, key)
	if _, waiting := q.items[key]; waiting {
		q.order = append(q.order, key)
		q.cond.Signal()
	}
}

// failed ends the processing of key after a failed write of event, and
// holds event for retry unless a newer version of key already waits or
// the queue has no room.
func (q *queue) failed(key string, event *corev1.Event) failure {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.finish(key)
	switch {
	case q.items[key].event != nil:
		return failureSuperseded
	case len(q.items)+len(q.held) >= q.max:
		return failureQueueFull
	}
	q.held[key] = event
	q.updateLength()
	return failureHeld
}

// retry queues a held event again, as failed failures times; it does
// nothing when a newer version of its key arrived since it was held.
func (q *queue) retry(key string, event *corev1.Event, failures int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.held[key] != event {
		return
	}
	delete(q.held, key)
	q.insert(key, queued{event: event, failures: failures})
}

// len is how many keys wait or are held for a retry.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) + len(q.held)
}

// shutDown wakes every get, which then returns ok false.
func (q *queue) shutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}
