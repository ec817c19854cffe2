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

package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kube-events/events-apiserver/test/harness"
)

// namespace is where every benchmark event lives.
const namespace = "bench"

// Spread of the events: event i is about pod-(i mod pods) on node-(i mod
// nodes), so that a list by one regarding or related name finds
// events/pods of them.
const (
	pods  = 1000
	nodes = 997
)

// mode is an API version and a media type the creates are measured in.
type mode struct {
	name      string
	mediaType string
	events    bool // events.k8s.io/v1, else core/v1
}

var modes = []mode{
	{"core/v1 protobuf", runtime.ContentTypeProtobuf, false},
	{"core/v1 JSON", runtime.ContentTypeJSON, false},
	{"events.k8s.io/v1 protobuf", runtime.ContentTypeProtobuf, true},
	{"events.k8s.io/v1 JSON", runtime.ContentTypeJSON, true},
}

func withCodecs(base *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return cfg
}

// clientset is an unmodified client-go clientset in one media type, on a
// connection of its own (a Dial function keeps client-go from sharing
// transports), without client-side throttling.
func clientset(base *rest.Config, mediaType string) (*kubernetes.Clientset, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = -1, -1
	cfg.ContentType, cfg.AcceptContentTypes = mediaType, mediaType
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	cfg.Dial = dialer.DialContext
	return kubernetes.NewForConfig(cfg)
}

// generator names and shapes the events of a run: as client-go's
// recorders write them, a warning about a pod's container on a node.
type generator struct {
	next atomic.Int64
}

// coreEvent returns the next core/v1 event; regarding overrides its pod.
func (g *generator) coreEvent(regarding string) *corev1.Event {
	i := g.next.Add(1)
	pod, node := fmt.Sprintf("pod-%d", i%pods), fmt.Sprintf("node-%d", i%nodes)
	if regarding != "" {
		pod = regarding
	}
	at := metav1.Now()
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pod, i), Namespace: namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: pod,
			UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i%pods)), APIVersion: "v1",
			ResourceVersion: "123456", FieldPath: "spec.containers{app}"},
		Related:        &corev1.ObjectReference{Kind: "Node", Name: node},
		Reason:         "BackOff",
		Message:        "Back-off restarting failed container app in pod " + pod + "_" + namespace,
		Source:         corev1.EventSource{Component: "kubelet", Host: node},
		FirstTimestamp: at, LastTimestamp: at, Count: 1,
		Type:                corev1.EventTypeWarning,
		ReportingController: "kubelet", ReportingInstance: node,
	}
}

// eventsEvent returns the next events.k8s.io/v1 event.
func (g *generator) eventsEvent() *eventsv1.Event {
	c := g.coreEvent("")
	return &eventsv1.Event{
		ObjectMeta: c.ObjectMeta, Regarding: c.InvolvedObject, Related: c.Related,
		Note: c.Message, Reason: c.Reason, Type: c.Type, Action: "Restarting",
		EventTime:           metav1.NowMicro(),
		ReportingController: c.ReportingController, ReportingInstance: c.ReportingInstance,
	}
}

// ensureNamespace creates the namespace on servers that have namespaces
// (kube-apiserver refuses events in a namespace that does not exist).
func ensureNamespace(ctx context.Context, c kubernetes.Interface) error {
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err == nil || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// createResult is how a batch of creates went.
type createResult struct {
	created, failed int64
	elapsed         time.Duration
	firstErr        error
	// cpu is what the server, its etcd and the load generator spent.
	cpu cpuUse
}

func (r createResult) perSecond() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.created) / r.elapsed.Seconds()
}

// untilCanceled is a writeLoad duration that only its context ends.
const untilCanceled = 100 * 365 * 24 * time.Hour

