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

package takeover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	ourv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
)

// Who answered a write of events.k8s.io/v1 through kube-apiserver.
const (
	answeredByUs          = "events-apiserver"
	answeredByKubeAPIServ = "kube-apiserver"
)

// probeInterval is how often the prober writes and lists.
const probeInterval = 20 * time.Millisecond

// answer is one probe's outcome: who stored the write, or the failure.
type answer struct {
	at     time.Time
	by     string // answeredByUs or answeredByKubeAPIServ; "" when failed
	failed string // "404", "503", "connection refused"...; "" when stored
}

// probes numbers the probes of every prober: each writes a new event.
var probes atomic.Int64

// prober writes an events.k8s.io/v1 series through kube-apiserver every
// probeInterval, with no retry, and lists the namespace's events.k8s.io
// events, as `kubectl get events.events.k8s.io` does, and records the
// answers. Each write is a new series of its own reporter and object, so
// that no rate limit applies: our admission answers it with series.state
// Ongoing, kube-apiserver's strategy knows no state.
type prober struct {
	namespace string
	kube      kubernetes.Interface

	mu      sync.Mutex
	writes  []answer
	lists   []answer
	stopped chan struct{}
	cancel  context.CancelFunc
}

func startProber(t *testing.T, namespace string) *prober {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	p := &prober{namespace: namespace, kube: kubeClient(t, cluster.AdminConfig), stopped: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(p.stopped)
		for ctx.Err() == nil {
			write := p.write(ctx, int(probes.Add(1)))
			list := p.list(ctx)
			if ctx.Err() != nil {
				return // stopped while probing: no answer
			}
			p.mu.Lock()
			p.writes, p.lists = append(p.writes, write), append(p.lists, list)
			p.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(probeInterval):
			}
		}
	}()
	t.Cleanup(p.stop)
	return p
}

func (p *prober) write(ctx context.Context, i int) answer {
	now := metav1.NewMicroTime(time.Now())
	event := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("probe-%d", i), Namespace: p.namespace},
		EventTime:           now,
		Series:              &eventsv1.EventSeries{Count: 2, LastObservedTime: now},
		ReportingController: "example.com/prober",
		ReportingInstance:   fmt.Sprintf("prober-%d", i),
		Action:              "Probe",
		Reason:              "Probed",
		Regarding:           *podRef(p.namespace, fmt.Sprintf("probe-%d", i)),
		Type:                corev1.EventTypeNormal,
	}
	body, err := json.Marshal(event)
	if err != nil {
		panic(err)
	}
	raw, err := p.kube.EventsV1().RESTClient().Post().MaxRetries(0).
		Namespace(p.namespace).Resource("events").Body(body).Do(ctx).Raw()
	if err != nil {
		return answer{at: time.Now(), failed: failure(err)}
	}
	var stored ourv1.Event
	if err := json.Unmarshal(raw, &stored); err != nil {
		return answer{at: time.Now(), failed: err.Error()}
	}
	if stored.Series != nil && stored.Series.State == ourv1.EventSeriesStateOngoing {
		return answer{at: time.Now(), by: answeredByUs}
	}
	return answer{at: time.Now(), by: answeredByKubeAPIServ}
}

func (p *prober) list(ctx context.Context) answer {
	err := p.kube.EventsV1().RESTClient().Get().MaxRetries(0).
		Namespace(p.namespace).Resource("events").Param("limit", "1").Do(ctx).Error()
	if err != nil {
		return answer{at: time.Now(), failed: failure(err)}
	}
	return answer{at: time.Now(), by: "listed"}
}

// failure names an error by its HTTP code, or by what failed.
func failure(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Sprint(status.Status().Code)
	}
	switch msg := err.Error(); {
	case strings.Contains(msg, "connection refused"):
		return "connection refused"
	case strings.Contains(msg, "EOF"), strings.Contains(msg, "connection reset"):
		return "connection closed"
	default:
		return msg
	}
}

func (p *prober) stop() {
	p.cancel()
	<-p.stopped
}

// waitAnsweredBy waits until n writes in a row were answered by who.
func (p *prober) waitAnsweredBy(t *testing.T, who string, n int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), probeInterval, timeout, true, func(context.Context) (bool, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(p.writes) < n {
			return false, nil
		}
		for _, a := range p.writes[len(p.writes)-n:] {
			if a.by != who {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the last %d writes through kube-apiserver: %s, want each answered by %s", n, p.summary(), who)
	}
}

// summary says, of the answers so far, which failed, over how long, and
// who answered the others.
func (p *prober) summary() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return "writes: " + summarize(p.writes) + "; lists: " + summarize(p.lists)
}

// failureWindow is the time from the first failed answer to the end of
// the last one, and how many failed.
func (p *prober) failureWindow() (writes, lists time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return window(p.writes), window(p.lists)
}

// window is the time from the first failed answer to the last, plus the
// probe interval (a failure began at most one probe before it was seen).
func window(answers []answer) time.Duration {
	var first, last time.Time
	for _, a := range answers {
		if a.failed == "" {
			continue
		}
		if first.IsZero() {
			first = a.at
		}
		last = a.at
	}
	if first.IsZero() {
		return 0
	}
	return last.Sub(first) + probeInterval
}

