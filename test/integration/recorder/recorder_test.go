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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/pkg/recorder"
)

const (
	writesMetric   = "events_apiserver_recorder_writes_total"
	backoffsMetric = "events_apiserver_recorder_backoffs_total"
	droppedMetric  = "events_apiserver_recorder_dropped_total"
)

var writeKinds = []string{"create", "series_start", "heartbeat", "finish", "flush"}

// TestHotLoop: 10,000 occurrences over 64 simulated minutes, then 6
// minutes of silence, cost one create, one series start, two heartbeats
// and one finish, counted where they arrive, plus the list on start; the
// stored event ends Finished (state absent on kube-apiserver) with
// count 10,000.
func TestHotLoop(t *testing.T) {
	const (
		occurrences = 10000
		loop        = 64 * time.Minute
		step        = loop / occurrences
	)
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			f := newFixture(t, tg)
			before := counters(t, writesMetric, "kind", writeKinds...)
			_, rec := f.start(t, "example.com/hot-loop", recorder.Options{})
			start := f.clock.Now()
			pod := f.pod("web-0")

			// The test waits where a write is due, so that the fake clock
			// never runs ahead of the writes: create, series start, then a
			// heartbeat past 30m (+2 sweeps) and past 60m (+4 sweeps).
			waits := []struct {
				at     time.Duration
				writes int
			}{{0, 1}, {step, 2}, {30*time.Minute + 20*time.Second, 3}, {60*time.Minute + 40*time.Second, 4}}
			for i := range occurrences {
				rec.Eventf(pod, nil, corev1.EventTypeWarning, "BackOff", "Restarting", "Back-off restarting failed container app")
				for len(waits) > 0 && f.clock.Since(start) >= waits[0].at {
					f.waitWrites(t, waits[0].writes)
					waits = waits[1:]
				}
				if i < occurrences-1 {
					f.clock.Step(step)
				}
			}
			f.clock.Step(6 * time.Minute) // no occurrence for 6m: the series finishes
			if total := f.clock.Since(start); total != 70*time.Minute-step {
				t.Fatalf("simulated %v, want 70m", total)
			}

			stored := f.waitStored(t, "the final count", func(s []storedEvent) bool {
				return len(s) == 1 && s[0].Series != nil && s[0].Series.Count == occurrences
			})
			if diff := cmp.Diff([]summary{{Regarding: "web-0", Reason: "BackOff", Count: occurrences, State: f.finishedState()}}, summarize(stored)); diff != "" {
				t.Errorf("stored events (-want +got):\n%s", diff)
			}
			f.waitWrites(t, 5)
			wantCalls := append(append([]string{}, tg.listCalls...), "POST", "PATCH[Ongoing]", "PATCH[Ongoing]", "PATCH[Ongoing]", "PATCH[Finished]")
			if diff := cmp.Diff(wantCalls, calls(f.eventRequests())); diff != "" {
				t.Errorf("API calls at the server (-want +got):\n%s", diff)
			}
			writes := f.writes()
			for i, heartbeat := range []time.Duration{writes[2].At.Sub(writes[1].At), writes[3].At.Sub(writes[2].At)} {
				if heartbeat < 30*time.Minute {
					t.Errorf("heartbeat %d came %v after the write before, want at least 30m", i+1, heartbeat)
				}
			}
			if got := patchedSeries(writes[4]).Count; got != occurrences {
				t.Errorf("final write has count %d, want %d", got, occurrences)
			}
			wantWrites := map[string]float64{"create": 1, "series_start": 1, "heartbeat": 2, "finish": 1, "flush": 0}
			if diff := cmp.Diff(wantWrites, delta(counters(t, writesMetric, "kind", writeKinds...), before)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", writesMetric, diff)
			}
		})
	}
}

