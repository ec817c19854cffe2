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

// Package mirror copies kube-apiserver's core/v1 Events into the events
// store, so that every version this server serves (and every field
// selector) sees what kubelets, schedulers and controllers keep writing to
// kube-apiserver. The README's "Mirroring cluster events" section states
// the contract; in short:
//
//   - A reader lists the upstream events page by page (client-go's pager,
//     Options.PageSize), then watches from the list's resourceVersion
//     (client-go's RetryWatcher resumes a broken watch) and lists again
//     after 410 Gone, with the backoff of client-go's Reflector.
//   - It records the latest version of each event in a bounded map and
//     queues its namespace/name key in a client-go workqueue; workers write
//     the latest version of each key they get. When Options.MaxPending
//     events are pending, the reader stops reading until a write frees one:
//     memory stays flat for a list of any size, and nothing is dropped.
//   - A write that fails is retried with the workqueue's exponential
//     backoff (Options.RetryBaseDelay up to RetryMaxDelay) until it succeeds
//     or the event is deleted upstream; only events our validation refuses
//     are dropped, counted and logged with the reason.
//   - Writes are upserts by namespace/name, labeled LabelMirroredFrom and
//     annotated with the upstream uid and resourceVersion; an event already
//     mirrored at its upstream resourceVersion is not written again, so a
//     relist (restart, failover, 410) rewrites nothing.
//   - Writes skip admission (kube-apiserver already admitted the event) but
//     go through the store's strategy and the legacy core/v1 validation.
package mirror

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/controller/health"
)

const (
	// LabelMirroredFrom marks an event the mirror wrote; its value names
	// the source. Upstream events carrying it are not read (no loops).
	LabelMirroredFrom = "events-apiserver.k8s.io/mirrored-from"
	// SourceKubeAPIServer is LabelMirroredFrom's value.
	SourceKubeAPIServer = "kube-apiserver"
	// AnnotationUID is the upstream event's uid.
	AnnotationUID = "events-apiserver.k8s.io/upstream-uid"
	// AnnotationResourceVersion is the upstream event's resourceVersion at
	// the mirror's last write.
	AnnotationResourceVersion = "events-apiserver.k8s.io/upstream-resource-version"

	// Name is the mirror's name among the server's controllers.
	Name = "mirror"
	// queueName names the workqueue in its metrics (workqueue_*{name=...}).
	queueName = "events_mirror"
)

// Defaults of Options, sized for 500 upstream events per second sustained
// (a 50k-pod churn) on 2 cores, with room to catch up after a relist.
const (
	DefaultWorkers        = 8
	DefaultQPS            = 1000
	DefaultBurst          = 1000
	DefaultMaxPending     = 10000
	DefaultPageSize       = 500
	DefaultRetryBaseDelay = 100 * time.Millisecond
	DefaultRetryMaxDelay  = 30 * time.Second
)

// relistBackoff spaces the lists after failures: 1s doubling up to 30s,
// started over every relistBackoffReset.
var relistBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 6, Cap: 30 * time.Second}

// relistBackoffReset is client-go's Reflector's: a mirror that listed and
// watched for that long starts its backoff over.
const relistBackoffReset = 2 * time.Minute

// Store is the part of the events registry store the mirror writes to;
// the server's *registry/event.REST.
type Store interface {
	rest.Getter
	rest.Creater //nolint:misspell // k8s.io/apiserver's name
	rest.Updater
}

// Options bound the mirror's cost.
type Options struct {
	// Workers is how many writes run at once.
	Workers int
	// QPS and Burst limit the writes into the store.
	QPS   float32
	Burst int
	// MaxPending is how many upstream events may wait to be written; the
	// reader pauses while that many wait.
	MaxPending int
	// PageSize is how many events one list call returns.
	PageSize int64
	// RetryBaseDelay is the wait before retrying a failed write, doubled
	// at each further failure of the same event, up to RetryMaxDelay.
	RetryBaseDelay, RetryMaxDelay time.Duration
}

