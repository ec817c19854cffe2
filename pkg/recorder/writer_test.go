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
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	testingclock "k8s.io/utils/clock/testing"
)

// TestWriterStateMachine drives the writer against an API server that
// answers each write as scripted, on a fake clock: which calls follow an
// answer, how long the writer backs off, and what it counts.
func TestWriterStateMachine(t *testing.T) {
	const (
		initialBackoff = time.Second
		maxBackoff     = 4 * time.Second
	)
	tests := []struct {
		name string
		// occurrences of one isomorphic event, recorded in phases: the
		// first before the writer starts, each next one once the writer
		// is idle again.
		occurrences []int
		// answers to the write calls, in order; a success after them.
		answers []answer
		// want: the write calls ("create a": a create of the first name
		// seen), the backoffs waited (each may be up to 20% longer: the
		// jitter), and the changes of the recorder's counters.
		wantCalls    []string
		wantDelays   []time.Duration
		wantWrites   map[string]float64
		wantBackoffs map[string]float64
		wantDropped  map[string]float64
	}{{
		name:        "a single occurrence is one create",
		occurrences: []int{1},
		wantCalls:   []string{"create a"},
		wantWrites:  map[string]float64{writeCreate: 1},
	}, {
		name:        "a second occurrence starts the series with a patch",
		occurrences: []int{3},
		wantCalls:   []string{"create a", "patch a count=3 Ongoing"},
		wantWrites:  map[string]float64{writeCreate: 1, writeSeriesStart: 1},
	}, {
		name:         "5xx is retried after the backoff",
		occurrences:  []int{1},
		answers:      []answer{{code: http.StatusInternalServerError}, {code: http.StatusServiceUnavailable}},
		wantCalls:    []string{"create a", "create a", "create a"},
		wantDelays:   []time.Duration{initialBackoff, 2 * initialBackoff},
		wantWrites:   map[string]float64{writeCreate: 1},
		wantBackoffs: map[string]float64{"server_error": 2},
	}, {
		name:         "429 is retried no sooner than its Retry-After",
		occurrences:  []int{1},
		answers:      []answer{{code: http.StatusTooManyRequests, retryAfter: 3}},
		wantCalls:    []string{"create a", "create a"},
		wantDelays:   []time.Duration{3 * time.Second},
		wantWrites:   map[string]float64{writeCreate: 1},
		wantBackoffs: map[string]float64{"throttled": 1},
	}, {
		name:        "the backoff doubles up to MaxBackoff and starts again after a success",
		occurrences: []int{2},
		answers: []answer{
			{code: http.StatusInternalServerError}, {code: http.StatusInternalServerError},
			{code: http.StatusInternalServerError}, {code: http.StatusInternalServerError},
			{}, {code: http.StatusBadGateway},
		},
		wantCalls: []string{"create a", "create a", "create a", "create a", "create a",
			"patch a count=2 Ongoing", "patch a count=2 Ongoing"},
		wantDelays:   []time.Duration{initialBackoff, 2 * initialBackoff, maxBackoff, maxBackoff, initialBackoff},
		wantWrites:   map[string]float64{writeCreate: 1, writeSeriesStart: 1},
		wantBackoffs: map[string]float64{"server_error": 5},
	}, {
		name:        "404 on a patch creates the event again, then its series",
		occurrences: []int{2},
		answers:     []answer{{}, {code: http.StatusNotFound}},
		wantCalls:   []string{"create a", "patch a count=2 Ongoing", "create a", "patch a count=2 Ongoing"},
		wantWrites:  map[string]float64{writeCreate: 2, writeSeriesStart: 1},
	}, {
		name:        "409 on a create takes another name",
		occurrences: []int{1},
		answers:     []answer{{code: http.StatusConflict}},
		wantCalls:   []string{"create a", "create b"},
		wantWrites:  map[string]float64{writeCreate: 1},
	}, {
		name:        "a rejected create (4xx) is dropped: the next occurrence is a new event",
		occurrences: []int{1, 1},
		answers:     []answer{{code: http.StatusUnprocessableEntity}},
		wantCalls:   []string{"create a", "create b"},
		wantWrites:  map[string]float64{writeCreate: 1},
		wantDropped: map[string]float64{"rejected": 1},
	}, {
		name:        "a rejected patch (4xx) is dropped with its series",
		occurrences: []int{2, 1},
		answers:     []answer{{}, {code: http.StatusForbidden}},
		wantCalls:   []string{"create a", "patch a count=2 Ongoing", "create b"},
		wantWrites:  map[string]float64{writeCreate: 2},
		wantDropped: map[string]float64{"rejected": 1},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			server := &apiServer{answers: tc.answers}
			ts := httptest.NewServer(server)
			defer ts.Close()
			client := kubernetes.NewForConfigOrDie(&rest.Config{Host: ts.URL})
			clock := &backoffClock{FakeClock: testingclock.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))}
			b := NewBroadcaster(client.EventsV1(), Options{
				InitialBackoff: initialBackoff, MaxBackoff: maxBackoff,
				ReportingInstance: "test-0", Clock: clock,
			})
			before := counters()
			recorder := b.NewRecorder(scheme.Scheme, "example.com/test")
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "uid-web-0"}}

			for phase, n := range tc.occurrences {
				for range n {
					recorder.Eventf(pod, nil, corev1.EventTypeWarning, "BackOff", "Restarting", "Back-off restarting failed container")
				}
				if phase == 0 {
					if err := b.StartRecordingToSinkWithContext(t.Context()); err != nil {
						t.Fatal(err)
					}
				}
				// Idle: every write of the phase answered and applied.
				err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
					b.mu.Lock()
					defer b.mu.Unlock()
					return len(b.queue) == 0 && len(b.restores) == 0, nil
				})
				if err != nil {
					t.Fatalf("phase %d: the writer did not become idle: %v; calls so far %v", phase, err, server.log())
				}
			}
			b.Shutdown()

			if diff := cmp.Diff(tc.wantCalls, server.log()); diff != "" {
				t.Errorf("write calls (-want +got):\n%s", diff)
			}
			delays := clock.waited()
			if len(delays) != len(tc.wantDelays) {
				t.Errorf("backoffs: got %v, want %v (each with up to 20%% jitter)", delays, tc.wantDelays)
			} else {
				for i, want := range tc.wantDelays {
					if delays[i] < want || delays[i] > want+want/5 {
						t.Errorf("backoff %d: got %v, want %v with up to 20%% jitter (all: %v)", i, delays[i], want, delays)
					}
				}
			}
			got := counters().sub(before)
			want := recorderCounters{writes: tc.wantWrites, backoffs: tc.wantBackoffs, dropped: tc.wantDropped}
			if diff := cmp.Diff(want.normalized(), got.normalized(), cmp.AllowUnexported(recorderCounters{})); diff != "" {
				t.Errorf("counters (-want +got):\n%s", diff)
			}
		})
	}
}

