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
	"errors"
	"sync"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	typedeventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/klog/v2"

	"github.com/kube-events/events-apiserver/pkg/recorder/seriesid"
)

// Broadcaster turns the occurrences its recorders report into event
// series and writes them with as few API calls as the series rules allow.
// It implements client-go's events.EventBroadcaster: NewRecorder,
// StartRecordingToSinkWithContext, Shutdown (which flushes), and the
// watcher and logging hooks.
type Broadcaster struct {
	opts     Options
	client   rest.Interface
	watchers *watch.Broadcaster

	mu             sync.Mutex
	series         map[seriesid.Key]*entry // live events by isomorphic key
	queue          []*entry                // events with a write waiting, oldest first; at most opts.BufferSize
	identities     map[identity]bool       // recorders' identities; true once restored
	restores       []identity              // identities still to restore, in order
	lastName       int64                   // last time suffix given to an event name
	delays         wait.Backoff            // delays after consecutive failed calls; reset by a success
	drops          int                     // drops not logged yet
	lastDropReason string
	lastDropAt     time.Time // when a drop was last logged
	logger         klog.Logger
	shutdown       bool
	cancel         context.CancelFunc

	wake       chan struct{} // a write, restore or shutdown is waiting
	shutdownCh chan struct{} // closed by Shutdown
	done       chan struct{} // closed when the writer has returned
}

var _ events.EventBroadcaster = &Broadcaster{}

// identity is who reports: reportingController and reportingInstance.
type identity struct {
	controller, instance string
}

// entry is one event on (or on its way to) the server and what is known
// of its series locally.
type entry struct {
	key          seriesid.Key
	event        *eventsv1.Event // the first occurrence: name, namespace, note, eventTime
	count        int32           // occurrences so far; 1 is a singleton
	lastObserved time.Time
	created      bool      // the event exists on the server
	started      bool      // the server has its series
	written      int32     // the count last written
	lastWrite    time.Time // when its last write was taken up

	// writes requested besides create and series start
	heartbeat, flush, finish bool
	finished                 bool // the final write is done
	queued, inFlight         bool
}

// nextWrite is the kind of the write e needs now, or "".
func (e *entry) nextWrite() string {
	switch {
	case e.finished:
		return ""
	case !e.created:
		return writeCreate
	case e.count < 2:
		return "" // a singleton is never patched
	case e.finish:
		return writeFinish
	case !e.started:
		return writeSeriesStart
	case e.heartbeat:
		return writeHeartbeat
	case e.flush && e.count > e.written:
		return writeFlush
	}
	return ""
}

// NewBroadcaster returns a Broadcaster writing through client's
// events.k8s.io/v1 REST client (client.RESTClient(), so a real clientset,
// not a fake). It replaces
//
//	events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
//
// with
//
//	recorder.NewBroadcaster(client.EventsV1(), recorder.Options{})
func NewBroadcaster(client typedeventsv1.EventsV1Interface, opts Options) *Broadcaster {
	RegisterMetrics()
	opts = opts.withDefaults()
	return &Broadcaster{
		opts:       opts,
		delays:     opts.backoff(),
		client:     client.RESTClient(),
		watchers:   watch.NewBroadcaster(defaultBufferSize, watch.DropIfChannelFull),
		series:     map[seriesid.Key]*entry{},
		identities: map[identity]bool{},
		logger:     klog.Background(),
		wake:       make(chan struct{}, 1),
		shutdownCh: make(chan struct{}),
		done:       make(chan struct{}),
	}
}

// NewRecorder returns a recorder reporting as reportingController, with
// the ReportingInstance of the options. Its earlier events are looked up
// (once per identity) before any of its writes.
func (b *Broadcaster) NewRecorder(scheme *runtime.Scheme, reportingController string) events.EventRecorderLogger {
	id := identity{controller: reportingController, instance: b.opts.reportingInstance(reportingController)}
	b.mu.Lock()
	if _, known := b.identities[id]; !known {
		b.identities[id] = false
		b.restores = append(b.restores, id)
	}
	b.mu.Unlock()
	b.signal()
	return &eventRecorder{broadcaster: b, scheme: scheme, identity: id, logger: klog.Background()}
}

