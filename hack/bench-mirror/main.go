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

// Command bench-mirror measures the mirror at cluster scale: it seeds a
// real kube-apiserver (envtest assets) with -seed events, starts
// events-apiserver as a process of its own mirroring that kube-apiserver
// into its own etcd, times the catch-up of the first (paginated) list,
// then drives -rate upstream changes per second (half creates, half
// updates) for -duration and measures how late each reaches our store,
// through a watch on our server. At the end every upstream event must be
// in our store with its latest upstream content, and none dropped.
//
// Run it with hack/bench-mirror.sh (make bench-mirror), which builds the
// envtest assets and the server first.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-events/events-apiserver/pkg/mirror"
	"github.com/kube-events/events-apiserver/test/harness"
)

type settings struct {
	binary     string
	seed       int
	rate       int
	duration   time.Duration
	namespaces int
	timeout    time.Duration
}

func main() {
	var s settings
	flag.StringVar(&s.binary, "server", "", "events-apiserver binary (required)")
	flag.IntVar(&s.seed, "seed", 100000, "events in kube-apiserver before the mirror starts")
	flag.IntVar(&s.rate, "rate", 500, "upstream changes per second during the sustained phase")
	flag.DurationVar(&s.duration, "duration", time.Minute, "length of the sustained phase")
	flag.IntVar(&s.namespaces, "namespaces", 20, "namespaces the events are spread over")
	flag.DurationVar(&s.timeout, "timeout", 45*time.Minute, "bound of the whole run")
	flag.Parse()
	if s.binary == "" || os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "usage: KUBEBUILDER_ASSETS=... bench-mirror -server <events-apiserver binary> [flags]; see hack/bench-mirror.sh")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	if err := run(ctx, s); err != nil {
		fmt.Fprintf(os.Stderr, "bench-mirror: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, s settings) error {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	dir, err := os.MkdirTemp("", "bench-mirror-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	upstreamConfig, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting kube-apiserver: %w", err)
	}
	defer func() { _ = env.Stop() }()
	upstreamConfig.QPS, upstreamConfig.Burst = -1, -1
	upstreamConfig.ContentType = runtime.ContentTypeProtobuf
	kubeconfig := filepath.Join(dir, "upstream.kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		return err
	}
	upstream, err := kubernetes.NewForConfig(upstreamConfig)
	if err != nil {
		return err
	}
	etcd, err := harness.StartEtcd(filepath.Join(assets, "etcd"), filepath.Join(dir, "etcd"), 1)
	if err != nil {
		return err
	}
	defer func() { _ = etcd.Stop() }()

	d := &driver{upstream: upstream, s: s}
	if err := d.createNamespaces(ctx); err != nil {
		return err
	}
	start := time.Now()
	if err := d.seed(ctx); err != nil {
		return err
	}
	fmt.Printf("seeded:            %d events in kube-apiserver in %v (%.0f/s)\n", s.seed, since(start), float64(s.seed)/time.Since(start).Seconds())

	start = time.Now()
	server, err := harness.StartServer(ctx, s.binary, filepath.Join(dir, "server"),
		"--etcd-servers="+etcd.Endpoints[0], "--mirror=true", "--mirror-kubeconfig="+kubeconfig)
	if err != nil {
		return err
	}
	defer func() { _ = server.Stop() }()
	ready := since(start)
	peak := &peakRSS{process: server.Process}
	stopSampling := peak.sample(ctx)
	defer stopSampling()

	if err := waitFor(ctx, server, float64(s.seed)); err != nil {
		return fmt.Errorf("catching up with the seeded events: %w", err)
	}
	catchUp := since(start)
	fmt.Printf("catch-up:          %d seeded events mirrored %v after the server started (ready after %v): %.0f events/s\n",
		s.seed, catchUp, ready, float64(s.seed)/catchUp.Seconds())

	lags, err := d.sustain(ctx, server)
	if err != nil {
		return err
	}
	missing, stale, total, err := compare(ctx, upstream, server)
	if err != nil {
		return err
	}
	metrics, err := server.Metrics(ctx)
	if err != nil {
		return err
	}
	stopSampling()
	rssNow, rssPeak, err := server.RSS()
	if err != nil {
		return err
	}
	dropped := metrics.Value("events_apiserver_mirror_dropped_total", nil)
	created, updated := metrics.Value(writesMetric, createOp), metrics.Value(writesMetric, updateOp)
	mirrored := created + updated
	fmt.Printf("sustained:         %d upstream changes at %d/s for %v; lag from the upstream write to our watch: p50 %v, p99 %v, max %v\n",
		len(lags.values), s.rate, s.duration, lags.quantile(0.5), lags.quantile(0.99), lags.quantile(1))
	fmt.Printf("lag (server metric events_apiserver_mirror_lag_seconds, sustained phase): p50 %v, p99 %v\n",
		lags.metricP50, lags.metricP99)
	fmt.Printf("mirrored:          %.0f writes (%.0f creates, %.0f updates); upstream changes %d; ratio %.3f\n",
		mirrored, created, updated, s.seed+len(lags.values),
		mirrored/float64(s.seed+len(lags.values)))
	fmt.Printf("dropped:           %.0f\n", dropped)
	fmt.Printf("verified:          %d upstream events: %d missing in our store, %d not at their latest upstream content\n", total, missing, stale)
	fmt.Printf("server RSS:        %.0f MiB now, %.0f MiB peak (sampled), %.0f MiB peak (VmHWM)\n",
		mib(rssNow), mib(peak.max()), mib(rssPeak))
	if dropped != 0 || missing != 0 || stale != 0 || lags.unseen != 0 {
		return fmt.Errorf("lost events: %.0f dropped, %d missing, %d stale, %d changes never seen on our watch", dropped, missing, stale, lags.unseen)
	}
	return nil
}