// writeLoad runs writers goroutines calling write (a create, or a delete)
// until count writes were sent (count > 0) or until the duration ends.
func writeLoad(ctx context.Context, writers int, count int64, duration time.Duration, write func(ctx context.Context) error) createResult {
	var sent, created, failed atomic.Int64
	var errOnce sync.Once
	var firstErr error
	deadline := time.Now().Add(duration)
	start := time.Now()
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if count > 0 && sent.Add(1) > count {
					return
				}
				if count <= 0 && time.Now().After(deadline) {
					return
				}
				if err := write(ctx); err != nil {
					failed.Add(1)
					errOnce.Do(func() { firstErr = err })
					continue
				}
				created.Add(1)
			}
		})
	}
	wg.Wait()
	return createResult{created: created.Load(), failed: failed.Load(), elapsed: time.Since(start), firstErr: firstErr}
}

// createsIn measures creates in one mode.
func createsIn(ctx context.Context, t *target, g *generator, m mode, writers int, count int64) (createResult, error) {
	c, err := clientset(t.config, m.mediaType)
	if err != nil {
		return createResult{}, err
	}
	return measured(ctx, t, func() createResult {
		return writeLoad(ctx, writers, count, 0, func(ctx context.Context) error {
			if m.events {
				_, err := c.EventsV1().Events(namespace).Create(ctx, g.eventsEvent(), metav1.CreateOptions{})
				return err
			}
			_, err := c.CoreV1().Events(namespace).Create(ctx, g.coreEvent(""), metav1.CreateOptions{})
			return err
		})
	})
}

// listResult is the median duration of a list by one selector, and how
// many events it returned.
type listResult struct {
	median  time.Duration
	samples int
	items   int
	// unsupported is set when the server refuses the selector (kube-apiserver
	// knows no related.* field selectors).
	unsupported bool
}

// listBy lists at least samples times and for at least duration (after one
// warm-up) with a field selector, through core/v1 or events.k8s.io/v1 in
// protobuf.
func listBy(ctx context.Context, cfg *rest.Config, events bool, selector string, samples int, duration time.Duration) (listResult, error) {
	c, err := clientset(cfg, runtime.ContentTypeProtobuf)
	if err != nil {
		return listResult{}, err
	}
	opts := metav1.ListOptions{FieldSelector: selector}
	list := func() (int, error) {
		if events {
			l, err := c.EventsV1().Events(namespace).List(ctx, opts)
			if err != nil {
				return 0, err
			}
			return len(l.Items), nil
		}
		l, err := c.CoreV1().Events(namespace).List(ctx, opts)
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	}
	if _, err := list(); apierrors.IsBadRequest(err) {
		return listResult{unsupported: true}, nil
	} else if err != nil {
		return listResult{}, fmt.Errorf("list %s: %w", selector, err)
	}
	var durations []time.Duration
	items := 0
	for begin := time.Now(); len(durations) < samples || time.Since(begin) < duration; {
		start := time.Now()
		n, err := list()
		if err != nil {
			return listResult{}, fmt.Errorf("list %s: %w", selector, err)
		}
		durations = append(durations, time.Since(start))
		items = n
	}
	return listResult{median: harness.Quantile(durations, 0.5), samples: len(durations), items: items}, nil
}

// watchResult is how selective watchers fared under a create load.
type watchResult struct {
	watchers           int
	warmup, creates    createResult
	expected, received int64
	p50, p99           time.Duration
	// createP50 and createP99 are the measured creates' own latency, from
	// sending to the server's answer: delivery is measured from sending
	// too, so what a delivery adds to its create is told apart.
	createP50, createP99 time.Duration
	cutOff               int64
	openFailed           int64
	// memory is the server's after the load, with the watchers still
	// open.
	memory memory
	// deleted is how many events of the phase were deleted after it,
	// which took deleteTime.
	deleted    int
	deleteTime time.Duration
	// baseline is the same load without watchers, run on the same store
	// just before a phase with watchers: the machine's pace drifts over a
	// run by more than the watchers cost, so each phase is compared with
	// the phase next to it, not with a phase minutes earlier.
	baseline *watchResult
}