// StartRecordingToSinkWithContext starts writing: first it restores the
// series of every recorder, then it writes until ctx ends (without a
// flush) or Shutdown (with one). It may be called once.
func (b *Broadcaster) StartRecordingToSinkWithContext(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancel != nil || b.shutdown {
		return errors.New("event broadcaster already started or shut down")
	}
	b.logger = klog.FromContext(ctx)
	ctx, b.cancel = context.WithCancel(ctx)
	go b.sweepLoop(ctx)
	go func() {
		defer close(b.done)
		defer utilruntime.HandleCrashWithLogger(b.logger)
		b.writeLoop(ctx)
	}()
	return nil
}

// Restored says whether the earlier events of every recorder made so far
// have been looked up and their live series taken up again, like an
// informer's HasSynced. Occurrences recorded before then are counted all
// the same and join the series they continue.
func (b *Broadcaster) Restored() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.restores) == 0
}

// StartRecordingToSink is StartRecordingToSinkWithContext until stopCh closes.
//
// Deprecated: use StartRecordingToSinkWithContext.
func (b *Broadcaster) StartRecordingToSink(stopCh <-chan struct{}) {
	if err := b.StartRecordingToSinkWithContext(wait.ContextForChannel(stopCh)); err != nil {
		klog.Background().Error(err, "Failed to start recording to sink")
	}
}

// Shutdown writes what is pending, the current count of every live series
// included (so that a restart continues it exactly), each write tried once
// and all within Options.ShutdownTimeout, then stops. Writes not done are
// dropped and counted. Series are not finished: they continue after a
// restart.
func (b *Broadcaster) Shutdown() {
	b.mu.Lock()
	if b.shutdown {
		b.mu.Unlock()
		return
	}
	b.shutdown = true
	for _, e := range b.series {
		if e.created && e.count > e.written {
			e.flush = true
			b.enqueueLocked(e)
		}
	}
	started := b.cancel != nil
	b.mu.Unlock()
	close(b.shutdownCh)
	if started {
		timeout := time.NewTimer(b.opts.ShutdownTimeout)
		defer timeout.Stop()
		select {
		case <-b.done:
		case <-timeout.C:
			b.cancel()
			<-b.done
		}
		b.cancel()
	}
	b.mu.Lock()
	pending := 0
	for _, e := range b.queue {
		if e.nextWrite() != "" {
			pending++
		}
	}
	b.dropLocked(pending, "shutdown")
	b.queue = nil
	b.logDropsLocked(true)
	b.mu.Unlock()
	b.watchers.Shutdown()
}

// StartEventWatcher calls eventHandler with every occurrence recorded (a
// copy each, dropped when the handler falls behind).
func (b *Broadcaster) StartEventWatcher(eventHandler func(event runtime.Object)) (func(), error) {
	watcher, err := b.watchers.Watch()
	if err != nil {
		return nil, err
	}
	go func() {
		defer utilruntime.HandleCrash()
		for ev := range watcher.ResultChan() {
			eventHandler(ev.Object)
		}
	}()
	return watcher.Stop, nil
}

// StartLogging logs every occurrence recorded.
func (b *Broadcaster) StartLogging(logger klog.Logger) (func(), error) {
	return b.StartEventWatcher(func(obj runtime.Object) {
		event, ok := obj.(*eventsv1.Event)
		if !ok {
			return
		}
		logger.Info("Event occurred", "object", klog.KRef(event.Regarding.Namespace, event.Regarding.Name), "kind", event.Regarding.Kind, "apiVersion", event.Regarding.APIVersion, "type", event.Type, "reason", event.Reason, "action", event.Action, "note", event.Note)
	})
}

// StartStructuredLogging logs every occurrence at verbosity.
//
// Deprecated: use StartLogging.
func (b *Broadcaster) StartStructuredLogging(verbosity klog.Level) func() {
	stop, err := b.StartLogging(klog.Background().V(int(verbosity)))
	if err != nil {
		return func() {}
	}
	return stop
}

