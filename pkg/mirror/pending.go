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
)

// pending holds the latest upstream version of every key waiting in the
// mirror's workqueue (queued, being written, or waiting for a retry). The
// queue holds keys only; the object a worker writes is read from here when
// the key comes up, so an event changed again while it waits is written
// once, in its latest version.
//
// It is bounded: at most max keys are pending. put blocks for a new key
// while max keys are pending, until a worker is done with one or ctx ends,
// which slows the reader of kube-apiserver down instead of losing events.
//
// Why keep the objects rather than read them from kube-apiserver when a key
// comes up: a GET per write would double the mirror's load on
// kube-apiserver (the list and the watch already delivered every version),
// and at most max objects (max * ~1 KiB) are held.
type pending struct {
	mu     sync.Mutex
	latest map[string]*pendingEvent
	// slots has one element per pending key; its capacity is the bound.
	slots chan struct{}
}

// pendingEvent is the latest upstream version of a key, with the time its
// oldest change not yet mirrored was stored upstream (the start of the lag).
type pendingEvent struct {
	event *corev1.Event
	since time.Time
}

func newPending(max int) *pending {
	return &pending{latest: map[string]*pendingEvent{}, slots: make(chan struct{}, max)}
}

// put records event as the latest version of key, stored upstream at
// storedAt. A key already pending is replaced in place and keeps its
// since; a new key waits for room. It returns false, recording nothing, if
// ctx ended first. Only one goroutine (the reader) may call put.
func (p *pending) put(ctx context.Context, key string, event *corev1.Event, storedAt time.Time) bool {
	p.mu.Lock()
	if old, ok := p.latest[key]; ok {
		p.latest[key] = &pendingEvent{event: event, since: old.since}
		p.mu.Unlock()
		return true
	}
	p.mu.Unlock()
	// Only the reader adds keys, so key is still absent once room is made.
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latest[key] = &pendingEvent{event: event, since: storedAt}
	pendingEvents.Set(float64(len(p.latest)))
	return true
}

// full tells whether a new key would have to wait for room.
func (p *pending) full() bool {
	return len(p.slots) == cap(p.slots)
}

// get returns the latest version of key, if it is pending.
func (p *pending) get(key string) (*pendingEvent, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.latest[key]
	return e, ok
}

// done removes key once written (or refused) in version e; a newer version
// that arrived meanwhile stays pending.
func (p *pending) done(key string, e *pendingEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.latest[key] == e {
		p.remove(key)
	}
}

// forget removes key whatever its version: the event is gone upstream.
func (p *pending) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.latest[key]; ok {
		p.remove(key)
	}
}

// remove drops a pending key and frees its slot; p.mu is held.
func (p *pending) remove(key string) {
	delete(p.latest, key)
	<-p.slots
	pendingEvents.Set(float64(len(p.latest)))
}

// len is how many keys are pending.
func (p *pending) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.latest)
}
