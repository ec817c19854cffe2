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

// Package mirror runs events-apiserver as the aggregated server of
// events.k8s.io/v1beta1 behind a real kube-apiserver (envtest), mirroring
// kube-apiserver's core/v1 events, and checks through kube-apiserver that
// what is written there appears in our v1beta1.
//
// Run with the envtest assets of hack/envtest-assets.sh:
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test ./test/integration/mirror/
package mirror

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"

	pkgmirror "github.com/kube-events/events-apiserver/pkg/mirror"
	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

const timeout = 60 * time.Second

// cluster mirrors with the default bounds, as our server's ServiceAccount
// (--mirror=true reads through --kubeconfig), so with the RBAC of
// artifacts/ only, and the short series thresholds of the framework.
var cluster *framework.AggregatedCluster

// serverBinary is cmd/events-apiserver built for the tests that run
// replicas as processes of their own.
var serverBinary string

func TestMain(m *testing.M) {
	// Parsed before the cluster starts: the server in it opens an embedded
	// archive, whose engine needs the flags parsed, and -run and -v must
	// reach the tests.
	flag.Parse()
	dir, err := os.MkdirTemp("", "mirror-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if serverBinary, err = harness.BuildServer(context.Background(), dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	admissionConfig, err := framework.WriteSeriesAdmissionConfig(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cluster, err = framework.StartAggregatedCluster(framework.AggregatedClusterOptions{
		ExtraServerFlags: []string{"--mirror=true", "--admission-control-config-file=" + admissionConfig},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the aggregated cluster: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the aggregated cluster: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	return ctx
}

func client(t *testing.T, c *framework.AggregatedCluster) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func newNamespace(t *testing.T, c *framework.AggregatedCluster) string {
	t.Helper()
	ns, err := client(t, c).CoreV1().Namespaces().Create(testContext(t),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "mirror-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// waitForV1beta1 polls our v1beta1 (through kube-apiserver's aggregator)
// with the field selector until the listed names are want.
func waitForV1beta1(t *testing.T, ns, selector string, want ...string) []eventsv1beta1.Event {
	t.Helper()
	var got []eventsv1beta1.Event
	var last error
	err := wait.PollUntilContextTimeout(testContext(t), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client(t, cluster).EventsV1beta1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
		if last = err; err != nil {
			return false, nil
		}
		got = list.Items
		var names []string
		for _, e := range got {
			names = append(names, e.Name)
		}
		return strings.Join(names, ",") == strings.Join(want, ","), nil
	})
	if err != nil {
		var names []string
		for _, e := range got {
			names = append(names, e.Name)
		}
		t.Fatalf("v1beta1 events in %s with %q: %v (last error %v), want %v", ns, selector, names, last, want)
	}
	return got
}

// Events created in kube-apiserver through core/v1 (a legacy one and one
// in the events.k8s.io shape) and through client-go's events.k8s.io
// recorder appear in our v1beta1, selectable by related.name, action and
// regarding.name, labeled as mirrored.
func TestCoreV1EventsAppearInOurV1beta1(t *testing.T) {
	ns := newNamespace(t, cluster)
	ctx := testContext(t)
	upstream := client(t, cluster).CoreV1().Events(ns)
	now := time.Now()
	legacy := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web-0.legacy", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web-0", APIVersion: "v1"},
		Reason:         "BackOff", Message: "Back-off restarting failed container", Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now), Count: 1,
	}
	modern := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web-1.modern", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web-1", APIVersion: "v1"},
		Related:        &corev1.ObjectReference{Kind: "Node", Name: "node-7", APIVersion: "v1"},
		Reason:         "Scheduled", Message: "assigned to node-7", Type: corev1.EventTypeNormal, Action: "Binding",
		EventTime: metav1.NewMicroTime(now), ReportingController: "default-scheduler", ReportingInstance: "scheduler-1",
		Series: &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(now)},
	}
	for _, e := range []*corev1.Event{legacy, modern} {
		if _, err := upstream.Create(ctx, e, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// client-go's events.k8s.io recorder, writing to kube-apiserver's
	// events.k8s.io/v1.
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client(t, cluster).EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broadcaster.Shutdown)
	recorder := broadcaster.NewRecorder(scheme.Scheme, "mirror-test-controller")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "recorded-pod", Namespace: ns, UID: "recorded-pod-uid"}}
	recorder.Eventf(pod, nil, corev1.EventTypeNormal, "Pulled", "Pulling", "pulled image %s", "busybox")

	waitForV1beta1(t, ns, "related.name=node-7", "web-1.modern")
	waitForV1beta1(t, ns, "action=Binding", "web-1.modern")
	got := waitForV1beta1(t, ns, "regarding.name=web-0", "web-0.legacy")
	if got[0].DeprecatedCount != 1 || got[0].DeprecatedSource.Component != "kubelet" || got[0].Reason != "BackOff" {
		t.Errorf("mirrored legacy event = %+v", got[0])
	}
	if got[0].Labels[pkgmirror.LabelMirroredFrom] != pkgmirror.SourceKubeAPIServer {
		t.Errorf("labels = %v, want the mirrored-from label", got[0].Labels)
	}
	recorded := waitForV1beta1(t, ns, "regarding.name=recorded-pod,action=Pulling", eventName(t, ns, "recorded-pod"))
	if recorded[0].ReportingController != "mirror-test-controller" || recorded[0].Note != "pulled image busybox" {
		t.Errorf("mirrored recorder event = %+v", recorded[0])
	}
	modernGot := waitForV1beta1(t, ns, "regarding.name=web-1", "web-1.modern")
	if s := modernGot[0].Series; s == nil || s.Count != 2 {
		t.Errorf("mirrored series = %+v", s)
	}
}

