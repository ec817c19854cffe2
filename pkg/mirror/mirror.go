// Package mirror copies kube-apiserver's core/v1 Events into the events
// store, so that every version this server serves (and every field
// selector) sees what kubelets, schedulers and controllers keep writing to
// kube-apiserver.
//
// A client-go Reflector lists and watches core/v1 events of all namespaces
// (watch-list where the server supports it; it resumes from its last
// resourceVersion and relists after 410 Gone) into a store of this package
// that only queues namespace/name keys with their latest upstream version
// in a bounded queue. Workers drain the queue under a rate limit and upsert
// into the registry store in-process. Semantics:
//
//   - Upsert by namespace/name: create when absent, else update (with our
//     resourceVersion). Every mirrored event carries the label
//     LabelMirroredFrom=kube-apiserver and the annotations AnnotationUID and
//     AnnotationResourceVersion with its upstream uid and resourceVersion.
//   - A stored event whose annotations already name the upstream uid and
//     resourceVersion is not written again: a restart lists everything
//     again and rewrites nothing.
//   - An upstream delete (kube-apiserver's TTL) deletes nothing here: our
//     own --event-ttl applies, counted from our last write.
//   - Nothing is ever written upstream, and upstream events that carry
//     LabelMirroredFrom are skipped, so no loop can form.
//   - The reflector never blocks: when the queue is full, an event for a
//     key not already queued is dropped, counted and logged (at most one
//     line per 10s). A write that fails other than by validation is retried
//     with a backoff (1s, 2s, 4s, 8s) unless a newer version arrives first,
//     and dropped and counted after the last attempt.
//   - Writes skip admission (kube-apiserver already admitted the event) but
//     go through the store's strategy, validated with the legacy core/v1
//     rules, as the event was written.
package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	ourcorev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
)

const (
	// LabelMirroredFrom marks an event the mirror wrote; its value names
	// the source.
	LabelMirroredFrom = "events-apiserver.k8s.io/mirrored-from"
	// SourceKubeAPIServer is LabelMirroredFrom's value.
	SourceKubeAPIServer = "kube-apiserver"
	// AnnotationUID is the upstream event's uid.
	AnnotationUID = "events-apiserver.k8s.io/upstream-uid"
	// AnnotationResourceVersion is the upstream event's resourceVersion at
	// the mirror's last write.
	AnnotationResourceVersion = "events-apiserver.k8s.io/upstream-resource-version"
)

// Defaults of Options.
const (
	DefaultQueueSize = 10000
	DefaultQPS       = 200
	DefaultBurst     = 400
	DefaultWorkers   = 4
	// DefaultMaxAttempts and DefaultRetryBackoff retry a failed write
	// after 1s, 2s, 4s and 8s before giving up on that version.
	DefaultMaxAttempts  = 5
	DefaultRetryBackoff = time.Second
	// dropLogInterval spaces the log lines about dropped events.
	dropLogInterval = 10 * time.Second
)

// Store is the part of the events registry store the mirror writes to;
// the server's *registry/event.REST.
type Store interface {
	rest.Getter
	rest.Creater
	rest.Updater
}

// Options bound the mirror's cost.
type Options struct {
	// QueueSize is how many distinct events may wait to be written.
	QueueSize int
	// QPS and Burst limit the writes into the store.
	QPS   float64
	Burst int
	// Workers is how many writes run at once.
	Workers int
	// MaxAttempts is how many times a version of an event is written
	// before it is dropped when its writes fail (other than validation).
	MaxAttempts int
	// RetryBackoff is the wait before the first retry, doubled for each
	// further one.
	RetryBackoff time.Duration
}

// Defaulted returns o with zero fields set to the defaults.
func (o Options) Defaulted() Options {
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.QPS <= 0 {
		o.QPS = DefaultQPS
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = DefaultRetryBackoff
	}
	return o
}

// Mirror copies upstream events into a Store.
type Mirror struct {
	client  kubernetes.Interface
	store   Store
	decoder runtime.Decoder
	options Options
	queue   *queue
	limiter *rate.Limiter
	now     func() time.Time

	// dropLog limits the log lines about dropped events; droppedSinceLog
	// counts the drops since the last one.
	dropLog         *rate.Limiter
	droppedSinceLog atomic.Int64
}

// New returns a mirror reading with client and writing to store. decoder
// must decode core/v1 Event JSON into the internal core.Event (the
// server's Codecs.UniversalDecoder()).
func New(client kubernetes.Interface, store Store, decoder runtime.Decoder, o Options) *Mirror {
	registerMetrics()
	o = o.Defaulted()
	return &Mirror{
		client:  client,
		store:   store,
		decoder: decoder,
		options: o,
		queue:   newQueue(o.QueueSize),
		limiter: rate.NewLimiter(rate.Limit(o.QPS), o.Burst),
		now:     time.Now,
		dropLog: rate.NewLimiter(rate.Every(dropLogInterval), 1),
	}
}