// TestDistinctSeriesStayApart: interleaved occurrences of two series
// become two events with their own counts.
func TestDistinctSeriesStayApart(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			f := newFixture(t, tg)
			_, rec := f.start(t, "example.com/two-series", recorder.Options{})
			web, db := f.pod("web-0"), f.pod("db-0")
			for i := range 8 {
				rec.Eventf(web, nil, corev1.EventTypeWarning, "BackOff", "Restarting", "Back-off restarting failed container")
				if i%2 == 0 {
					rec.Eventf(db, nil, corev1.EventTypeWarning, "BackOff", "Restarting", "Back-off restarting failed container")
					rec.Eventf(web, nil, corev1.EventTypeNormal, "Pulled", "Pulling", "Container image already present")
				}
				f.clock.Step(time.Second)
			}
			f.waitWrites(t, 6) // 3 creates, 3 series starts
			f.clock.Step(6 * time.Minute)
			stored := f.waitStored(t, "three finished series", func(s []storedEvent) bool {
				finished := 0
				for _, e := range summarize(s) {
					if e.Count > 1 && (e.State == "Finished" || !tg.hasState) {
						finished++
					}
				}
				return len(s) == 3 && finished == 3 && len(f.writes()) == 9
			})
			want := []summary{
				{Regarding: "db-0", Reason: "BackOff", Count: 4, State: f.finishedState()},
				{Regarding: "web-0", Reason: "BackOff", Count: 8, State: f.finishedState()},
				{Regarding: "web-0", Reason: "Pulled", Count: 4, State: f.finishedState()},
			}
			if diff := cmp.Diff(want, sortedSummaries(stored)); diff != "" {
				t.Errorf("stored events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRestart: a new broadcaster with the same reportingController and
// reportingInstance continues the series of the one before (same event,
// same count), and finishes one that ended while nothing recorded.
func TestRestart(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				// down is how long nothing records between the two.
				down time.Duration
				// occurrences after the restart.
				after int
				// calls of the second broadcaster after its list calls.
				wantCalls []string
			}{
				{name: "mid-series", down: time.Minute, after: 50, wantCalls: []string{"PATCH[Finished]"}},
				{name: "ended while down", down: 10 * time.Minute, after: 0, wantCalls: []string{"PATCH[Finished]"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					f := newFixture(t, tg)
					const controller = "example.com/restarting"
					first, rec := f.start(t, controller, recorder.Options{})
					pod := f.pod("web-0")
					for range 100 {
						rec.Eventf(pod, nil, corev1.EventTypeWarning, "BackOff", "Restarting", "Back-off restarting failed container")
						f.clock.Step(time.Second)
					}
					f.waitWrites(t, 2) // create, series start
					first.Shutdown()   // flushes the count: 100
					beforeRestart := len(f.eventRequests())
					stored := f.waitStored(t, "the flushed count", func(s []storedEvent) bool {
						return len(s) == 1 && s[0].Series != nil && s[0].Series.Count == 100
					})
					name := stored[0].Name

					f.clock.Step(tc.down)
					second, rec := f.start(t, controller, recorder.Options{})
					waitRestored(t, second)
					for range tc.after {
						rec.Eventf(pod, nil, corev1.EventTypeWarning, "BackOff", "Restarting", "Back-off restarting failed container")
						f.clock.Step(time.Second)
					}
					f.clock.Step(6 * time.Minute)
					want := []summary{{Regarding: "web-0", Reason: "BackOff", Count: int32(100 + tc.after), State: f.finishedState()}}
					stored = f.waitStored(t, "the finished series", func(s []storedEvent) bool {
						return cmp.Equal(want, summarize(s)) && len(f.eventRequests()) >= beforeRestart+len(tg.listCalls)+len(tc.wantCalls)
					})
					if stored[0].Name != name {
						t.Errorf("the restart wrote event %s, want the first broadcaster's %s", stored[0].Name, name)
					}
					wantCalls := append(append([]string{}, tg.listCalls...), tc.wantCalls...)
					if diff := cmp.Diff(wantCalls, calls(f.eventRequests()[beforeRestart:])); diff != "" {
						t.Errorf("API calls after the restart (-want +got):\n%s", diff)
					}
				})
			}
		})
	}
}