// summary is the phase's log line.
func (r *watchResult) summary() string {
	return fmt.Sprintf("warm-up %v at %.0f creates/s, then %.0f creates/s (latency p50 %v p99 %v), %d of %d delivered, p50 %v p99 %v, %d cut off, %d failed to open, CPU per create (server / etcd / load generator) %s; %s; with the watchers open: %s; its %d events deleted in %v",
		r.warmup.elapsed.Round(time.Second), r.warmup.perSecond(), r.creates.perSecond(), r.createP50, r.createP99, r.received, r.expected, r.p50, r.p99, r.cutOff, r.openFailed, r.creates.perCreate(), r.creates.cpu.tail, r.memory, r.deleted, r.deleteTime.Round(time.Second))
}

// ratio is the phase's creates/s over its baseline's, 0 without one.
func (r *watchResult) ratio() float64 {
	if r == nil || r.baseline == nil || r.baseline.creates.perSecond() == 0 {
		return 0
	}
	return r.creates.perSecond() / r.baseline.creates.perSecond()
}

// watchersPerConnection keeps each connection well under HTTP/2's
// concurrent stream limit (kube-apiserver's and Go's defaults).
const watchersPerConnection = 100

// selectiveWatchers opens watchers core/v1 watches, each selecting one
// regarding name of its own (involvedObject.name), then creates events
// about those names, round-robin, with cfg.Writers goroutines: first for
// cfg.WatchWarmup, not measured, then for cfg.WatchDuration, measured, and
// waits up to cfg.DeliveryTimeout for every measured event to reach its
// watcher; then it deletes the events it created, so that every phase runs
// on a store of the same size. With no watchers it measures the same
// create load alone.
//
// The warm-up is the server's transient after the watchers arrive (with
// 10,000 of them its heap grows by about a gigabyte, touched for the first
// time, page by page): what is measured is the server serving them, as a
// cluster's long-lived watchers are served; the warm-up's rate is reported
// beside it.
//
// With profileDir set, the server's CPU profile of the first 10 s of the
// load (cpu-<profileName>.pprof, with the generator's) and its heap with
// the watchers open (heap-<profileName>.pprof) are written there.
//
// With alongside set, it runs beside the measured load, which goes on
// until alongside has returned as well as for cfg.WatchDuration: what the
// watchers are measured under (lists of every event, say).
func selectiveWatchers(ctx context.Context, cfg Config, t *target, g *generator, watchers int, profileDir, profileName string, alongside func(context.Context) error) (watchResult, error) {
	phase := fmt.Sprintf("watch%d", watchers)
	res := watchResult{watchers: watchers}
	if err := settle(ctx, cfg, t, fmt.Sprintf("the phase of %d watchers", watchers)); err != nil {
		return res, err
	}
	names := make([]string, watchers)
	for i := range names {
		names[i] = fmt.Sprintf("%s-w%d", phase, i)
	}

	var sentAt sync.Map // event name -> time.Time the create was sent
	var received, cutOff atomic.Int64
	var latMu sync.Mutex
	var latencies, createLatencies []time.Duration
	watchCtx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()

	// Watches start from the current resourceVersion, as a client that
	// has listed does: without one, every watch would first be sent the
	// state of every event it selects.
	c, err := clientset(t.config, runtime.ContentTypeProtobuf)
	if err != nil {
		return res, err
	}
	current, err := c.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return res, err
	}

	// Open the watches, boundedly in parallel, each connection serving
	// watchersPerConnection of them.
	var clients []*kubernetes.Clientset
	for i := 0; i < watchers; i += watchersPerConnection {
		c, err := clientset(t.config, runtime.ContentTypeProtobuf)
		if err != nil {
			return res, err
		}
		clients = append(clients, c)
	}
	var opened sync.WaitGroup
	var readers sync.WaitGroup
	var openFailed atomic.Int64
	sem := make(chan struct{}, 64)
	for i, name := range names {
		opened.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			c := clients[i/watchersPerConnection]
			w, err := c.CoreV1().Events(namespace).Watch(watchCtx, metav1.ListOptions{
				FieldSelector:   "involvedObject.name=" + name,
				ResourceVersion: current.ResourceVersion,
			})
			opened.Done()
			if err != nil {
				openFailed.Add(1)
				return
			}
			readers.Go(func() {
				defer w.Stop()
				for {
					select {
					case <-watchCtx.Done():
						return
					case e, ok := <-w.ResultChan():
						if !ok {
							if watchCtx.Err() == nil {
								cutOff.Add(1)
							}
							return
						}
						if e.Type == watch.Error {
							if watchCtx.Err() == nil {
								cutOff.Add(1)
							}
							return
						}
						if e.Type != watch.Added {
							continue
						}
						now := time.Now()
						ev, ok := e.Object.(*corev1.Event)
						if !ok || ev.InvolvedObject.Name != name {
							continue
						}
						if at, ok := sentAt.Load(ev.Name); ok {
							received.Add(1)
							latMu.Lock()
							latencies = append(latencies, now.Sub(at.(time.Time)))
							latMu.Unlock()
						}
					}
				}
			})
		}()
	}
	opened.Wait()
	res.openFailed = openFailed.Load()

	// With a rate, the writers take turns at it: at most WatchRate creates
	// are sent per second, none faster for catching up.
	pace := func(context.Context) error { return nil }
	if cfg.WatchRate > 0 {
		pace = rate.NewLimiter(rate.Limit(cfg.WatchRate), 1).Wait
	}
	var k atomic.Int64
	var createdMu sync.Mutex
	var created []string // every event of the phase, deleted at its end
	// creates makes an event about the next watcher's name; tracked ones
	// are timed, and expected at their watcher (warm-up events are
	// delivered too, but neither expected nor timed).
	creates := func(tracked bool) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			if err := pace(ctx); err != nil {
				return err
			}
			regarding := ""
			if watchers > 0 {
				regarding = names[k.Add(1)%int64(watchers)]
			}
			e := g.coreEvent(regarding)
			sent := time.Now()
			if tracked && watchers > 0 {
				sentAt.Store(e.Name, sent)
			}
			_, err := c.CoreV1().Events(namespace).Create(ctx, e, metav1.CreateOptions{})
			if err != nil {
				sentAt.Delete(e.Name)
				return err
			}
			if tracked {
				took := time.Since(sent)
				latMu.Lock()
				createLatencies = append(createLatencies, took)
				latMu.Unlock()
			}
			createdMu.Lock()
			created = append(created, e.Name)
			createdMu.Unlock()
			return nil
		}
	}
	if cfg.WatchWarmup > 0 {
		if res.warmup, err = warmUp(ctx, cfg, t, creates(false)); err != nil {
			return res, err
		}
	}
	profiled := profileCPU(ctx, t, profileDir, "cpu-"+profileName, true)
	var alongsideErr error
	res.creates, err = measured(ctx, t, func() createResult {
		if alongside == nil {
			return writeLoad(ctx, cfg.Writers, 0, cfg.WatchDuration, creates(true))
		}
		loadCtx, stopLoad := context.WithCancel(ctx)
		defer stopLoad()
		done := make(chan struct{})
		go func() {
			defer close(done)
			alongsideErr = alongside(ctx)
			// The load's minimum duration is then waited for by the timer.
			select {
			case <-time.After(cfg.WatchDuration):
			case <-ctx.Done():
			}
			stopLoad()
		}()
		// The writers stop starting creates when loadCtx ends; a create in
		// flight then finishes under ctx, not canceled half-way.
		create := creates(true)
		r := writeLoad(loadCtx, cfg.Writers, 0, untilCanceled, func(context.Context) error { return create(ctx) })
		<-done
		return r
	})
	if perr := profiled(); perr != nil {
		return res, perr
	}
	if err = errors.Join(err, alongsideErr); err != nil {
		return res, err
	}
	if watchers > 0 {
		res.expected = res.creates.created
	}

	// Delivery is checked on a short tick (the latencies themselves are
	// measured by the watchers); what has not arrived by the timeout is
	// reported as missing.
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, cfg.DeliveryTimeout, true, func(context.Context) (bool, error) {
		return received.Load() >= res.expected, nil
	})
	if res.memory, err = readMemory(ctx, t.config); err != nil {
		return res, err
	}
	if profileDir != "" {
		if err := saveProfile(ctx, t.config, "/debug/pprof/heap", "gc=1", filepath.Join(profileDir, "heap-"+profileName+".pprof")); err != nil {
			return res, fmt.Errorf("heap profile: %w", err)
		}
	}
	stopWatches()
	readers.Wait()
	res.received, res.cutOff = received.Load(), cutOff.Load()

	// The next phase starts from the same store: a store that grew by each
	// phase's events would make later phases slower for that alone (the
	// collector's work per create grows with the live heap).
	start := time.Now()
	if err := deleteEvents(ctx, c, created, cfg.Writers); err != nil {
		return res, err
	}
	res.deleted, res.deleteTime = len(created), time.Since(start)
	latMu.Lock()
	res.p50, res.p99 = harness.Quantile(latencies, 0.5), harness.Quantile(latencies, 0.99)
	res.createP50, res.createP99 = harness.Quantile(createLatencies, 0.5), harness.Quantile(createLatencies, 0.99)
	latMu.Unlock()
	return res, nil
}