// Run mirrors until ctx ends, then waits for the workers' writes in flight.
func (m *Mirror) Run(ctx context.Context) {
	klog.InfoS("Mirroring kube-apiserver's events", "queueSize", m.options.QueueSize, "qps", m.options.QPS,
		"burst", m.options.Burst, "workers", m.options.Workers)
	var wg sync.WaitGroup
	for range m.options.Workers {
		wg.Go(func() { m.work(ctx) })
	}
	reflector := cache.NewReflectorWithOptions(m.listWatch(), &corev1.Event{}, reflectorStore{m},
		cache.ReflectorOptions{Name: "events-mirror"})
	reflector.RunWithContext(ctx)
	m.queue.shutDown()
	wg.Wait()
	klog.InfoS("Stopped mirroring kube-apiserver's events")
}

// listWatch lists and watches core/v1 events of all namespaces, counting
// every full list: a list call, or a watch that streams the initial events
// (watch-list).
func (m *Mirror) listWatch() cache.ListerWatcher {
	events := m.client.CoreV1().Events(metav1.NamespaceAll)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			if StartsFullList(options, false) {
				relistsTotal.Inc()
			}
			return events.List(ctx, options)
		},
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			if StartsFullList(options, true) {
				relistsTotal.Inc()
			}
			return events.Watch(ctx, options)
		},
	}
	return cache.ToListWatcherWithWatchListSemantics(lw, m.client)
}

// StartsFullList tells whether a list (watch false) or watch call with
// options starts a full list of the events: a list call that is not the
// continuation of a paginated one, or a watch that streams the initial
// events first (watch-list).
func StartsFullList(options metav1.ListOptions, watch bool) bool {
	if watch {
		return options.SendInitialEvents != nil && *options.SendInitialEvents
	}
	return options.Continue == ""
}

// enqueue queues an upstream event, or counts it dropped when the queue is
// full. Events carrying our label are skipped.
func (m *Mirror) enqueue(obj any) {
	event, ok := obj.(*corev1.Event)
	if !ok {
		return
	}
	if _, ours := event.Labels[LabelMirroredFrom]; ours {
		return
	}
	if !m.queue.add(event.Namespace+"/"+event.Name, event) {
		droppedTotal.WithLabelValues(DropQueueFull).Inc()
		dropped := m.droppedSinceLog.Add(1)
		if m.dropLog.Allow() {
			m.droppedSinceLog.Add(-dropped)
			klog.InfoS("Mirror: queue full, dropping upstream events (they are mirrored on their next upstream change or relist)",
				"dropped", dropped, "queueSize", m.options.QueueSize, "lastDropped", klog.KObj(event))
		}
	}
}

func (m *Mirror) work(ctx context.Context) {
	for {
		key, event, failures, ok := m.queue.get()
		if !ok {
			return
		}
		err := m.Sync(ctx, event)
		switch {
		case err == nil:
			m.queue.done(key)
		case ctx.Err() != nil:
			m.queue.done(key)
			return
		case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
			m.queue.done(key)
			droppedTotal.WithLabelValues(DropInvalid).Inc()
			klog.V(2).InfoS("Mirror: upstream event rejected by validation", "event", key, "err", err)
		case failures+1 >= m.options.MaxAttempts:
			m.queue.done(key)
			droppedTotal.WithLabelValues(DropError).Inc()
			klog.ErrorS(err, "Mirror: writing an upstream event failed, giving up", "event", key, "attempts", failures+1)
		default:
			m.retryLater(ctx, key, event, failures+1, err)
		}
	}
}

// retryLater holds event for a retry after its failures-th failed write,
// waiting RetryBackoff, doubled at each further failure.
func (m *Mirror) retryLater(ctx context.Context, key string, event *corev1.Event, failures int, err error) {
	switch m.queue.failed(key, event) {
	case failureSuperseded:
		return
	case failureQueueFull:
		droppedTotal.WithLabelValues(DropError).Inc()
		klog.ErrorS(err, "Mirror: writing an upstream event failed and the queue has no room to retry it", "event", key)
		return
	}
	delay := m.options.RetryBackoff << (failures - 1)
	klog.V(2).InfoS("Mirror: writing an upstream event failed, retrying", "event", key, "in", delay, "err", err)
	time.AfterFunc(delay, func() {
		if ctx.Err() == nil {
			m.queue.retry(key, event, failures)
		}
	})
}