// summarize counts the answers by who stored them or how they failed, with
// the window of each kind of failure.
func summarize(answers []answer) string {
	counts := map[string]int{}
	failures := map[string][]answer{}
	for _, a := range answers {
		if a.failed != "" {
			failures[a.failed] = append(failures[a.failed], a)
			continue
		}
		counts[a.by]++
	}
	var parts []string
	for _, by := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[by], by))
	}
	for _, kind := range slices.Sorted(maps.Keys(failures)) {
		parts = append(parts, fmt.Sprintf("%d failed %s within %v", len(failures[kind]), kind, window(failures[kind]).Round(time.Millisecond)))
	}
	return fmt.Sprintf("%d: %s", len(answers), strings.Join(parts, ", "))
}

// localV1APIService is the APIService kube-apiserver registers for its own
// events.k8s.io/v1: no service, its priorities, and the label by which it
// manages it (kube-apiserver deletes it at start if it does not serve v1).
func localV1APIService() map[string]any {
	return map[string]any{
		"labels": map[string]any{automanagedLabel: "onstart"},
		"spec": map[string]any{
			"group": "events.k8s.io", "version": "v1",
			"groupPriorityMinimum": int64(17750), "versionPriority": int64(15),
		},
	}
}

// replaceV1APIService updates v1.events.k8s.io in place to labels and
// spec, as `kubectl replace` does: one object changes, so kube-apiserver's
// aggregator switches its handler at once.
func replaceV1APIService(t *testing.T, with map[string]any) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cluster.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	current, err := dyn.Resource(apiServicesGVR).Get(testContext(t), v1APIServiceName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{}
	for k, v := range with["labels"].(map[string]any) {
		labels[k] = v.(string)
	}
	current.SetLabels(labels)
	current.SetAnnotations(nil)
	current.Object["spec"] = with["spec"]
	if _, err := dyn.Resource(apiServicesGVR).Update(testContext(t), current, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("replacing APIService %s: %v", v1APIServiceName, err)
	}
}

// ourV1APIService is our v1.events.k8s.io of artifacts/overlays/takeover,
// as replaceV1APIService takes it.
func ourV1APIService(t *testing.T) map[string]any {
	t.Helper()
	apiService, err := cluster.OverlayAPIService(testContext(t), repoRoot, "takeover", v1APIServiceName)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]any{}
	for k, v := range apiService.GetLabels() {
		labels[k] = v
	}
	spec, _, _ := unstructured.NestedMap(apiService.Object, "spec")
	return map[string]any{"labels": labels, "spec": spec}
}

// TestSwitchingOffAndOn takes events.k8s.io/v1 back to kube-apiserver and
// gives it to our server again, the way docs/takeover.md says, while a
// prober writes and lists through kube-apiserver; it prints how long the
// prober's writes and lists failed at each step, and checks that only
// kube-apiserver's restarts fail them.
func TestSwitchingOffAndOn(t *testing.T) {
	namespace := newNamespace(t)
	const inARow = 10
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(cluster.Dir, "kube-apiserver.log"))
			t.Logf("kube-apiserver's log:\n%s", log[max(0, len(log)-20000):])
		}
	})

	steps := []struct {
		name string
		do   func(t *testing.T)
		// answeredBy is who answers v1 writes after the step.
		answeredBy string
		// restart: kube-apiserver is down for a while (one envtest
		// instance, no other to fail over to).
		restart bool
	}{
		{
			name: "off: kube-apiserver serves events.k8s.io/v1 again, our APIService still routes to us",
			do: func(t *testing.T) {
				if err := cluster.RestartKubeAPIServer(map[string]string{"runtime-config": ""}); err != nil {
					t.Fatal(err)
				}
			},
			answeredBy: answeredByUs,
			restart:    true,
		},
		{
			name:       "off: kube-apiserver's local APIService replaces ours",
			do:         func(t *testing.T) { replaceV1APIService(t, localV1APIService()) },
			answeredBy: answeredByKubeAPIServ,
		},
		{
			name:       "on: our APIService replaces kube-apiserver's local one",
			do:         func(t *testing.T) { replaceV1APIService(t, ourV1APIService(t)) },
			answeredBy: answeredByUs,
		},
		{
			name: "on: kube-apiserver stops serving events.k8s.io/v1 and leaves our APIService alone",
			do: func(t *testing.T) {
				if err := cluster.RestartKubeAPIServer(map[string]string{"runtime-config": kubeV1Disabled}); err != nil {
					t.Fatal(err)
				}
			},
			answeredBy: answeredByUs,
			restart:    true,
		},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			p := startProber(t, namespace)
			p.waitAnsweredBy(t, answeredByThen(t), inARow)
			step.do(t)
			p.waitAnsweredBy(t, step.answeredBy, inARow)
			p.stop()
			writes, lists := p.failureWindow()
			t.Logf("%s: %s", step.name, p.summary())
			if !step.restart && (writes > 0 || lists > 0) {
				t.Errorf("writes failed for %v and lists for %v, want no failure: %s", writes, lists, p.summary())
			}
		})
	}
	if err := servedByUs(testContext(t)); err != nil {
		t.Errorf("after switching off and on: %v", err)
	}
}

// answeredByThen is who answers v1 writes now, from the APIService.
func answeredByThen(t *testing.T) string {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cluster.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	apiService, err := dyn.Resource(apiServicesGVR).Get(testContext(t), v1APIServiceName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedMap(apiService.Object, "spec", "service"); found {
		return answeredByUs
	}
	return answeredByKubeAPIServ
}
