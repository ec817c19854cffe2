package mirror

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// queue is the bounded queue between the reflector and the workers, keyed
// by namespace/name. It holds the latest upstream version of each key only:
// an update of a key already waiting replaces it in place and takes no new
// slot. A key being written by a worker is not handed to another worker
// until that write is done, so writes of one event never race. Add never
// blocks: when the queue holds max keys, a new key is refused.
type queue struct {
	mu         sync.Mutex
	cond       *sync.Cond
	max        int
	items      map[string]*corev1.Event // waiting keys and their latest version
	order      []string                 // waiting keys not in processing, oldest first
	processing map[string]bool
	closed     bool
}

func newQueue(max int) *queue {
	q := &queue{max: max, items: map[string]*corev1.Event{}, processing: map[string]bool{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// add queues event under key, replacing a waiting version of the same key.
// It returns false, leaving the queue unchanged, when the key is new and
// the queue is full.
func (q *queue) add(key string, event *corev1.Event) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, waiting := q.items[key]; waiting {
		q.items[key] = event
		return true
	}
	if len(q.items) >= q.max {
		return false
	}
	q.items[key] = event
	if !q.processing[key] {
		q.order = append(q.order, key)
		q.cond.Signal()
	}
	queueLength.Set(float64(len(q.items)))
	return true
}

// get blocks until a key is ready and hands it out; the caller must call
// done with the key. ok is false once the queue is shut down.
func (q *queue) get() (key string, event *corev1.Event, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.order) == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return "", nil, false
	}
	key = q.order[0]
	q.order[0] = ""
	q.order = q.order[1:]
	event = q.items[key]
	delete(q.items, key)
	q.processing[key] = true
	queueLength.Set(float64(len(q.items)))
	return key, event, true
}

// done ends the processing of key; a version that arrived meanwhile
// becomes ready.
func (q *queue) done(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, key)
	if _, waiting := q.items[key]; waiting {
		q.order = append(q.order, key)
		q.cond.Signal()
	}
}

// len is how many keys wait.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// shutDown wakes every get, which then returns ok false.
func (q *queue) shutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}
