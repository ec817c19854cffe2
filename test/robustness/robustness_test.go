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

package robustness

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
	"github.com/kube-events/events-apiserver/test/robustness/validate"
)

// The traffic's shape: clients of writes, lists and gets, and watchers.
const (
	requestClients = 4
	watchClients   = 4
)

// catchUpTimeout bounds how long the recorder may take to reach etcd's
// head once the traffic stopped.
const catchUpTimeout = time.Minute

// maxReported is how many violations a run prints in full.
const maxReported = 30

// TestRobustness runs the traffic and the faults for -robustness.duration
// against each -robustness.store-cache, then validates every read against
// etcd's history and prints the run's report.
func TestRobustness(t *testing.T) {
	s := *seed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	fmt.Printf("robustness: seed %d (repeat with -robustness.seed=%d)\n", s, s)
	for _, cache := range strings.Split(*storeCache, ",") {
		t.Run(cache, func(t *testing.T) {
			runOnce(t, s, cache)
		})
	}
}

func runOnce(t *testing.T, s uint64, cache string) {
	dir := t.TempDir()
	etcd, err := harness.StartEtcd(etcdBinary, filepath.Join(dir, "etcd"), 1, fmt.Sprintf("--quota-backend-bytes=%d", noSpaceQuota))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = etcd.Stop() })
	// The server reaches etcd through a link the faults cut; the recorder
	// and the faults reach it directly.
	link, err := framework.StartLink(strings.TrimPrefix(etcd.Endpoints[0], "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = link.Close() })

	recordCtx, stopRecorder := context.WithCancel(context.Background())
	defer stopRecorder()
	rec := startRecorder(recordCtx, etcd.Client)

	// The embedded archive answers history pages; etcd's space is the
	// faults' to take and give back, as an operator's.
	server, err := harness.StartServer(t.Context(), serverBinary, filepath.Join(dir, "server"),
		"--etcd-servers=http://"+link.Addr(), "--store-cache="+cache,
		"--archive=embedded", "--archive-dir="+filepath.Join(dir, "archive"), "--etcd-maintenance-interval=0", "-v=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = server.Stop()
		if t.Failed() {
			t.Logf("server log: %s", server.LogPath)
		}
	})
	client, err := kubernetes.NewForConfig(server.RestConfig)
	if err != nil {
		t.Fatal(err)
	}

	log := newRecord()
	tr := &traffic{seed: s, rec: log, client: client, etcd: etcd.Client, start: time.Now()}
	f := &faults{seed: s, rec: log, etcd: etcd, recorder: rec, server: server, link: link, relists: relistsMetric(cache)}
	metricsBefore, err := server.Metrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	ctx, stop := context.WithTimeout(t.Context(), *duration)
	defer stop()
	serverDone := watchServer(ctx, t, server, log)
	var wg sync.WaitGroup
	for i := range requestClients {
		wg.Go(func() { tr.requests(ctx, i) })
	}
	for i := range watchClients {
		wg.Go(func() { tr.watcher(ctx, i) })
	}
	var faultErr error
	wg.Go(func() { faultErr = f.run(ctx) })
	start := time.Now()
	wg.Wait()
	<-serverDone
	if faultErr != nil {
		t.Fatalf("injecting a fault: %v", faultErr)
	}
	ran := time.Since(start)

	history, err := rec.catchUp(t.Context(), catchUpTimeout)
	if err != nil {
		t.Fatal(err)
	}
	checked, violations := validate.Validate(history, log.lists, log.gets, log.watches, log.histories)
	violations = append(log.violations, violations...)
	feed := "unknown"
	if metricsAfter, err := server.Metrics(t.Context()); err == nil {
		feed = feedReport(metricsBefore, metricsAfter, cache)
	}
	report(t, s, cache, ran, history, log, checked, feed, violations)
}

// relistsMetric counts the relists of the events' store of a store cache:
// the compact live store's own, or the watch cache's initializations.
func relistsMetric(cache string) string {
	if cache == "compact" {
		return "events_apiserver_live_store_relists_total"
	}
	return "apiserver_watch_cache_initializations_total"
}