func since(t time.Time) time.Duration { return time.Since(t).Round(10 * time.Millisecond) }
func mib(b int64) float64             { return float64(b) / (1 << 20) }

// driver writes upstream events.
type driver struct {
	upstream kubernetes.Interface
	s        settings
	created  atomic.Int64
}

func (d *driver) namespace(i int) string { return "bench-" + strconv.Itoa(i%d.s.namespaces) }

func (d *driver) createNamespaces(ctx context.Context) error {
	for i := range d.s.namespaces {
		_, err := d.upstream.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: d.namespace(i)}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
	}
	return nil
}

// event is the i-th upstream event: a kubelet's, about 700 bytes.
func (d *driver) event(i int) *corev1.Event {
	ns, now := d.namespace(i), metav1.Now()
	pod := "web-" + strconv.Itoa(i/3)
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: pod + "." + strconv.FormatInt(int64(i), 16), Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod, UID: types.UID("6d4c3ab1-2f2e-4d61-9d8f-" + fmt.Sprintf("%012d", i/3)), APIVersion: "v1", ResourceVersion: "4242", FieldPath: "spec.containers{app}"},
		Reason:         "BackOff",
		Message:        "Back-off restarting failed container app in pod " + pod + "_" + ns + "(6d4c3ab1-2f2e-4d61-9d8f)",
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-" + strconv.Itoa(i%500)},
		FirstTimestamp: now, LastTimestamp: now, Count: 1, Type: corev1.EventTypeWarning,
		ReportingController: "kubelet", ReportingInstance: "node-" + strconv.Itoa(i%500),
	}
}

// seed creates d.s.seed events, 32 at a time.
func (d *driver) seed(ctx context.Context) error {
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < d.s.seed; i = int(next.Add(1)) - 1 {
				e := d.event(i)
				if _, err := d.upstream.CoreV1().Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{}); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	d.created.Store(int64(d.s.seed))
	return firstErr
}

// lags are the sustained phase's lags, from the upstream write's return to
// the change arriving on a watch of our store.
type lags struct {
	values               []time.Duration
	unseen               int
	metricP50, metricP99 time.Duration
}

