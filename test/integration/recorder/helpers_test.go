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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/recorder"
	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// waitTimeout bounds every wait on the servers.
const waitTimeout = 60 * time.Second

// reportingInstance is the instance every test recorder reports as, so
// that a second broadcaster continues the first one's events.
const reportingInstance = "test-instance-0"

var namespaceSeq atomic.Int64

// fixture is one test's view of a target: a fresh namespace, a fake clock
// and a counting proxy in front of the server.
type fixture struct {
	target    target
	namespace string
	clock     *testingclock.FakeClock
	proxy     *framework.CountingProxy
	admin     kubernetes.Interface
	logs      *syncBuffer
}

func newFixture(t *testing.T, tg target) *fixture {
	t.Helper()
	f := &fixture{
		target:    tg,
		namespace: fmt.Sprintf("recorder-%d", namespaceSeq.Add(1)),
		clock:     testingclock.NewFakeClock(time.Now().Truncate(time.Second)),
		logs:      &syncBuffer{},
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("recorder logs:\n%s", f.logs.String())
		}
	})
	f.proxy = framework.StartCountingProxy(t, tg.config, f.clock.Now)
	var err error
	if f.admin, err = kubernetes.NewForConfig(tg.config); err != nil {
		t.Fatal(err)
	}
	if tg.needsNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.namespace}}
		if _, err := f.admin.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// start starts a broadcaster through the proxy with the fixture's clock
// and a recorder for controller; Shutdown runs when the test ends, unless
// the test did it.
func (f *fixture) start(t *testing.T, controller string, opts recorder.Options) (*recorder.Broadcaster, events.EventRecorderLogger) {
	t.Helper()
	client, err := kubernetes.NewForConfig(f.proxy.Config())
	if err != nil {
		t.Fatal(err)
	}
	opts.Clock = f.clock
	opts.ReportingInstance = reportingInstance
	opts.RestoreNamespace = f.namespace
	broadcaster := recorder.NewBroadcaster(client.EventsV1(), opts)
	rec := broadcaster.NewRecorder(scheme.Scheme, controller)
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(f.logs), textlogger.Verbosity(2)))
	if err := broadcaster.StartRecordingToSinkWithContext(klog.NewContext(t.Context(), logger)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broadcaster.Shutdown)
	return broadcaster, rec
}

// pod is a regarding object in the fixture's namespace.
func (f *fixture) pod(name string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.namespace, UID: types.UID("uid-" + name)},
	}
}

// eventRequests are the requests the proxy received for events, in order.
func (f *fixture) eventRequests() []framework.ProxiedRequest {
	var out []framework.ProxiedRequest
	for _, r := range f.proxy.Requests() {
		if strings.HasSuffix(r.Path, "/events") || strings.Contains(r.Path, "/events/") {
			out = append(out, r)
		}
	}
	return out
}

// writes are the event requests that are not reads.
func (f *fixture) writes() []framework.ProxiedRequest {
	var out []framework.ProxiedRequest
	for _, r := range f.eventRequests() {
		if r.Method != http.MethodGet {
			out = append(out, r)
		}
	}
	return out
}

// waitWrites waits until the proxy has received n event writes.
func (f *fixture) waitWrites(t *testing.T, n int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		return len(f.writes()) >= n, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d event writes at the server: got requests %s", n, describe(f.eventRequests()))
	}
}

// waitLists waits until the start's list calls reached the server.
func (f *fixture) waitLists(t *testing.T) {
	t.Helper()
	f.waitRequests(t, len(f.target.listCalls))
}

// waitRequests waits until the proxy has received n event requests.
func (f *fixture) waitRequests(t *testing.T, n int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		return len(f.eventRequests()) >= n, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d event requests at the server: got %s", n, describe(f.eventRequests()))
	}
}

// calls summarizes requests as "METHOD[state](error status)" for
// comparisons: GET, GET(400), POST, POST(429), PATCH[Ongoing], PATCH[Finished].
func calls(requests []framework.ProxiedRequest) []string {
	var out []string
	for _, r := range requests {
		call := r.Method
		if r.Method == http.MethodPatch {
			call += "[" + patchedSeries(r).State + "]"
		}
		if r.Status >= 400 {
			call += "(" + strconv.Itoa(r.Status) + ")"
		}
		out = append(out, call)
	}
	return out
}

func describe(requests []framework.ProxiedRequest) string {
	return fmt.Sprintf("%d: %v", len(requests), calls(requests))
}

// series is an event's series as stored or patched, state included.
type series struct {
	Count            int32            `json:"count"`
	LastObservedTime metav1.MicroTime `json:"lastObservedTime"`
	State            string           `json:"state,omitempty"`
}

func patchedSeries(r framework.ProxiedRequest) series {
	var patch struct {
		Series series `json:"series"`
	}
	_ = json.Unmarshal(r.Body, &patch)
	return patch.Series
}

// storedEvent is an events.k8s.io/v1 Event read as JSON, series.state included.
type storedEvent struct {
	eventsv1.Event `json:",inline"`
	Series         *series `json:"series,omitempty"`
}

// storedEvents lists the namespace's events directly from the server.
func (f *fixture) storedEvents(t *testing.T) []storedEvent {
	t.Helper()
	raw, err := f.admin.EventsV1().RESTClient().Get().Namespace(f.namespace).Resource("events").
		SetHeader("Accept", "application/json").Do(t.Context()).Raw()
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []storedEvent `json:"items"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitStored waits until the namespace's events satisfy done.
func (f *fixture) waitStored(t *testing.T, what string, done func([]storedEvent) bool) []storedEvent {
	t.Helper()
	var last []storedEvent
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		last = f.storedEvents(t)
		return done(last), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: stored %+v; requests %s", what, summarize(last), describe(f.eventRequests()))
	}
	return last
}

// finishedState is what a finished series' state reads as on the target.
func (f *fixture) finishedState() string {
	if f.target.hasState {
		return "Finished"
	}
	return ""
}

// summary is what tests compare of a stored event.
type summary struct {
	Regarding string
	Reason    string
	Count     int32
	State     string
}

func summarize(stored []storedEvent) []summary {
	var out []summary
	for _, e := range stored {
		s := summary{Regarding: e.Regarding.Name, Reason: e.Reason, Count: 1}
		if e.Series != nil {
			s.Count, s.State = e.Series.Count, e.Series.State
		}
		out = append(out, s)
	}
	return out
}

// counter reads a recorder counter from the legacy registry.
func counter(t *testing.T, name, label, value string) float64 {
	t.Helper()
	m, err := harness.GatherMetrics(legacyregistry.DefaultGatherer)
	if err != nil {
		t.Fatal(err)
	}
	return m.Value(name, map[string]string{label: value})
}

// counters reads the recorder's counters by label value.
func counters(t *testing.T, name, label string, values ...string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, v := range values {
		out[v] = counter(t, name, label, v)
	}
	return out
}

func delta(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		out[k] = v - before[k]
	}
	return out
}

// syncBuffer collects log output written from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func sortSummaries(s []summary) {
	sort.Slice(s, func(i, j int) bool {
		if s[i].Regarding != s[j].Regarding {
			return s[i].Regarding < s[j].Regarding
		}
		return s[i].Reason < s[j].Reason
	})
}
