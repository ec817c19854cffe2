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
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/pager"

	pkgmirror "github.com/kube-events/events-apiserver/pkg/mirror"
	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// startReplica runs our server as a process of its own on etcd, mirroring
// the cluster's kube-apiserver with the given extra flags.
func startReplica(t *testing.T, etcd *framework.Etcd, name string, flags ...string) *harness.Server {
	t.Helper()
	args := append([]string{"--etcd-servers=" + etcd.Endpoints[0], "--mirror=true", "--mirror-kubeconfig=" + cluster.Kubeconfig}, flags...)
	p, err := harness.StartServer(testContext(t), serverBinary, filepath.Join(t.TempDir(), name), args...)
	if err != nil {
		t.Fatalf("starting replica %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = p.Stop()
		if t.Failed() {
			t.Logf("replica %s log:\n%s", name, tail(p.Log(), 60))
		}
	})
	return p
}

func tail(log string, lines int) string {
	all := strings.Split(log, "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// upstreamEvent is the i-th event of a stream in ns.
func streamEvent(ns string, i int) *corev1.Event {
	now := time.Now()
	name := fmt.Sprintf("stream-%05d", i)
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "pod-" + strconv.Itoa(i%50), APIVersion: "v1"},
		Reason:         "Stream", Message: "event " + strconv.Itoa(i), Type: corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "streamer"},
		FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now), Count: 1,
	}
}