// Defaulted returns o with zero fields set to the defaults.
func (o Options) Defaulted() Options {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.QPS <= 0 {
		o.QPS = DefaultQPS
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.RetryBaseDelay <= 0 {
		o.RetryBaseDelay = DefaultRetryBaseDelay
	}
	if o.RetryMaxDelay <= 0 {
		o.RetryMaxDelay = DefaultRetryMaxDelay
	}
	return o
}

// Config is what the server needs to build a mirror.
type Config struct {
	// Upstream reaches the kube-apiserver to mirror. The identity needs
	// list and watch of events in all namespaces.
	Upstream *restclient.Config
	Options
}

// Mirror copies upstream events into a Store. It is one of the server's
// controllers (pkg/apiserver runs it on the elected replica only).
type Mirror struct {
	events  typedcorev1.EventInterface
	store   Store
	decoder runtime.Decoder
	options Options
	clock   clock.WithTicker
	limiter flowcontrol.RateLimiter
	// health is its report: work is the pending events, progress a write,
	// the dependencies kube-apiserver (lists and watches) and the store.
	health *health.Tracker
}

// New returns a mirror reading with client and writing to store. decoder
// must decode core/v1 Event JSON into the internal core.Event (the
// server's Codecs.UniversalDecoder()). A nil clock is the real one.
func New(client kubernetes.Interface, store Store, decoder runtime.Decoder, o Options, clk clock.WithTicker) *Mirror {
	registerMetrics()
	o = o.Defaulted()
	if clk == nil {
		clk = clock.RealClock{}
	}
	m := &Mirror{store: store, decoder: decoder, options: o, clock: clk,
		limiter: flowcontrol.NewTokenBucketRateLimiterWithClock(o.QPS, o.Burst, clk),
		health:  health.New(Name, clk)}
	if client != nil {
		m.events = client.CoreV1().Events(metav1.NamespaceAll)
	}
	return m
}

// NewForConfig builds the upstream client of c (protobuf, no client-side
// rate limit: the mirror limits its writes, not its reads) and the mirror.
func NewForConfig(c Config, store Store, decoder runtime.Decoder) (*Mirror, error) {
	upstream := restclient.CopyConfig(c.Upstream)
	upstream.ContentType = runtime.ContentTypeProtobuf
	upstream.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	upstream.QPS, upstream.Burst = -1, -1
	client, err := kubernetes.NewForConfig(upstream)
	if err != nil {
		return nil, fmt.Errorf("mirror: %w", err)
	}
	return New(client, store, decoder, c.Options, nil), nil
}

// Name names the mirror among the server's controllers.
func (m *Mirror) Name() string { return Name }

// Health is the mirror's report (pkg/controller/health): a kube-apiserver
// that cannot be listed or watched, or a store that refuses writes, is a
// dependency outage it waits out; only a mirror with events pending that
// writes none while both answer is wedged.
func (m *Mirror) Health() *health.Tracker { return m.health }

// Run mirrors until ctx ends, then waits for the writes in flight: once it
// returns, the mirror writes nothing more. It also returns, logging why,
// when it finds that there is nothing to mirror (ErrSharedStore).
func (m *Mirror) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	logger.Info("Mirroring kube-apiserver's events", "workers", m.options.Workers, "qps", m.options.QPS,
		"maxPending", m.options.MaxPending, "pageSize", m.options.PageSize)

	r := &run{
		Mirror:  m,
		pending: newPending(m.options.MaxPending),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](m.options.RetryBaseDelay, m.options.RetryMaxDelay),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: queueName, Clock: m.clock}),
		cancel: cancel,
	}
	var workers sync.WaitGroup
	for range m.options.Workers {
		workers.Go(func() {
			for r.processNext(ctx) {
			}
		})
	}
	r.read(ctx)
	r.queue.ShutDown()
	workers.Wait()
	pendingEvents.Set(0)
	if cause := context.Cause(ctx); cause != context.Canceled && cause != nil {
		logger.Error(cause, "Stopped mirroring kube-apiserver's events")
		return
	}
	logger.Info("Stopped mirroring kube-apiserver's events")
}

// run is the state of one Run: the workqueue of keys and the latest
// version of each.
type run struct {
	*Mirror
	pending *pending
	queue   workqueue.TypedRateLimitingInterface[string]
	cancel  context.CancelCauseFunc
}

// notMirrored selects the upstream events the mirror did not write itself.
var notMirrored = "!" + LabelMirroredFrom

// read lists and watches until ctx ends, listing again whenever the watch
// cannot go on, after a backoff (relistBackoff, started over every
// relistBackoffReset), as client-go's Reflector does.
func (r *run) read(ctx context.Context) {
	logger := klog.FromContext(ctx)
	_ = relistBackoff.DelayWithReset(r.clock, relistBackoffReset).Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		resourceVersion, err := r.list(ctx)
		if err == nil {
			err = r.watch(ctx, resourceVersion)
		} else if ctx.Err() == nil {
			r.health.Failed(ctx, err, relistBackoff.Cap)
		}
		if ctx.Err() == nil {
			logger.Info("Listing kube-apiserver's events again", "reason", err)
		}
		return false, nil
	})
}

