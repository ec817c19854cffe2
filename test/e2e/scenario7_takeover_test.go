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

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	ourv1beta1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1beta1"
	"github.com/kube-events/events-apiserver/pkg/generated/clientset/versioned"
	"github.com/kube-events/events-apiserver/test/takeoverprobe"
)

// recorderImage is test/e2e/recorder's: a crash-looping tools/events
// recorder.
const recorderImage = "localhost/events-e2e/recorder:1"

// kubeV1Off is the flag with which kube-apiserver leaves events.k8s.io/v1
// to the APIService.
const kubeV1Off = "--runtime-config=events.k8s.io/v1=false"

// The built-in event policy's folding: after this many occurrences of a
// series within its window, a series is written at most once a flush
// interval.
const (
	foldingAfter         = 10
	foldingFlushInterval = time.Second
)

// unschedulablePods is how many pods no node can take the takeover
// scenario creates.
const unschedulablePods = 200

// replaceV1APIService replaces the APIService v1.events.k8s.io with
// manifest, as docs/takeover.md does (kubectl replace).
func replaceV1APIService(t *testing.T, ctx context.Context, manifest string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "apiservice.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, ctx, "replace", "-f", f)
}

// ourV1APIService is docs/takeover.md's APIService of step 2, with the
// caBundle of the installed v1beta1.events.k8s.io.
func ourV1APIService(t *testing.T, ctx context.Context) string {
	t.Helper()
	ca := mustKubectl(t, ctx, "get", "apiservice", "v1beta1.events.k8s.io", "-o", "jsonpath={.spec.caBundle}")
	return fmt.Sprintf(`apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1.events.k8s.io
  labels: {app.kubernetes.io/part-of: events-apiserver}
spec:
  group: events.k8s.io
  version: v1
  groupPriorityMinimum: 17750
  versionPriority: 15
  caBundle: %s
  service: {name: events-apiserver, namespace: events-apiserver, port: 443}
`, ca)
}

// localV1APIService is docs/takeover.md's APIService of the way back:
// kube-apiserver's own.
const localV1APIService = `apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1.events.k8s.io
  labels: {kube-aggregator.kubernetes.io/automanaged: onstart}
spec: {group: events.k8s.io, version: v1, groupPriorityMinimum: 17750, versionPriority: 15}
`