// backoffClock is a fake clock on which the writer's backoffs pass at
// once, their lengths kept: the writer waits only through After.
type backoffClock struct {
	*testingclock.FakeClock
	mu     sync.Mutex
	delays []time.Duration
}

func (c *backoffClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.delays = append(c.delays, d)
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- c.FakeClock.Now().Add(d)
	return ch
}

func (c *backoffClock) waited() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.delays...)
}

// answer is a scripted answer to one write call; code 0 is a success.
type answer struct {
	code       int
	retryAfter int // seconds, with 429
}

// apiServer answers the recorder's calls as events-apiserver and
// kube-apiserver do (an empty list on start; creates and merge patches of
// events.k8s.io/v1 Events), with the scripted answers to writes, and logs
// the writes.
type apiServer struct {
	mu      sync.Mutex
	answers []answer
	calls   []string
	names   map[string]string // event name -> a, b, ... in order of appearance
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		writeJSON(w, http.StatusOK, &eventsv1.EventList{TypeMeta: metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "EventList"}})
		return
	}
	var event eventsv1.Event
	var call string
	switch r.Method {
	case http.MethodPost:
		if err := json.NewDecoder(r.Body).Decode(&event); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		call = "create " + s.alias(event.Name)
	case http.MethodPatch:
		var patch struct {
			Series struct {
				Count int32  `json:"count"`
				State string `json:"state"`
			} `json:"series"`
		}
		if err := json.NewDecoder(r.Body).Decode(&patch); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		event.Name, event.Namespace = path.Base(r.URL.Path), "default"
		event.Series = &eventsv1.EventSeries{Count: patch.Series.Count}
		call = fmt.Sprintf("patch %s count=%d %s", s.alias(event.Name), patch.Series.Count, patch.Series.State)
	default:
		http.Error(w, "unexpected "+r.Method, http.StatusMethodNotAllowed)
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, call)
	var a answer
	if len(s.answers) > 0 {
		a, s.answers = s.answers[0], s.answers[1:]
	}
	s.mu.Unlock()

	if a.code == 0 {
		event.TypeMeta = metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"}
		event.ResourceVersion = "1"
		code := http.StatusOK
		if r.Method == http.MethodPost {
			code = http.StatusCreated
		}
		writeJSON(w, code, &event)
		return
	}
	status := statusFor(a, event.Name)
	if a.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(a.retryAfter))
	}
	writeJSON(w, int(status.Code), &status)
}