// eventName is the name of the one upstream event about the named object.
func eventName(t *testing.T, ns, regarding string) string {
	t.Helper()
	var name string
	err := wait.PollUntilContextTimeout(testContext(t), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client(t, cluster).CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + regarding})
		if err != nil || len(list.Items) != 1 {
			return false, nil
		}
		name = list.Items[0].Name
		return true, nil
	})
	if err != nil {
		t.Fatalf("upstream event about %s: %v", regarding, err)
	}
	return name
}

// An upstream update (count) is reflected; an upstream delete leaves ours
// in place (our own TTL applies), while the mirror keeps mirroring.
func TestUpstreamUpdateIsReflectedAndDeleteIsNot(t *testing.T) {
	ns := newNamespace(t, cluster)
	ctx := testContext(t)
	upstream := client(t, cluster).CoreV1().Events(ns)
	now := time.Now()
	event := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "db-0.counted", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "db-0", APIVersion: "v1"},
		Reason:         "Unhealthy", Message: "Readiness probe failed", Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "kubelet"},
		FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now), Count: 1,
	}
	created, err := upstream.Create(ctx, event, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitForV1beta1(t, ns, "regarding.name=db-0", "db-0.counted")

	created.Count = 5
	created.LastTimestamp = metav1.NewTime(now.Add(time.Minute))
	if _, err := upstream.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		ours, err := client(t, cluster).EventsV1beta1().Events(ns).Get(ctx, "db-0.counted", metav1.GetOptions{})
		return err == nil && ours.DeprecatedCount == 5, nil
	})
	if err != nil {
		t.Fatalf("count 5 never reached our copy: %v", err)
	}

	if err := upstream.Delete(ctx, "db-0.counted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Another event created after the delete reaching us proves the
	// mirror has seen the delete (the watch delivers in order).
	after := event.DeepCopy()
	after.Name, after.InvolvedObject.Name = "db-1.after", "db-1"
	if _, err := upstream.Create(ctx, after, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForV1beta1(t, ns, "regarding.name=db-1", "db-1.after")
	if _, err := client(t, cluster).EventsV1beta1().Events(ns).Get(ctx, "db-0.counted", metav1.GetOptions{}); err != nil {
		t.Errorf("our copy after the upstream delete: %v, want it kept", err)
	}
	if _, err := upstream.Get(ctx, "db-0.counted", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("upstream event after delete: %v, want NotFound (never written back)", err)
	}
}

// Restarting our server while events keep arriving upstream: the events
// created while it was down are mirrored once it is back (no gaps), and
// those mirrored before keep their uid and resourceVersion (neither
// created again nor rewritten: no duplicates).
func TestRestartMidStreamLeavesNoDuplicatesAndNoGaps(t *testing.T) {
	ns := newNamespace(t, cluster)
	ctx := testContext(t)
	upstream := client(t, cluster).CoreV1().Events(ns)
	create := func(i int) error {
		name := fmt.Sprintf("stream-%03d", i)
		now := time.Now()
		_, err := upstream.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "streamer", APIVersion: "v1"},
			Reason:         "Stream", Message: "event " + strconv.Itoa(i), Type: corev1.EventTypeNormal,
			Source:         corev1.EventSource{Component: "streamer"},
			FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now), Count: 1,
		}, metav1.CreateOptions{})
		return err
	}
	names := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf("stream-%03d", i))
		}
		return out
	}

	const before = 10
	for i := range before {
		if err := create(i); err != nil {
			t.Fatal(err)
		}
	}
	mirrored := map[string]eventsv1beta1.Event{}
	for _, e := range waitForV1beta1(t, ns, "regarding.name=streamer", names(0, before)...) {
		mirrored[e.Name] = e
	}

	// Keep creating upstream, one event every 40ms, across the restart,
	// until a few were created after it.
	var created atomic.Int32
	stop := make(chan struct{})
	produced := make(chan error, 1)
	go func() {
		for i := before; ; i++ {
			select {
			case <-stop:
				produced <- nil
				return
			default:
			}
			if err := create(i); err != nil {
				produced <- fmt.Errorf("creating stream-%03d: %w", i, err)
				return
			}
			created.Add(1)
			time.Sleep(40 * time.Millisecond)
		}
	}()
	time.Sleep(300 * time.Millisecond)
	relists := metric(t, cluster, "events_apiserver_mirror_relists_total")
	if err := cluster.StopServer(); err != nil {
		t.Fatal(err)
	}
	atStop := created.Load()
	time.Sleep(time.Second) // events arrive upstream while we are down
	if err := cluster.StartServerAgain(ctx); err != nil {
		t.Fatal(err)
	}
	atStart := created.Load()
	for created.Load() < atStart+5 && len(produced) == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	if atStop == 0 || atStart == atStop {
		t.Fatalf("events created before the stop %d, while down %d: want some in each phase", atStop, atStart-atStop)
	}
	total := before + int(created.Load())
	if got := metric(t, cluster, "events_apiserver_mirror_relists_total") - relists; got < 1 {
		t.Errorf("relists_total grew by %v across the restart, want the restarted mirror's list counted", got)
	}

	ours := waitForV1beta1(t, ns, "regarding.name=streamer", names(0, total)...)
	theirs, err := upstream.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	upstreamUID := map[string]string{}
	for _, e := range theirs.Items {
		upstreamUID[e.Name] = string(e.UID)
	}
	for _, e := range ours {
		if got := e.Annotations[pkgmirror.AnnotationUID]; got != upstreamUID[e.Name] {
			t.Errorf("%s: upstream uid annotation %q, want %q", e.Name, got, upstreamUID[e.Name])
		}
		if first, ok := mirrored[e.Name]; ok && (e.UID != first.UID || e.ResourceVersion != first.ResourceVersion) {
			t.Errorf("%s was written again across the restart: uid %s -> %s, resourceVersion %s -> %s",
				e.Name, first.UID, e.UID, first.ResourceVersion, e.ResourceVersion)
		}
	}
}

// metric reads metric name, summed over its labels, from our server's
// /metrics (0 when absent).
func metric(t *testing.T, c *framework.AggregatedCluster, name string) float64 {
	t.Helper()
	direct, err := kubernetes.NewForConfig(c.ServerConfig)
	if err != nil {
		t.Fatal(err)
	}
	m, err := harness.ScrapeMetrics(testContext(t), direct.CoreV1().RESTClient())
	if err != nil {
		t.Fatal(err)
	}
	return m.Value(name, nil)
}