// TestThrottled: a server answering 429 with Retry-After: 30 is tried
// again no sooner than 30s later, and the event arrives once it recovers.
func TestThrottled(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			f := newFixture(t, tg)
			const retryAfter = 30 * time.Second
			backoffsBefore := counter(t, backoffsMetric, "reason", "throttled")
			_, rec := f.start(t, "example.com/throttled", recorder.Options{})
			f.waitLists(t) // before throttling
			f.proxy.Throttle(retryAfter)
			rec.Eventf(f.pod("web-0"), nil, corev1.EventTypeNormal, "Scheduled", "Binding", "Assigned to node-1")
			f.waitWrites(t, 1)
			waitBackoff(t, f, backoffsMetric, "throttled", backoffsBefore+1)

			f.clock.Step(retryAfter - time.Second)
			if got := calls(f.writes()); len(got) != 1 || f.clock.Waiters() != 2 {
				t.Fatalf("%v before Retry-After: want the writer still waiting (2 clock waiters, got %d) and no new request, got %v", retryAfter-time.Second, f.clock.Waiters(), got)
			}
			f.proxy.Throttle(0)
			f.clock.Step(retryAfter/5 + 2*time.Second) // past Retry-After and its jitter (up to 20%)
			stored := f.waitStored(t, "the event after recovery", func(s []storedEvent) bool { return len(s) == 1 })
			if diff := cmp.Diff([]summary{{Regarding: "web-0", Reason: "Scheduled", Count: 1}}, summarize(stored)); diff != "" {
				t.Errorf("stored (-want +got):\n%s", diff)
			}
			writes := f.writes()
			if diff := cmp.Diff([]string{"POST(429)", "POST"}, calls(writes)); diff != "" {
				t.Errorf("writes at the server (-want +got):\n%s", diff)
			}
			if waited := writes[1].At.Sub(writes[0].At); waited < retryAfter {
				t.Errorf("retried %v after the 429, want at least Retry-After %v", waited, retryAfter)
			}
		})
	}
}

// TestFullBufferDropsOldestFirst: while the server throttles, a buffer of
// 3 keeps the 3 newest writes; the 2 oldest are dropped, counted and logged.
func TestFullBufferDropsOldestFirst(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			f := newFixture(t, tg)
			droppedBefore := counter(t, droppedMetric, "reason", "buffer_full")
			backoffsBefore := counter(t, backoffsMetric, "reason", "throttled")
			_, rec := f.start(t, "example.com/full-buffer", recorder.Options{BufferSize: 3})
			f.waitLists(t)
			f.proxy.Throttle(time.Minute)
			pods := []string{"pod-0", "pod-1", "pod-2", "pod-3", "pod-4"}
			rec.Eventf(f.pod(pods[0]), nil, corev1.EventTypeNormal, "Scheduled", "Binding", "Assigned")
			f.waitWrites(t, 1)
			waitBackoff(t, f, backoffsMetric, "throttled", backoffsBefore+1)
			for _, name := range pods[1:] {
				rec.Eventf(f.pod(name), nil, corev1.EventTypeNormal, "Scheduled", "Binding", "Assigned")
			}
			if got := counter(t, droppedMetric, "reason", "buffer_full") - droppedBefore; got != 2 {
				t.Errorf("%s{reason=buffer_full} rose by %v, want 2", droppedMetric, got)
			}
			if logs := f.logs.String(); !strings.Contains(logs, `"Dropped event writes"`) || !strings.Contains(logs, `lastReason="buffer_full"`) {
				t.Errorf("no log line for the drop; logs:\n%s", logs)
			}
			f.proxy.Throttle(0)
			f.clock.Step(75 * time.Second)
			stored := f.waitStored(t, "the 3 newest events", func(s []storedEvent) bool { return len(s) == 3 })
			want := []summary{
				{Regarding: "pod-2", Reason: "Scheduled", Count: 1},
				{Regarding: "pod-3", Reason: "Scheduled", Count: 1},
				{Regarding: "pod-4", Reason: "Scheduled", Count: 1},
			}
			if diff := cmp.Diff(want, sortedSummaries(stored)); diff != "" {
				t.Errorf("stored (-want +got):\n%s", diff)
			}
		})
	}
}

// waitRestored waits until b has taken up its recorders' earlier series.
func waitRestored(t *testing.T, b *recorder.Broadcaster) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		return b.Restored(), nil
	})
	if err != nil {
		t.Fatal("the broadcaster did not restore its series")
	}
}

// waitBackoff waits until the writer backs off (the counter reaches want)
// and waits on the clock.
func waitBackoff(t *testing.T, f *fixture, metric, reason string, want float64) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		return counter(t, metric, "reason", reason) >= want && f.clock.Waiters() == 2, nil
	})
	if err != nil {
		t.Fatalf("the writer did not back off: %s{reason=%s}=%v, clock waiters %d", metric, reason, counter(t, metric, "reason", reason), f.clock.Waiters())
	}
}

func sortedSummaries(stored []storedEvent) []summary {
	out := summarize(stored)
	sortSummaries(out)
	return out
}