// observe counts one occurrence: a new event, the start of a series, or
// nothing but a local count.
func (b *Broadcaster) observe(event *eventsv1.Event) {
	key := seriesid.OfEventsV1(event)
	b.mu.Lock()
	now := b.opts.Clock.Now()
	e := b.series[key]
	if e != nil && now.Sub(e.lastObserved) >= b.opts.FinishAfter {
		// Ended, and the sweep has not got to it yet.
		b.endLocked(e)
		e = nil
	}
	if e == nil {
		event.EventTime = metav1.NewMicroTime(now)
		event.Name = util.GenerateEventName(event.Regarding.Name, b.nameSuffixLocked(now))
		e = &entry{key: key, event: event, count: 1, lastObserved: now}
		b.series[key] = e
		b.enqueueLocked(e)
	} else {
		e.count++
		e.lastObserved = now
		if e.count == 2 {
			b.enqueueLocked(e)
		}
	}
	b.mu.Unlock()
	b.signal()
}

// nameSuffixLocked is a time-based name suffix, unique in this
// broadcaster even when occurrences share a clock reading.
func (b *Broadcaster) nameSuffixLocked(now time.Time) int64 {
	suffix := now.UnixNano()
	if suffix <= b.lastName {
		suffix = b.lastName + 1
	}
	b.lastName = suffix
	return suffix
}

// endLocked forgets e's key (a later occurrence is a new event) and
// finishes its series, if it has one.
func (b *Broadcaster) endLocked(e *entry) {
	if b.series[e.key] == e {
		delete(b.series, e.key)
	}
	if e.count >= 2 {
		e.finish = true
		b.enqueueLocked(e)
	}
}

// sweepLoop requests heartbeats and finishes every SweepInterval.
func (b *Broadcaster) sweepLoop(ctx context.Context) {
	ticker := b.opts.Clock.NewTicker(b.opts.SweepInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.shutdownCh:
			return
		case <-ticker.C():
			b.sweep()
		}
	}
}

func (b *Broadcaster) sweep() {
	b.mu.Lock()
	now := b.opts.Clock.Now()
	for _, e := range b.series {
		switch {
		case now.Sub(e.lastObserved) >= b.opts.FinishAfter:
			b.endLocked(e)
		case e.started && now.Sub(e.lastWrite) >= b.opts.HeartbeatInterval:
			e.heartbeat = true
			b.enqueueLocked(e)
		}
	}
	b.mu.Unlock()
	b.signal()
}

// enqueueLocked puts e at the end of the queue unless it is there already;
// when the queue is full, the oldest waiting write not in flight is dropped.
func (b *Broadcaster) enqueueLocked(e *entry) {
	if e.queued {
		return
	}
	if len(b.queue) >= b.opts.BufferSize {
		for i, victim := range b.queue {
			if victim.inFlight {
				continue
			}
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			b.abandonLocked(victim)
			b.dropLocked(1, "buffer_full")
			break
		}
	}
	e.queued = true
	b.queue = append(b.queue, e)
}

// abandonLocked gives up e's waiting writes. An event never created is
// forgotten, so its next occurrence creates it; a created one keeps its
// series and is written again at its next heartbeat.
func (b *Broadcaster) abandonLocked(e *entry) {
	e.queued = false
	e.flush, e.finish = false, false
	if !e.created && b.series[e.key] == e {
		delete(b.series, e.key)
	}
	if e.created && !e.started && e.count >= 2 {
		// The series start was dropped: write it at the next heartbeat.
		e.started, e.written = true, 1
	}
}

// dropLocked counts n dropped writes and logs them (at most once per
// 10s: the count since the last line).
func (b *Broadcaster) dropLocked(n int, reason string) {
	if n == 0 {
		return
	}
	droppedTotal.WithLabelValues(reason).Add(float64(n))
	b.drops += n
	b.lastDropReason = reason
	b.logDropsLocked(false)
}

func (b *Broadcaster) logDropsLocked(force bool) {
	now := b.opts.Clock.Now()
	if b.drops == 0 || (!force && !b.lastDropAt.IsZero() && now.Sub(b.lastDropAt) < 10*time.Second) {
		return
	}
	b.logger.Info("Dropped event writes", "dropped", b.drops, "lastReason", b.lastDropReason, "bufferSize", b.opts.BufferSize)
	b.drops = 0
	b.lastDropAt = now
}

// signal wakes the writer.
func (b *Broadcaster) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}