// Sync upserts one upstream event into the store (what a worker does with
// each queued event), retrying a few times when another write to the same
// event got in between. It waits for the rate limiter before writing.
func (m *Mirror) Sync(ctx context.Context, upstream *corev1.Event) error {
	var err error
	for range 3 {
		if err = m.upsert(ctx, upstream); !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return err
}

func (m *Mirror) upsert(ctx context.Context, upstream *corev1.Event) error {
	ctx = eventregistry.InternalWriteContext(ctx, upstream.Namespace, ourcorev1.SchemeGroupVersion)
	obj, err := m.store.Get(ctx, upstream.Name, &metav1.GetOptions{})
	var existing *core.Event
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	default:
		existing = obj.(*core.Event)
		if Unchanged(existing, upstream) {
			return nil
		}
	}

	event, err := Convert(m.decoder, upstream)
	if err != nil {
		return apierrors.NewInvalid(core.Kind("Event"), upstream.Name, nil)
	}
	if err := m.limiter.Wait(ctx); err != nil {
		return err
	}
	operation := OperationCreate
	if existing == nil {
		_, err = m.store.Create(ctx, event, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	} else {
		operation = OperationUpdate
		event.ResourceVersion = existing.ResourceVersion
		event.UID = existing.UID
		event.CreationTimestamp = existing.CreationTimestamp
		_, _, err = m.store.Update(ctx, event.Name, rest.DefaultUpdatedObjectInfo(event),
			rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	}
	if err != nil {
		return err
	}
	writesTotal.WithLabelValues(operation).Inc()
	lagSeconds.Observe(m.now().Sub(LatestTime(upstream)).Seconds())
	return nil
}

// Unchanged tells whether stored is the mirror of upstream at its current
// resourceVersion, so that writing it again would change nothing.
func Unchanged(stored *core.Event, upstream *corev1.Event) bool {
	return stored.Labels[LabelMirroredFrom] == SourceKubeAPIServer &&
		stored.Annotations[AnnotationUID] == string(upstream.UID) &&
		stored.Annotations[AnnotationResourceVersion] == upstream.ResourceVersion
}

// Convert turns an upstream k8s.io/api core/v1 Event into the internal
// Event the mirror stores: labelled, annotated with its upstream identity,
// and without the server-owned metadata of kube-apiserver (uid,
// resourceVersion, creation time, managed fields), which our store sets.
//
// It goes through JSON and the server's own core/v1 decoding (defaulting
// and conversion to internal), the path a core/v1 write to this server
// takes: our core/v1 type has the JSON names of k8s.io/api's, so nothing
// is copied field by field and a field added to both is carried over
// without a change here. The cost (one marshal and one decode per write,
// a few microseconds) is small next to the etcd write.
func Convert(decoder runtime.Decoder, upstream *corev1.Event) (*core.Event, error) {
	versioned := upstream.DeepCopy()
	versioned.APIVersion, versioned.Kind = "v1", "Event"
	data, err := json.Marshal(versioned)
	if err != nil {
		return nil, err
	}
	obj, err := runtime.Decode(decoder, data)
	if err != nil {
		return nil, fmt.Errorf("decoding upstream event %s/%s: %w", upstream.Namespace, upstream.Name, err)
	}
	event, ok := obj.(*core.Event)
	if !ok {
		return nil, errors.New("decoding an upstream event did not give an internal Event")
	}
	event.TypeMeta = metav1.TypeMeta{}
	event.UID = ""
	event.ResourceVersion = ""
	event.CreationTimestamp = metav1.Time{}
	event.ManagedFields = nil
	event.DeletionTimestamp = nil
	event.DeletionGracePeriodSeconds = nil
	event.Finalizers = nil
	event.OwnerReferences = nil
	event.Generation = 0
	event.GenerateName = ""
	if event.Labels == nil {
		event.Labels = map[string]string{}
	}
	event.Labels[LabelMirroredFrom] = SourceKubeAPIServer
	if event.Annotations == nil {
		event.Annotations = map[string]string{}
	}
	event.Annotations[AnnotationUID] = string(upstream.UID)
	event.Annotations[AnnotationResourceVersion] = upstream.ResourceVersion
	return event, nil
}

// LatestTime is when upstream last happened, as far as it tells: the latest
// of series.lastObservedTime, lastTimestamp, eventTime and creationTimestamp.
func LatestTime(upstream *corev1.Event) time.Time {
	latest := upstream.CreationTimestamp.Time
	for _, t := range []time.Time{upstream.LastTimestamp.Time, upstream.EventTime.Time} {
		if t.After(latest) {
			latest = t
		}
	}
	if upstream.Series != nil && upstream.Series.LastObservedTime.After(latest) {
		latest = upstream.Series.LastObservedTime.Time
	}
	return latest
}

// reflectorStore is the reflector's store: it keeps nothing and queues
// every listed, added and updated event. Deletes are ignored, since an
// upstream delete leaves our copy to our own TTL.
type reflectorStore struct{ m *Mirror }

var _ cache.ReflectorStore = reflectorStore{}

func (s reflectorStore) Add(obj any) error    { s.m.enqueue(obj); return nil }
func (s reflectorStore) Update(obj any) error { s.m.enqueue(obj); return nil }
func (s reflectorStore) Delete(any) error     { return nil }
func (s reflectorStore) Resync() error        { return nil }

// Replace queues every event of a full list; those already mirrored at
// their current resourceVersion cost a read and no write.
func (s reflectorStore) Replace(list []any, _ string) error {
	for _, obj := range list {
		s.m.enqueue(obj)
	}
	return nil
}