// list queues every upstream event, one page at a time (client-go's
// pager, reading at most one page ahead of the queue, so that memory stays
// flat for a list of any size), and returns the list's resourceVersion. A
// continue token that expired (the list took longer than kube-apiserver's
// compaction interval) ends it with 410 Gone; the next list starts over,
// and skips what is already mirrored.
func (r *run) list(ctx context.Context) (string, error) {
	relistsTotal.Inc()
	// Every page carries the list's resourceVersion; read only once the
	// pager returned, after its last page.
	var resourceVersion string
	lister := pager.New(func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
		options.LabelSelector = notMirrored
		page, err := r.events.List(ctx, options)
		if err != nil {
			return nil, err
		}
		r.health.Answered(ctx)
		resourceVersion = page.ResourceVersion
		return page, nil
	})
	lister.PageSize = r.options.PageSize
	lister.PageBufferSize = 0
	// WithAlloc: each event its own copy, so that a pending event does not
	// hold its whole page.
	err := lister.EachListItemWithAlloc(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		event, ok := obj.(*corev1.Event)
		if !ok {
			return fmt.Errorf("listing events: got a %T", obj)
		}
		if !r.offer(ctx, event, r.clock.Now()) {
			return ctx.Err()
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("listing events: %w", err)
	}
	return resourceVersion, nil
}

// watch queues every change from resourceVersion on until ctx ends or the
// watch cannot be resumed (410 Gone, or an error RetryWatcher gives up on).
func (r *run) watch(ctx context.Context, resourceVersion string) error {
	watcher, err := watchtools.NewRetryWatcherWithContext(ctx, resourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			options.LabelSelector = notMirrored
			w, err := r.events.Watch(ctx, options)
			if err != nil {
				// RetryWatcher calls again after its own backoff.
				r.health.Failed(ctx, fmt.Errorf("watching events: %w", err), relistBackoff.Cap)
				return nil, err
			}
			r.health.Answered(ctx)
			return w, nil
		},
	})
	if err != nil {
		return err
	}
	defer watcher.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case change, ok := <-watcher.ResultChan():
			if !ok {
				return fmt.Errorf("watch from resourceVersion %s ended", resourceVersion)
			}
			if change.Type == watch.Error {
				return fmt.Errorf("watching events: %w", apierrorsFromObject(change.Object))
			}
			event, ok := change.Object.(*corev1.Event)
			if !ok {
				continue
			}
			switch change.Type {
			case watch.Added:
				// Stored when created; never after it was delivered.
				storedAt := r.clock.Now()
				if created := event.CreationTimestamp.Time; !created.IsZero() && created.Before(storedAt) {
					storedAt = created
				}
				if !r.offer(ctx, event, storedAt) {
					return ctx.Err()
				}
			case watch.Modified:
				if !r.offer(ctx, event, r.clock.Now()) {
					return ctx.Err()
				}
			case watch.Deleted:
				// Gone upstream: a write still waiting is abandoned; our
				// copy, if any, stays until our own TTL.
				r.pending.forget(key(event))
				r.settle()
			}
		}
	}
}

func key(event *corev1.Event) string { return event.Namespace + "/" + event.Name }

// offer makes event the latest version of its key and queues the key,
// waiting for room when MaxPending events are pending. It returns false if
// ctx ended first.
func (r *run) offer(ctx context.Context, event *corev1.Event, storedAt time.Time) bool {
	k := key(event)
	if r.pending.full() {
		paused := r.clock.Now()
		defer func() { pausedSecondsTotal.Add(r.clock.Since(paused).Seconds()) }()
	}
	if !r.pending.put(ctx, k, event, storedAt) {
		return false
	}
	r.health.Busy()
	r.queue.Add(k)
	return true
}

// settle reports the mirror idle once no event is pending.
func (r *run) settle() {
	if r.pending.len() == 0 {
		r.health.Idle()
	}
}

// processNext writes the latest version of the next key; false once the
// queue is shut down.
func (r *run) processNext(ctx context.Context) bool {
	k, shutdown := r.queue.Get()
	if shutdown {
		return false
	}
	defer r.queue.Done(k)
	defer r.settle()
	if ctx.Err() != nil {
		// Stopping: write nothing more; the next run lists again.
		return true
	}
	latest, ok := r.pending.get(k)
	if !ok {
		// Deleted upstream while waiting.
		r.queue.Forget(k)
		return true
	}
	wrote, err := r.Sync(ctx, latest.event)
	logger := klog.FromContext(ctx)
	switch {
	case err == nil:
		if wrote {
			lagSeconds.Observe(r.clock.Since(latest.since).Seconds())
		}
		r.queue.Forget(k)
		r.pending.done(k, latest)
		r.health.Progress(ctx)
	case ctx.Err() != nil:
	case err == ErrSharedStore:
		r.cancel(err)
	case isRefusal(err):
		droppedTotal.WithLabelValues(DropInvalid).Inc()
		logger.Info("Not mirroring an upstream event refused by validation", "event", k,
			"resourceVersion", latest.event.ResourceVersion, "reason", err.Error())
		r.queue.Forget(k)
		r.pending.done(k, latest)
		r.health.Progress(ctx)
	default:
		r.health.Failed(ctx, fmt.Errorf("writing an event into the store: %w", err), r.options.RetryMaxDelay)
		logger.V(2).Info("Writing an upstream event failed, retrying", "event", k,
			"attempt", r.queue.NumRequeues(k)+1, "err", err)
		r.queue.AddRateLimited(k)
	}
	return true
}