// alias names events a, b, ... in the order they first appear.
func (s *apiServer) alias(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.names == nil {
		s.names = map[string]string{}
	}
	if _, ok := s.names[name]; !ok {
		s.names[name] = string(rune('a' + len(s.names)))
	}
	return s.names[name]
}

func (s *apiServer) log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// statusFor is the Status the API server answers with code.
func statusFor(a answer, name string) metav1.Status {
	resource := schema.GroupResource{Group: "events.k8s.io", Resource: "events"}
	var err *apierrors.StatusError
	switch a.code {
	case http.StatusTooManyRequests:
		err = apierrors.NewTooManyRequests("too many requests", a.retryAfter)
	case http.StatusNotFound:
		err = apierrors.NewNotFound(resource, name)
	case http.StatusConflict:
		err = apierrors.NewAlreadyExists(resource, name)
	case http.StatusForbidden:
		err = apierrors.NewForbidden(resource, name, errors.New("not allowed"))
	case http.StatusUnprocessableEntity:
		err = apierrors.NewInvalid(schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, name,
			field.ErrorList{field.Required(field.NewPath("note"), "")})
	case http.StatusServiceUnavailable:
		err = apierrors.NewServiceUnavailable("unavailable")
	default:
		err = apierrors.NewInternalError(errors.New("storage failed"))
		err.ErrStatus.Code = int32(a.code)
	}
	status := err.Status()
	status.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	return status
}

func writeJSON(w http.ResponseWriter, code int, obj any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(obj)
}

// recorderCounters are the recorder's counters by label value.
type recorderCounters struct {
	writes, backoffs, dropped map[string]float64
}

func counters() recorderCounters {
	c := recorderCounters{writes: map[string]float64{}, backoffs: map[string]float64{}, dropped: map[string]float64{}}
	for _, kind := range []string{writeCreate, writeSeriesStart, writeHeartbeat, writeFinish, writeFlush} {
		c.writes[kind] = counterValue(writesTotal.WithLabelValues(kind))
	}
	for _, reason := range []string{"throttled", "server_error", "unreachable"} {
		c.backoffs[reason] = counterValue(backoffsTotal.WithLabelValues(reason))
	}
	for _, reason := range []string{"buffer_full", "rejected", "shutdown"} {
		c.dropped[reason] = counterValue(droppedTotal.WithLabelValues(reason))
	}
	return c
}

func counterValue(c metrics.CounterMetric) float64 {
	v, err := testutil.GetCounterMetricValue(c)
	if err != nil {
		panic(err)
	}
	return v
}

// sub is c minus before.
func (c recorderCounters) sub(before recorderCounters) recorderCounters {
	diff := func(a, b map[string]float64) map[string]float64 {
		d := map[string]float64{}
		for k, v := range a {
			d[k] = v - b[k]
		}
		return d
	}
	return recorderCounters{writes: diff(c.writes, before.writes), backoffs: diff(c.backoffs, before.backoffs), dropped: diff(c.dropped, before.dropped)}
}

// normalized leaves out the zero counts.
func (c recorderCounters) normalized() recorderCounters {
	nonZero := func(m map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for k, v := range m {
			if v != 0 {
				out[k] = v
			}
		}
		return out
	}
	return recorderCounters{writes: nonZero(c.writes), backoffs: nonZero(c.backoffs), dropped: nonZero(c.dropped)}
}