func (l *lags) quantile(q float64) time.Duration {
	if len(l.values) == 0 {
		return 0
	}
	slices.Sort(l.values)
	i := int(math.Ceil(q*float64(len(l.values)))) - 1
	return l.values[max(i, 0)].Round(time.Millisecond)
}

// change is an upstream write: the event, the resourceVersion it got, and
// when the write returned.
type change struct {
	key             string
	resourceVersion int64
	at              time.Time
}

// arrival is a version of an event seen on the watch of our store.
type arrival struct {
	resourceVersion int64 // upstream
	at              time.Time
}

// arrivals are the versions seen per event. A change arrived when it or a
// later version of its event did: the mirror writes only the latest
// version of an event changed again while it waited.
type arrivals struct {
	mu    sync.Mutex
	byKey map[string][]arrival
}

func (a *arrivals) add(key string, resourceVersion int64, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.byKey[key] = append(a.byKey[key], arrival{resourceVersion, at})
}

// of is when c arrived.
func (a *arrivals) of(c change) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, got := range a.byKey[c.key] {
		if got.resourceVersion >= c.resourceVersion {
			return got.at, true
		}
	}
	return time.Time{}, false
}

// sustain drives d.s.rate upstream changes per second for d.s.duration
// (even ticks: a create; odd: a count bump of an event created in this
// phase) and returns how late each reached our store.
func (d *driver) sustain(ctx context.Context, server *harness.Server) (*lags, error) {
	ours, err := kubernetes.NewForConfig(server.RestConfig)
	if err != nil {
		return nil, err
	}
	before, err := server.Metrics(ctx)
	if err != nil {
		return nil, err
	}
	list, err := ours.CoreV1().Events("").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	w, err := ours.CoreV1().Events("").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	seen := &arrivals{byKey: map[string][]arrival{}}
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		for e := range w.ResultChan() {
			if e.Type != watch.Added && e.Type != watch.Modified {
				continue
			}
			ev, ok := e.Object.(*corev1.Event)
			if !ok {
				continue
			}
			rv, err := strconv.ParseInt(ev.Annotations[mirror.AnnotationResourceVersion], 10, 64)
			if err == nil {
				seen.add(ev.Namespace+"/"+ev.Name, rv, time.Now())
			}
		}
	}()

	changes, err := d.drive(ctx)
	if err != nil {
		return nil, err
	}
	// Wait (bounded) until every change arrived.
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		for _, c := range changes {
			if _, ok := seen.of(c); !ok {
				return false, nil
			}
		}
		return true, nil
	})
	after, err := server.Metrics(ctx)
	if err != nil {
		return nil, err
	}
	l := &lags{}
	for _, c := range changes {
		if at, ok := seen.of(c); ok {
			l.values = append(l.values, at.Sub(c.at))
		} else {
			l.unseen++
		}
	}
	lag := harness.HistogramSince(before.Histogram("events_apiserver_mirror_lag_seconds", nil), after.Histogram("events_apiserver_mirror_lag_seconds", nil))
	l.metricP50, l.metricP99 = seconds(lag.Quantile(0.5)), seconds(lag.Quantile(0.99))
	return l, nil
}