// overlayOfInstall points the generated install's kustomization at
// artifacts/overlays/<overlay>, as an operator who generated it for offload
// mode edits it for takeover and back.
func overlayOfInstall(t *testing.T, overlay string) {
	t.Helper()
	path := filepath.Join(offload.install, "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	resource := regexp.MustCompile(`(?m)^- (\S*/artifacts/overlays/)(offload|takeover)$`)
	if !resource.Match(data) {
		t.Fatalf("%s names no offload or takeover overlay:\n%s", path, data)
	}
	if err := os.WriteFile(path, resource.ReplaceAll(data, []byte("- ${1}"+overlay)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// switchStep is one step of switching takeover on or off.
type switchStep struct {
	name string
	do   func(t *testing.T)
	// answeredBy is who answers v1 writes after the step.
	answeredBy string
	// restart: the step restarts kube-apiserver, which the cluster has one
	// of, so that writes and lists fail while it is down.
	restart bool
}

// runSwitchSteps runs steps with a takeoverprobe.Prober each, prints what
// writes and lists through kube-apiserver saw, and fails a step that is no
// restart if any of them failed.
func runSwitchSteps(t *testing.T, ctx context.Context, namespace string, steps []switchStep) {
	t.Helper()
	const inARow = 10
	for _, step := range steps {
		p := takeoverprobe.Start(ctx, suite.cluster.Client, namespace)
		start := time.Now()
		step.do(t)
		err := p.WaitAnsweredBy(ctx, step.answeredBy, inARow, 3*time.Minute)
		p.Stop()
		writes, lists := p.FailureWindow()
		logf(t, "%s (%s): %s; writes failed for %v, lists for %v",
			step.name, time.Since(start).Round(time.Millisecond), p.Summary(), writes.Round(time.Millisecond), lists.Round(time.Millisecond))
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if !step.restart && (writes > 0 || lists > 0) {
			t.Errorf("%s: writes failed for %v and lists for %v, want no failure", step.name, writes, lists)
		}
	}
}

// TestTakeover: from offload mode (and kube-apiserver's EventRateLimit),
// takeover switched on as docs/takeover.md says while a prober writes and
// lists events.k8s.io/v1 through kube-apiserver; then the cluster's own
// writers through our server: the scheduler's FailedScheduling series for
// pods no node can take, admitted Ongoing in the very write that makes them
// series and written to etcd within the policy's bound, and a crash-looping
// tools/events recorder in a pod, folded and refused 429 + Retry-After
// without losing an acknowledged occurrence; then the way back.
func TestTakeover(t *testing.T) {
	ctx := context.Background()
	if offload.install == "" {
		t.Fatal("offload mode is not installed: run TestOffloadOverlay first")
	}
	const probeNamespace = "e2e-takeover-probe"
	ensureNamespace(t, ctx, probeNamespace)
	kubeV1On := offload.apiServerFlags
	kubeV1Offloaded := append(slices.Clone(offload.apiServerFlags), kubeV1Off)

	runSwitchSteps(t, ctx, probeNamespace, []switchStep{
		{
			name:       "on: our APIService replaces kube-apiserver's local one",
			do:         func(t *testing.T) { replaceV1APIService(t, ctx, ourV1APIService(t, ctx)) },
			answeredBy: takeoverprobe.AnsweredByUs,
		},
		{
			name: "on: kube-apiserver restarted with " + kubeV1Off,
			do: func(t *testing.T) {
				restartAPIServer(t, ctx, kubeV1Offloaded)
			},
			answeredBy: takeoverprobe.AnsweredByUs,
			restart:    true,
		},
		{
			name: "on: overlays/takeover applied",
			do: func(t *testing.T) {
				overlayOfInstall(t, "takeover")
				mustKubectl(t, ctx, "apply", "-k", offload.install)
			},
			answeredBy: takeoverprobe.AnsweredByUs,
		},
	})
	if t.Failed() {
		return
	}
	mustKubectl(t, ctx, "wait", "--for=condition=Available", "apiservice/v1.events.k8s.io", "--timeout=3m")

	t.Run("Events conformance", eventsConformance("takeover"))
	t.Run("the scheduler's FailedScheduling series", schedulerThroughTakeover)
	t.Run("a crash-looping tools/events recorder in a pod", recorderStormThroughTakeover)

	runSwitchSteps(t, ctx, probeNamespace, []switchStep{
		{
			name: "off: kube-apiserver restarted serving events.k8s.io/v1",
			do: func(t *testing.T) {
				restartAPIServer(t, ctx, kubeV1On)
			},
			answeredBy: takeoverprobe.AnsweredByUs,
			restart:    true,
		},
		{
			name:       "off: kube-apiserver's local APIService replaces ours",
			do:         func(t *testing.T) { replaceV1APIService(t, ctx, localV1APIService) },
			answeredBy: takeoverprobe.AnsweredByKubeAPIServer,
		},
		{
			name: "off: overlays/offload applied",
			do: func(t *testing.T) {
				overlayOfInstall(t, "offload")
				mustKubectl(t, ctx, "apply", "-k", offload.install)
			},
			answeredBy: takeoverprobe.AnsweredByKubeAPIServer,
		},
	})
}

// seriesWatch follows a namespace's FailedScheduling events through the
// server's v1beta1 and keeps, for each event, the state it had when it
// was first seen as a series.
type seriesWatch struct {
	mu sync.Mutex
	// firstState is the series' state in the first watch event in which
	// the event was a series.
	firstState map[string]ourv1beta1.EventSeriesState
	// count is each series' last count, and pod its regarding pod.
	count map[string]int32
	pod   map[string]string
}

func watchSeries(t *testing.T, ctx context.Context, namespace string) *seriesWatch {
	t.Helper()
	ours, err := versioned.NewForConfig(suite.cluster.Admin)
	if err != nil {
		t.Fatal(err)
	}
	client := ours.EventsV1beta1().Events(namespace)
	list, err := client.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = "reason=FailedScheduling"
			return client.Watch(ctx, o)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	sw := &seriesWatch{firstState: map[string]ourv1beta1.EventSeriesState{}, count: map[string]int32{}, pod: map[string]string{}}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				e, isEvent := ev.Object.(*ourv1beta1.Event)
				if !isEvent || e.Series == nil || (ev.Type != watch.Added && ev.Type != watch.Modified) {
					continue
				}
				sw.mu.Lock()
				if _, seen := sw.firstState[e.Name]; !seen {
					sw.firstState[e.Name] = e.Series.State
				}
				sw.count[e.Name], sw.pod[e.Name] = e.Series.Count, e.Regarding.Name
				sw.mu.Unlock()
			}
		}
	}()
	return sw
}

// seriesPods is how many pods have a FailedScheduling series.
func (sw *seriesWatch) seriesPods() int {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	pods := map[string]bool{}
	for _, pod := range sw.pod {
		pods[pod] = true
	}
	return len(pods)
}

// schedulerThroughTakeover: pods no node can take make the scheduler record
// FailedScheduling with its events.k8s.io/v1 recorder, through
// kube-apiserver to our server. The recorder turns a repeat into a series
// with a patch; our admission answers that patch with series.state Ongoing,
// so no watch event shows a series without a state (the series-state
// controller would set it only in a write of its own). Each series is
// written to etcd no more than the policy allows, and kube-apiserver's
// core/v1 (kubectl get events, kubectl events) shows the events.
func schedulerThroughTakeover(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := suite.cluster
	const ns = "e2e-takeover"
	ensureNamespace(t, ctx, ns)
	sw := watchSeries(t, ctx, ns)
	start := time.Now()
	for i := range unschedulablePods {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unschedulable-%d", i), Namespace: ns},
			Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: new(int64),
				NodeSelector:                  map[string]string{"events-e2e/absent": "true"},
				Containers:                    []corev1.Container{{Name: "never", Image: sandboxImage, ImagePullPolicy: corev1.PullIfNotPresent}},
			},
		}
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(context.Context) (bool, error) {
		return sw.seriesPods() == unschedulablePods, nil
	}); err != nil {
		t.Fatalf("%d of %d pods have a FailedScheduling series after %v", sw.seriesPods(), unschedulablePods, time.Since(start).Round(time.Second))
	}
	elapsed := time.Since(start)

	sw.mu.Lock()
	names := make([]string, 0, len(sw.firstState))
	stateless := 0
	for name, state := range sw.firstState {
		names = append(names, name)
		if state != ourv1beta1.EventSeriesStateOngoing {
			stateless++
			t.Errorf("series %s first stored with state %q, want Ongoing from admission", name, state)
		}
	}
	counts := maps.Clone(sw.count)
	sw.mu.Unlock()
	slices.Sort(names)

	// Writes per series: etcd's version of its key counts them.
	etcd := eventsEtcd(t)
	writes, occurrences, maxWrites := int64(0), int64(0), int64(0)
	for _, name := range names {
		resp, err := etcd.Get(ctx, "/registry/events/"+ns+"/"+name, clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 {
			t.Fatalf("series %s: %d keys in the events etcd", name, len(resp.Kvs))
		}
		version := resp.Kvs[0].Version
		writes, occurrences, maxWrites = writes+version, occurrences+int64(counts[name]), max(maxWrites, version)
		// Folding: no more writes than occurrences, and past the first
		// foldingAfter, at most one a flush interval.
		bound := min(int64(counts[name]), foldingAfter+int64(elapsed/foldingFlushInterval)+1)
		if version > bound {
			t.Errorf("series %s (count %d) written %d times to etcd, want at most %d", name, counts[name], version, bound)
		}
	}
	logf(t, "takeover: %d pods with a FailedScheduling series after %v; %d series, first stored with state Ongoing: %d, without: %d; %d occurrences, %d etcd writes (at most %d per series)",
		sw.seriesPods(), elapsed.Round(time.Second), len(names), len(names)-stateless, stateless, occurrences, writes, maxWrites)

	// kube-apiserver's core/v1 reads the same events.
	core := mustKubectl(t, ctx, "get", "events", "-n", ns, "--field-selector", "reason=FailedScheduling", "-o", "name")
	if n := len(strings.Fields(core)); n < len(names) {
		t.Errorf("kubectl get events lists %d FailedScheduling events, want at least the %d series", n, len(names))
	}
	out := mustKubectl(t, ctx, "events", "-n", ns, "--for", "pod/unschedulable-0")
	if !strings.Contains(out, "FailedScheduling") {
		t.Errorf("kubectl events --for pod/unschedulable-0 shows no FailedScheduling:\n%s", out)
	}
	mustKubectl(t, ctx, "delete", "namespace", ns, "--wait=false")
}

