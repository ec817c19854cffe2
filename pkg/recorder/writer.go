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

package recorder

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record/util"
)

// Series states; events.k8s.io/v1 of k8s.io/api has no field for them, so
// they travel in a JSON merge patch that kube-apiserver ignores.
const (
	stateOngoing  = "Ongoing"
	stateFinished = "Finished"
)

// write is one API call, prepared under the lock from an entry.
type write struct {
	entry        *entry
	kind         string
	event        *eventsv1.Event // for a create
	namespace    string
	name         string
	count        int32
	lastObserved time.Time
}

// writeLoop restores the recorders' series, then writes the queue, one
// call at a time, until ctx ends or, after Shutdown, the queue is empty.
func (b *Broadcaster) writeLoop(ctx context.Context) {
	for ctx.Err() == nil {
		if id, ok := b.nextRestore(); ok {
			if delay, retry := b.restore(ctx, id); retry {
				b.backoff(ctx, delay)
			}
			continue
		}
		w, ok := b.nextWrite()
		if !ok {
			if b.isShutdown() {
				return
			}
			select {
			case <-ctx.Done():
			case <-b.wake:
			case <-b.shutdownCh:
			}
			continue
		}
		err := b.send(ctx, w)
		if delay, retry := b.written(w, err); retry {
			b.backoff(ctx, delay)
		}
	}
}

func (b *Broadcaster) isShutdown() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.shutdown
}

// backoff waits delay on the clock, unless ctx ends or Shutdown comes.
func (b *Broadcaster) backoff(ctx context.Context, delay time.Duration) {
	select {
	case <-ctx.Done():
	case <-b.shutdownCh:
	case <-b.opts.Clock.After(delay):
	}
}

// nextWrite takes the oldest entry with a write to do, dropping from the
// queue those left with none.
func (b *Broadcaster) nextWrite() (write, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.queue) > 0 {
		e := b.queue[0]
		kind := e.nextWrite()
		if kind == "" {
			e.queued = false
			e.heartbeat, e.flush = false, false
			b.queue = b.queue[1:]
			continue
		}
		// The write carries the count as it is now: requests made while it
		// is in flight are new ones, and the next heartbeat is due from now.
		e.inFlight = true
		e.lastWrite = b.opts.Clock.Now()
		switch kind {
		case writeSeriesStart:
			e.started = true
		case writeHeartbeat:
			e.heartbeat = false
		case writeFlush:
			e.flush = false
		}
		w := write{entry: e, kind: kind, namespace: e.event.Namespace, name: e.event.Name, count: e.count, lastObserved: e.lastObserved}
		if kind == writeCreate {
			w.event = e.event.DeepCopy()
			w.event.Series = nil
		}
		return w, true
	}
	return write{}, false
}

// send makes the call. Retries are the writer's (backoff with jitter on
// the injected clock, Retry-After honored, bounded buffer), so the REST
// client's own retry of 429 and Retry-After, which sleeps in place up to
// ten times, is turned off with MaxRetries(0).
func (b *Broadcaster) send(ctx context.Context, w write) error {
	if w.kind == writeCreate {
		return b.client.Post().Namespace(w.namespace).Resource("events").MaxRetries(0).
			Body(w.event).Do(ctx).Error()
	}
	state := stateOngoing
	if w.kind == writeFinish {
		state = stateFinished
	}
	patch, err := json.Marshal(map[string]any{"series": map[string]any{
		"count":            w.count,
		"lastObservedTime": metav1.NewMicroTime(w.lastObserved),
		"state":            state,
	}})
	if err != nil {
		return err
	}
	// fieldValidation=Ignore: kube-apiserver drops series.state silently
	// instead of answering with a warning on every write.
	return b.client.Patch(types.MergePatchType).Namespace(w.namespace).Resource("events").Name(w.name).
		Param("fieldValidation", "Ignore").MaxRetries(0).Body(patch).Do(ctx).Error()
}

// written applies the outcome of w; it says whether to back off, and how long.
func (b *Broadcaster) written(w write, err error) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := w.entry
	e.inFlight = false
	switch {
	case err == nil:
		b.delays = b.opts.backoff()
		writesTotal.WithLabelValues(w.kind).Inc()
		switch w.kind {
		case writeCreate:
			e.created, e.written = true, 1
		case writeFinish:
			e.finished, e.written = true, w.count
		default:
			e.written = w.count
		}
		return 0, false
	case w.kind != writeCreate && apierrors.IsNotFound(err):
		// Gone (its TTL ran out, say): create it again, then its series.
		b.delays = b.opts.backoff()
		e.created, e.started = false, false
		return 0, false
	case w.kind == writeCreate && apierrors.IsAlreadyExists(err):
		// The name is taken: take another one.
		b.delays = b.opts.backoff()
		e.event.Name = util.GenerateEventName(e.event.Regarding.Name, b.nameSuffixLocked(b.opts.Clock.Now()))
		return 0, false
	}
	if reason, delay, retry := b.retryable(err); retry {
		if b.shutdown {
			b.removeLocked(e)
			b.dropLocked(1, "shutdown")
			return 0, false
		}
		backoffsTotal.WithLabelValues(reason).Inc()
		switch w.kind { // still to do
		case writeSeriesStart:
			e.started = false
		case writeHeartbeat:
			e.heartbeat = true
		case writeFlush:
			e.flush = true
		}
		b.logger.V(2).Info("Writing event failed; backing off", "event", klog2Ref(w), "kind", w.kind, "err", err, "delay", delay)
		return delay, true
	}
	b.logger.Error(err, "Server rejected event write (will not retry)", "event", klog2Ref(w), "kind", w.kind)
	b.removeLocked(e)
	if b.series[e.key] == e {
		delete(b.series, e.key)
	}
	b.dropLocked(1, "rejected")
	return 0, false
}

// removeLocked takes e out of the queue with its waiting writes.
func (b *Broadcaster) removeLocked(e *entry) {
	for i, q := range b.queue {
		if q == e {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			break
		}
	}
	b.abandonLocked(e)
}

// retryable classifies err: 429 (throttled), 5xx (server_error) and
// transport errors (unreachable) are retried after the next step of the
// exponential backoff (with jitter), never before the server's Retry-After.
// The caller holds b.mu or is the writer, the backoff's only user.
func (b *Broadcaster) retryable(err error) (reason string, delay time.Duration, retry bool) {
	var status apierrors.APIStatus
	switch {
	case apierrors.IsTooManyRequests(err):
		reason = "throttled"
	case errors.As(err, &status):
		if status.Status().Code < 500 {
			return "", 0, false
		}
		reason = "server_error"
	default:
		reason = "unreachable"
	}
	delay = b.delays.Step()
	if seconds, ok := apierrors.SuggestsClientDelay(err); ok {
		if after := time.Duration(seconds) * time.Second; after > delay {
			delay = wait.Jitter(after, backoffJitter)
		}
	}
	return reason, delay, true
}

// klog2Ref names w's event in logs.
func klog2Ref(w write) string {
	return w.namespace + "/" + w.name
}