// drive writes d.s.rate changes per second for d.s.duration, from 64
// writers, and returns them.
func (d *driver) drive(ctx context.Context) ([]change, error) {
	total := int(d.s.duration.Seconds() * float64(d.s.rate))
	ticks := make(chan int)
	var mu sync.Mutex
	var changes []change
	var latest sync.Map // name -> *corev1.Event, the events created in this phase
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for tick := range ticks {
				got, err := d.change(ctx, tick, &latest)
				if err != nil {
					once.Do(func() { firstErr = err })
					continue
				}
				at := time.Now()
				rv, err := strconv.ParseInt(got.ResourceVersion, 10, 64)
				if err != nil {
					once.Do(func() { firstErr = err })
					continue
				}
				mu.Lock()
				changes = append(changes, change{key: got.Namespace + "/" + got.Name, resourceVersion: rv, at: at})
				mu.Unlock()
			}
		})
	}
	interval := time.Second / time.Duration(d.s.rate)
	start := time.Now()
	for tick := range total {
		if wait := time.Until(start.Add(time.Duration(tick) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		select {
		case ticks <- tick:
		case <-ctx.Done():
		}
	}
	close(ticks)
	wg.Wait()
	took := time.Since(start)
	fmt.Printf("driven:            %d upstream changes in %v (%.0f/s)\n", len(changes), took.Round(10*time.Millisecond), float64(len(changes))/took.Seconds())
	return changes, firstErr
}

// change makes the tick-th change: a new event on even ticks, a count bump
// on odd ticks of the event created 64 ticks before (a create on the first
// odd ticks).
func (d *driver) change(ctx context.Context, tick int, latest *sync.Map) (*corev1.Event, error) {
	if tick%2 == 1 {
		if prev, ok := latest.Load(tick - 65); ok {
			e := prev.(*corev1.Event).DeepCopy()
			e.Count++
			e.LastTimestamp = metav1.Now()
			got, err := d.upstream.CoreV1().Events(e.Namespace).Update(ctx, e, metav1.UpdateOptions{})
			if err == nil {
				latest.Store(tick-65, got)
			}
			return got, err
		}
	}
	e := d.event(int(d.created.Add(1)) - 1)
	got, err := d.upstream.CoreV1().Events(e.Namespace).Create(ctx, e, metav1.CreateOptions{})
	if err == nil {
		latest.Store(tick, got)
	}
	return got, err
}

// compare lists kube-apiserver's events and ours and counts the upstream
// events missing in ours or not at their latest upstream content.
func compare(ctx context.Context, upstream kubernetes.Interface, server *harness.Server) (missing, stale, total int, err error) {
	ours, err := kubernetes.NewForConfig(server.RestConfig)
	if err != nil {
		return 0, 0, 0, err
	}
	mirrored := map[string]corev1.Event{}
	err = pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return ours.CoreV1().Events("").List(ctx, opts)
	}).EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		e := obj.(*corev1.Event)
		mirrored[e.Namespace+"/"+e.Name] = *e
		return nil
	})
	if err != nil {
		return 0, 0, 0, err
	}
	err = pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return upstream.CoreV1().Events("").List(ctx, opts)
	}).EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		e := obj.(*corev1.Event)
		if e.Namespace == "default" || e.Namespace == "kube-system" {
			return nil // kube-apiserver's own
		}
		total++
		got, ok := mirrored[e.Namespace+"/"+e.Name]
		switch {
		case !ok:
			missing++
		case got.Annotations[mirror.AnnotationResourceVersion] != e.ResourceVersion || got.Count != e.Count ||
			got.Message != e.Message || !got.LastTimestamp.Equal(&e.LastTimestamp) || got.Source != e.Source ||
			got.InvolvedObject != e.InvolvedObject:
			stale++
		}
		return nil
	})
	return missing, stale, total, err
}

// The mirror's writes, by operation.
var (
	writesMetric       = "events_apiserver_mirror_writes_total"
	createOp, updateOp = map[string]string{"operation": "create"}, map[string]string{"operation": "update"}
)

// waitFor polls the server's /metrics until the mirror created want events.
func waitFor(ctx context.Context, server *harness.Server, want float64) error {
	return wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		metrics, err := server.Metrics(ctx)
		if err != nil {
			return false, nil
		}
		return metrics.Value(writesMetric, createOp) >= want, nil
	})
}

// seconds is a quantile in seconds as a duration (0 for NaN: nothing
// observed), to the millisecond.
func seconds(s float64) time.Duration {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return 0
	}
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond)
}

// peakRSS samples a process's resident memory every second.
type peakRSS struct {
	process *harness.Process
	mu      sync.Mutex
	peak    int64
}

func (p *peakRSS) sample(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
			if now, _, err := p.process.RSS(); err == nil {
				p.mu.Lock()
				p.peak = max(p.peak, now)
				p.mu.Unlock()
			}
			return false, nil
		})
	}()
	var once sync.Once
	return func() { once.Do(func() { cancel(); <-done }) }
}

func (p *peakRSS) max() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}