// warmUpSlice is how often warmUp checks whether the server's memory has
// stopped growing; maxWarmupFactor bounds the warm-up to that many times
// Config.WatchWarmup.
const (
	warmUpSlice     = 5 * time.Second
	maxWarmupFactor = 4
)

// warmUp runs the create load, not measured, for at least cfg.WatchWarmup
// and until the server's resident memory grew by less than 5 % over the
// last warmUpSlice: watchers that just connected make the heap grow (by
// about a gigabyte for 10,000 of them), and until it has, every create
// pays for touching new memory for the first time. It stops at
// maxWarmupFactor times cfg.WatchWarmup whatever the memory does.
func warmUp(ctx context.Context, cfg Config, t *target, create func(context.Context) error) (createResult, error) {
	var total createResult
	before, err := readMemory(ctx, t.config)
	if err != nil {
		return total, err
	}
	for total.elapsed < maxWarmupFactor*cfg.WatchWarmup {
		slice := writeLoad(ctx, cfg.Writers, 0, min(warmUpSlice, cfg.WatchWarmup), create)
		total.created += slice.created
		total.failed += slice.failed
		total.elapsed += slice.elapsed
		if slice.failed > 0 {
			return total, fmt.Errorf("warm-up: %d creates failed, first: %w", slice.failed, slice.firstErr)
		}
		after, err := readMemory(ctx, t.config)
		if err != nil {
			return total, err
		}
		if total.elapsed >= cfg.WatchWarmup && after.RSS < before.RSS*1.05 {
			break
		}
		before = after
	}
	return total, ctx.Err()
}

// deleteEvents deletes the named events of the bench namespace with
// writers goroutines; events already gone are no error.
func deleteEvents(ctx context.Context, c kubernetes.Interface, names []string, writers int) error {
	if len(names) == 0 {
		return nil
	}
	var next atomic.Int64 // writeLoad calls the delete len(names) times at most
	res := writeLoad(ctx, writers, int64(len(names)), 0, func(ctx context.Context) error {
		err := c.CoreV1().Events(namespace).Delete(ctx, names[next.Add(1)-1], metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if res.failed > 0 {
		return fmt.Errorf("deleting the phase's events: %d failed, first: %w", res.failed, res.firstErr)
	}
	return ctx.Err()
}