// createUpstream creates events [from, to) in ns upstream, 16 at a time.
func createUpstream(t *testing.T, ns string, from, to int) {
	t.Helper()
	ctx := testContext(t)
	events := client(t, cluster).CoreV1().Events(ns)
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < to; i = int(next.Add(1)) - 1 {
				if _, err := events.Create(ctx, streamEvent(ns, i), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// upstreamVersions lists ns upstream: name -> resourceVersion.
func upstreamVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	return versions(t, client(t, cluster), ns, func(e *corev1.Event) string { return e.ResourceVersion })
}

// mirroredVersions lists ns in our store: name -> the upstream
// resourceVersion it mirrors.
func mirroredVersions(t *testing.T, cs kubernetes.Interface, ns string) map[string]string {
	t.Helper()
	return versions(t, cs, ns, func(e *corev1.Event) string { return e.Annotations[pkgmirror.AnnotationResourceVersion] })
}

func versions(t *testing.T, cs kubernetes.Interface, ns string, version func(*corev1.Event) string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return cs.CoreV1().Events(ns).List(ctx, opts)
	}).EachListItem(testContext(t), metav1.ListOptions{}, func(obj runtime.Object) error {
		e := obj.(*corev1.Event)
		got[e.Name] = version(e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// waitMirrored waits until our store (through cs) holds every upstream
// event of ns at its latest upstream version.
func waitMirrored(t *testing.T, cs kubernetes.Interface, ns string, timeout time.Duration) {
	t.Helper()
	want := upstreamVersions(t, ns)
	var got map[string]string
	err := wait.PollUntilContextTimeout(testContext(t), 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		got = mirroredVersions(t, cs, ns)
		return cmp.Equal(want, got), nil
	})
	if err != nil {
		missing := 0
		for name, rv := range want {
			if got[name] != rv {
				missing++
			}
		}
		t.Fatalf("after %v, %d of %d upstream events of %s are not in our store at their latest version", timeout, missing, len(want), ns)
	}
}

func replicaClient(t *testing.T, p *harness.Server) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(p.RestConfig)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func replicaMetrics(t *testing.T, p *harness.Server) harness.Metrics {
	t.Helper()
	m, err := p.Metrics(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The mirror's metrics the tests read.
const (
	writesMetric  = "events_apiserver_mirror_writes_total"
	pausedMetric  = "events_apiserver_mirror_read_paused_seconds_total"
	droppedMetric = "events_apiserver_mirror_dropped_total"
)

// mirrored is how many events the mirror created and updated.
func mirrored(m harness.Metrics) (created, updated float64) {
	return m.Value(writesMetric, map[string]string{"operation": "create"}), m.Value(writesMetric, map[string]string{"operation": "update"})
}

// A first list far larger than every buffer of the mirror (30 pages of 50,
// 15 times the 100 events that may wait) is mirrored completely: the reader
// is paused (backpressure), nothing is dropped.
func TestRelistLargerThanEveryBufferLosesNothing(t *testing.T) {
	const events = 1500
	ns := newNamespace(t, cluster)
	createUpstream(t, ns, 0, events)

	replica := startReplica(t, framework.StartEtcd(t), "small",
		"--mirror-queue-size=100", "--mirror-page-size=50", "--mirror-workers=2")
	waitMirrored(t, replicaClient(t, replica), ns, 3*time.Minute)

	metrics := replicaMetrics(t, replica)
	if paused := metrics.Value(pausedMetric, nil); paused <= 0 {
		t.Errorf("%s = %v, want the reader paused while 100 events waited", pausedMetric, paused)
	}
	dropped := metrics.Value(droppedMetric, map[string]string{"reason": "invalid"})
	if created, _ := mirrored(metrics); dropped != 0 || created < events {
		t.Errorf("dropped %v, created %v; want 0 dropped and at least %d created", dropped, created, events)
	}
}

// putsPerVersion watches our etcd's events of ns from revision on and
// counts, per event and upstream resourceVersion, the writes of it.
type putsPerVersion struct {
	mu     sync.Mutex
	counts map[string]int // name@upstream resourceVersion
	total  int
}

func watchPuts(t *testing.T, etcd *framework.Etcd, ns string) *putsPerVersion {
	t.Helper()
	ctx := testContext(t)
	status, err := etcd.Client.Get(ctx, "/", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	puts := &putsPerVersion{counts: map[string]int{}}
	changes := etcd.Client.Watch(ctx, "/registry/events/"+ns+"/", clientv3.WithPrefix(), clientv3.WithRev(status.Header.Revision+1))
	decoder := scheme.Codecs.UniversalDeserializer()
	go func() {
		for response := range changes {
			for _, e := range response.Events {
				if e.Type != clientv3.EventTypePut {
					continue
				}
				obj, _, err := decoder.Decode(e.Kv.Value, nil, &corev1.Event{})
				if err != nil {
					t.Errorf("decoding %s: %v", e.Kv.Key, err)
					continue
				}
				event := obj.(*corev1.Event)
				puts.mu.Lock()
				puts.counts[event.Name+"@"+event.Annotations[pkgmirror.AnnotationResourceVersion]]++
				puts.total++
				puts.mu.Unlock()
			}
		}
	}()
	return puts
}

// writtenTwice lists the upstream versions written more than once.
func (p *putsPerVersion) writtenTwice() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var twice []string
	for version, n := range p.counts {
		if n > 1 {
			twice = append(twice, fmt.Sprintf("%s (%d times)", version, n))
		}
	}
	return twice
}

// leader waits until exactly one of replicas leads the controllers election and
// returns its index.
func leader(t *testing.T, replicas ...*harness.Server) int {
	t.Helper()
	lead, err := harness.Leader(testContext(t), 45*time.Second, replicas...)
	if err != nil {
		t.Fatal(err)
	}
	return lead
}

// Two replicas on one etcd: one mirrors, the other does not; every
// upstream change (creates and updates) is written into our store once.
func TestTwoReplicasWriteEachChangeOnce(t *testing.T) {
	etcd := framework.StartEtcd(t)
	ns := newNamespace(t, cluster)
	puts := watchPuts(t, etcd, ns)
	replicas := []*harness.Server{startReplica(t, etcd, "a"), startReplica(t, etcd, "b")}
	lead := leader(t, replicas...)

	const events = 200
	createUpstream(t, ns, 0, events)
	upstream := client(t, cluster).CoreV1().Events(ns)
	for i := range events / 2 {
		e, err := upstream.Get(testContext(t), streamEvent(ns, i).Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e.Count++
		if _, err := upstream.Update(testContext(t), e, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitMirrored(t, replicaClient(t, replicas[1-lead]), ns, 2*time.Minute)

	if twice := puts.writtenTwice(); len(twice) > 0 {
		t.Errorf("upstream versions written more than once: %v", twice)
	}
	follower := replicaMetrics(t, replicas[1-lead])
	if created, updated := mirrored(follower); created+updated != 0 || harness.Leads(follower) {
		t.Errorf("the follower wrote %v creates and %v updates, leads %v; want none: only the leader mirrors",
			created, updated, harness.Leads(follower))
	}
	leading := replicaMetrics(t, replicas[lead])
	puts.mu.Lock()
	total := puts.total
	puts.mu.Unlock()
	if created, updated := mirrored(leading); created+updated < float64(total) || total < events {
		written := created + updated
		t.Errorf("leader wrote %v times, etcd saw %d writes of %s; want every write from the leader and at least %d", written, total, ns, events)
	}
}

// Killing the leader (SIGKILL: no hook runs, its election lease expires)
// while upstream events keep coming: the other replica takes over and
// nothing is missing afterwards.
func TestLeaderKilledMidStreamOtherTakesOver(t *testing.T) {
	etcd := framework.StartEtcd(t)
	ns := newNamespace(t, cluster)
	replicas := []*harness.Server{startReplica(t, etcd, "a"), startReplica(t, etcd, "b")}
	lead := leader(t, replicas...)
	follower := replicas[1-lead]

	// 20 events per second upstream, until stopped.
	var created atomic.Int64
	stop := make(chan struct{})
	produced := make(chan error, 1)
	go func() {
		upstream := client(t, cluster).CoreV1().Events(ns)
		ticker := time.NewTicker(50 * time.Millisecond)
		defer ticker.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				produced <- nil
				return
			case <-ticker.C:
			}
			if _, err := upstream.Create(context.Background(), streamEvent(ns, i), metav1.CreateOptions{}); err != nil {
				produced <- err
				return
			}
			created.Add(1)
		}
	}()
	// Some mirrored by the leader, then kill it.
	err := wait.PollUntilContextTimeout(testContext(t), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return len(mirroredVersions(t, replicaClient(t, follower), ns)) >= 20, nil
	})
	if err != nil {
		t.Fatalf("the leader mirrored fewer than 20 events: %v", err)
	}
	if err := replicas[lead].Kill(); err != nil {
		t.Fatal(err)
	}
	atKill := created.Load()
	replicas[lead] = nil
	if leader(t, replicas...) != 1-lead {
		t.Fatal("the survivor did not take over")
	}
	// A few more after the take-over, then stop.
	for created.Load() < atKill+40 && len(produced) == 0 {
		if err := wait.PollUntilContextTimeout(testContext(t), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return created.Load() >= atKill+40 || len(produced) > 0, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	waitMirrored(t, replicaClient(t, follower), ns, 2*time.Minute)
}

// Stopping a server (SIGTERM) while it has hundreds of events still to
// write (20 writes/s) ends cleanly: exit status 0, the mirror stopped
// before storage, no write failed on the way out. A server started again
// on the same etcd then mirrors the rest: nothing is lost.
func TestShutdownWhileMirroringEndsCleanly(t *testing.T) {
	const events = 400
	etcd := framework.StartEtcd(t)
	ns := newNamespace(t, cluster)
	createUpstream(t, ns, 0, events)

	slow := startReplica(t, etcd, "slow", "--mirror-qps=20", "--mirror-burst=1", "-v=2")
	err := wait.PollUntilContextTimeout(testContext(t), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		// Any namespace: the cluster holds the upstream events of this
		// package's other tests too, and the mirror writes them in no
		// particular order.
		return len(mirroredVersions(t, replicaClient(t, slow), metav1.NamespaceAll)) >= 20, nil
	})
	if err != nil {
		t.Fatalf("fewer than 20 events mirrored: %v", err)
	}
	if err := slow.Stop(); err != nil {
		t.Fatalf("stopping while mirroring: %v\n%s", err, tail(slow.Log(), 40))
	}
	log := slow.Log()
	stopped := strings.Index(log, "Stopped mirroring kube-apiserver's events")
	if stopped < 0 {
		t.Fatalf("the mirror never logged that it stopped:\n%s", tail(log, 40))
	}
	for _, bad := range []string{"Writing an upstream event failed", "panic", "storage is closed"} {
		if strings.Contains(log, bad) {
			t.Errorf("log mentions %q:\n%s", bad, tail(log, 40))
		}
	}

	stored, err := etcd.Client.Get(testContext(t), "/registry/events/"+ns+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if stored.Count >= events {
		t.Errorf("%d of %d events mirrored before the stop; want the stop to come mid-stream", stored.Count, events)
	}

	again := startReplica(t, etcd, "again")
	waitMirrored(t, replicaClient(t, again), ns, 2*time.Minute)
}

// Offload mode: kube-apiserver keeps its events in our etcd
// (--etcd-servers-overrides=/events#<our etcd>). A mirror pointed at it
// finds kube-apiserver's own event already in our store (same uid and
// resourceVersion), refuses with a clear message, and rewrites nothing.
func TestMirrorRefusesAStoreSharedWithKubeAPIServer(t *testing.T) {
	offload, err := framework.StartAggregatedCluster(framework.AggregatedClusterOptions{Offload: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := offload.Stop(); err != nil {
			t.Errorf("stopping the offload cluster: %v", err)
		}
	})
	// The cluster's own server shares the events etcd, and with it the
	// election of the replica running the controllers: stop it, so that
	// the replica under test leads.
	if err := offload.StopServer(); err != nil {
		t.Fatal(err)
	}
	p, err := harness.StartServer(testContext(t), serverBinary, filepath.Join(t.TempDir(), "offload-mirror"),
		"--etcd-servers="+offload.EventsEtcd.Endpoints[0], "--mirror=true", "--mirror-kubeconfig="+offload.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })

	ns, err := client(t, offload).CoreV1().Namespaces().Create(testContext(t),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "offload-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created, err := client(t, offload).CoreV1().Events(ns.Name).Create(testContext(t), streamEvent(ns.Name, 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const message = "kube-apiserver stores its events in this server's etcd (offload mode"
	err = wait.PollUntilContextTimeout(testContext(t), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(p.Log(), message), nil
	})
	if err != nil {
		t.Fatalf("no refusal in the log within 30s:\n%s", tail(p.Log(), 40))
	}
	ours, err := replicaClient(t, p).CoreV1().Events(ns.Name).Get(testContext(t), created.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ours.UID != created.UID || ours.ResourceVersion != created.ResourceVersion || ours.Labels[pkgmirror.LabelMirroredFrom] != "" {
		t.Errorf("kube-apiserver's event in our store: uid %s, resourceVersion %s, labels %v; want it untouched (uid %s, resourceVersion %s)",
			ours.UID, ours.ResourceVersion, ours.Labels, created.UID, created.ResourceVersion)
	}
}