// feedReport is how often the events' store listed etcd again, and (the
// compact store) watched it again, during the run.
func feedReport(before, after harness.Metrics, cache string) string {
	events := map[string]string{"resource": "events"}
	delta := func(name string) float64 { return after.Value(name, events) - before.Value(name, events) }
	out := fmt.Sprintf("%v relists", delta(relistsMetric(cache)))
	if cache == "compact" {
		out += fmt.Sprintf(", %v watches again", delta("events_apiserver_live_store_rewatches_total"))
	}
	return out
}

// watchServer records the server's exit during the run as a violation
// and starts it again; the returned channel closes once ctx is done and
// the server runs.
func watchServer(ctx context.Context, t *testing.T, server *harness.Server, log *record) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-server.Exited():
			}
			log.violation(validate.Violation{Kind: "server-exit", Op: "the server process",
				Detail: fmt.Sprintf("exited: %v; output (end):\n%s", server.Err(), server.Tail())})
			if err := server.Start(); err != nil {
				t.Errorf("restarting the server: %v", err)
				return
			}
			if err := server.WaitReady(t.Context(), harness.ServerStartTimeout); err != nil {
				t.Errorf("restarting the server: %v", err)
				return
			}
		}
	}()
	return done
}

// report prints what ran and what was checked, and fails the test with
// every violation (the first maxReported in full).
func report(t *testing.T, s uint64, cache string, ran time.Duration, h *validate.History, log *record, c validate.Checked, feed string, violations []validate.Violation) {
	byKind := map[string]int{}
	for _, v := range violations {
		byKind[v.Kind]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "robustness report: seed=%d store-cache=%s traffic=%s\n", s, cache, ran.Round(time.Second))
	fmt.Fprintf(&b, "  operations: %s\n", counts(log.ops))
	fmt.Fprintf(&b, "  answers: %s\n", counts(log.outcomes))
	fmt.Fprintf(&b, "  latency (median/p99/max): %s\n", latencyReport(log.latencies))
	if slow := slowestReport(log.slowest); slow != "" {
		fmt.Fprintf(&b, "  slowest requests:\n    %s\n", slow)
	}
	fmt.Fprintf(&b, "  faults: %s\n", counts(log.faults))
	fmt.Fprintf(&b, "  the store's feed: %s\n", feed)
	fmt.Fprintf(&b, "  etcd history: %d changes up to revision %d\n", h.Changes(), h.Head())
	fmt.Fprintf(&b, "  validated: %d lists (%d pages, %d items), %d gets, %d watches (%d events, %d bookmarks), %d history lists (%d pages, %d items)\n",
		c.Lists, c.Pages, c.Items, c.Gets, c.Watches, c.WatchEvents, c.Bookmarks, c.HistoryLists, c.HistoryPages, c.HistoryItems)
	fmt.Fprintf(&b, "  violations: %d (%s)\n", len(violations), counts(byKind))
	fmt.Print(b.String())
	sort.Strings(log.timeline)
	t.Logf("faults and hung requests, from the start of the traffic:\n%s", strings.Join(log.timeline, "\n"))
	if len(violations) == 0 {
		return
	}
	sort.SliceStable(violations, func(i, j int) bool { return violations[i].Kind < violations[j].Kind })
	// The first of each kind, then the others, up to maxReported.
	var shown []validate.Violation
	first := map[string]bool{}
	var rest []validate.Violation
	for _, v := range violations {
		if !first[v.Kind] {
			first[v.Kind] = true
			shown = append(shown, v)
		} else {
			rest = append(rest, v)
		}
	}
	shown = append(shown, rest...)
	for _, v := range shown[:min(len(shown), maxReported)] {
		t.Errorf("violation %s", v)
	}
	t.Errorf("%d violations (%s), seed %d, store-cache %s", len(violations), counts(byKind), s, cache)
}