// recorderResult is test/e2e/recorder's output.
type recorderResult struct {
	Acknowledged int    `json:"acknowledged"`
	Folded       int    `json:"folded"`
	Refused      int    `json:"refused"`
	RetryAfter   int    `json:"retryAfter"`
	Elapsed      string `json:"elapsed"`
}

// recorderStormThroughTakeover: a controller in a crash loop, each
// incarnation a new tools/events recorder in a pod (test/e2e/recorder)
// recording the same occurrence through kube-apiserver's
// events.k8s.io/v1, 20 at once: past folding's threshold its creates are
// folded into the live event, past its reporter's and object's bursts
// they are answered 429 + Retry-After, and the counts stored hold exactly
// the occurrences the server acknowledged.
func recorderStormThroughTakeover(t *testing.T) {
	ctx := context.Background()
	const ns, pod = "e2e-recorder", "recorder"
	const incarnations, parallel = 200, 20
	ensureNamespace(t, ctx, ns)
	applyYAML(t, ctx, fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata:
  name: recorder
  namespace: %[1]s
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: event-recorder
  namespace: %[1]s
rules:
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create, patch, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: event-recorder
  namespace: %[1]s
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: event-recorder}
subjects:
- {kind: ServiceAccount, name: recorder, namespace: %[1]s}
---
apiVersion: v1
kind: Pod
metadata:
  name: %[2]s
  namespace: %[1]s
spec:
  serviceAccountName: recorder
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: recorder
    image: %[3]s
    imagePullPolicy: IfNotPresent
    args: [--namespace=%[1]s, --regarding=crashing, --incarnations=%[4]d, --parallel=%[5]d]
`, ns, pod, recorderImage, incarnations, parallel))
	out := succeededPodOutput(t, ctx, ns, pod, 5*time.Minute)
	var result recorderResult
	if err := json.Unmarshal([]byte(lastLine(out)), &result); err != nil {
		t.Fatalf("the recorder's output %q: %v", out, err)
	}

	ours, err := versioned.NewForConfig(suite.cluster.Admin)
	if err != nil {
		t.Fatal(err)
	}
	var stored, events int
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := ours.EventsV1beta1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=crashing"})
		if err != nil {
			return false, nil
		}
		stored, events = 0, len(list.Items)
		for _, e := range list.Items {
			if e.Series != nil {
				stored += int(e.Series.Count)
			} else {
				stored++
			}
		}
		return stored == result.Acknowledged, nil
	})
	logf(t, "takeover: a crash-looping tools/events recorder, %d incarnations %d at once, in %s: %d creates acknowledged, %d of them folded, %d refused for good, %d answers 429 with Retry-After; stored: %d occurrences in %d events",
		incarnations, parallel, result.Elapsed, result.Acknowledged, result.Folded, result.Refused, result.RetryAfter, stored, events)
	if err != nil {
		t.Errorf("occurrences stored: %d, want the %d acknowledged", stored, result.Acknowledged)
	}
	if result.Folded == 0 {
		t.Errorf("no create was folded, want those past the %d-th", foldingAfter)
	}
	mustKubectl(t, ctx, "delete", "namespace", ns, "--wait=false")
}

// lastLine is the last line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}
