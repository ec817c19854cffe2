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

package storm

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	policyv1alpha1 "github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/v1alpha1"
	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

var stormDuration = flag.Duration("storm.duration", time.Minute, "how long each run of BenchmarkStorm lasts")

const (
	benchNamespace  = "bench"
	stormController = "bench.example.com/storm"
	stormSeries     = 2  // distinct isomorphic series the hot loop cycles through
	stormWorkers    = 4  // concurrent hot-loop connections
	quietReporters  = 20 // (b)
	quietRate       = 5  // (b) distinct events per second per reporter

	quietControllerPrefix = "bench.example.com/quiet-"

	// (a)'s answers: its event stored under its name, folded into an
	// earlier one, or refused with a time to come back.
	answerStored    = "201 stored"
	answerFolded    = "201 folded"
	answerThrottled = "429 with Retry-After"
)

// BenchmarkStorm runs the server on its embedded etcd twice, with the
// default limits and folding: a quiet run of (b) 20 reporters writing 5
// distinct events/s each and (c) a reader listing by regarding.name every
// 100ms; then the same with (a) one reporter hot-looping isomorphic creates
// with new names, as fast as it can, without client-side retries. It prints
// the etcd writes (a) caused per series and in total, every answer (a) got,
// and (b)'s create and (c)'s list latencies of both runs with their ratios.
//
// It fails when storm safety regresses (see checkStorm): a write of (b)
// refused or not stored, an occurrence of (a) acknowledged but not stored
// or folded, (a) answered otherwise than stored, folded or 429 with
// Retry-After, or more etcd writes per series of (a) than folding allows.
// CI runs it for 5s per run (hack/test.sh).
//
//	go test ./test/integration/storm -run '^$' -bench BenchmarkStorm -benchtime 1x -storm.duration 60s
func BenchmarkStorm(b *testing.B) {
	for range b.N {
		quiet := runStorm(b, false)
		storm := runStorm(b, true)
		report(b, quiet, storm)
		checkStorm(b, quiet, storm)
	}
}

type stormResult struct {
	quietCreates []time.Duration
	quietFailed  map[int]int
	quietStored  int // (b)'s events in the store after the run
	lists        []time.Duration
	// hot loop (a)
	answers        map[string]int
	writesBySeries map[string]int
	stored         int // (a)'s occurrences in the store: its events' counts
	storedErr      error
	duration       time.Duration
}

func runStorm(b *testing.B, withStorm bool) stormResult {
	server := framework.StartServer(b)
	defer server.Close()
	cfg := rest.CopyConfig(server.RestConfig)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit: the server is under test
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), *stormDuration)
	defer cancel()

	result := stormResult{quietFailed: map[int]int{}, answers: map[string]int{}, writesBySeries: map[string]int{}, duration: *stormDuration}
	var mu sync.Mutex
	var wg sync.WaitGroup

	// Every etcd write of (a)'s events is one watch event; seen is the
	// version of each event the watch delivered last.
	seen := map[string]string{}
	watcher, err := client.EventsV1().Events(benchNamespace).Watch(context.Background(),
		metav1.ListOptions{FieldSelector: "reportingController=" + stormController})
	if err != nil {
		b.Fatal(err)
	}
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for ev := range watcher.ResultChan() {
			if e, ok := ev.Object.(*eventsv1.Event); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				mu.Lock()
				result.writesBySeries[e.Regarding.Name]++
				seen[e.Name] = e.ResourceVersion
				mu.Unlock()
			}
		}
	}()

	post := func(body any) (int, string, string, time.Duration) {
		data, _ := json.Marshal(body)
		start := time.Now()
		url := fmt.Sprintf("%s/apis/events.k8s.io/v1/namespaces/%s/events", cfg.Host, benchNamespace)
		resp, err := httpClient.Post(url, "application/json", bytes.NewReader(data))
		if err != nil {
			return 0, "", "", time.Since(start)
		}
		defer resp.Body.Close()
		var answer metav1.ObjectMeta
		var decoded struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if json.NewDecoder(resp.Body).Decode(&decoded) == nil {
			answer = decoded.Metadata
		}
		return resp.StatusCode, resp.Header.Get("Retry-After"), answer.Name, time.Since(start)
	}
	event := func(controller, object, name string) *eventsv1.Event {
		return &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: name}, EventTime: metav1.NowMicro(),
			ReportingController: controller, ReportingInstance: "bench-0",
			Action: "Sync", Reason: "Tested", Type: corev1.EventTypeNormal, Note: "benchmark",
			Regarding: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: benchNamespace, Name: object},
		}
	}

	if withStorm {
		for w := range stormWorkers {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					series := fmt.Sprintf("storm-%d", i%stormSeries)
					name := fmt.Sprintf("storm-%d-%d", w, i)
					code, retryAfter, answered, _ := post(event(stormController, series, name))
					if ctx.Err() != nil && code == 0 {
						return
					}
					answer := fmt.Sprint(code)
					switch {
					case code == http.StatusCreated && answered == name:
						answer = answerStored
					case code == http.StatusCreated:
						answer = answerFolded
					case code == http.StatusTooManyRequests && retryAfter != "":
						answer = answerThrottled
					}
					mu.Lock()
					result.answers[answer]++
					mu.Unlock()
				}
			})
		}
	}
	for r := range quietReporters {
		wg.Go(func() {
			ticker := time.NewTicker(time.Second / quietRate)
			defer ticker.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-ticker.C:
				}
				controller := fmt.Sprintf("%s%d", quietControllerPrefix, r)
				code, _, _, took := post(event(controller, fmt.Sprintf("quiet-%d-%d", r, i), fmt.Sprintf("quiet-%d-%d", r, i)))
				if ctx.Err() != nil && code == 0 {
					return
				}
				mu.Lock()
				if code == http.StatusCreated {
					result.quietCreates = append(result.quietCreates, took)
				} else {
					result.quietFailed[code]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		ticker := time.NewTicker(100 * time.Millisecond)
		defer ticker.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			start := time.Now()
			_, err := client.EventsV1().Events(benchNamespace).List(ctx, metav1.ListOptions{
				FieldSelector: fmt.Sprintf("regarding.name=quiet-%d-%d", i%quietReporters, i/quietReporters)})
			if err == nil {
				mu.Lock()
				result.lists = append(result.lists, time.Since(start))
				mu.Unlock()
			}
		}
	})
	wg.Wait()
	quiet, err := client.EventsV1().Events(benchNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range quiet.Items {
		if strings.HasPrefix(e.ReportingController, quietControllerPrefix) {
			result.quietStored++
		}
	}
	if withStorm {
		// A folded create is answered once written: wait until the watch
		// has seen the last writes, and (a)'s events hold every occurrence
		// it got acknowledged.
		acknowledged := result.answers[answerStored] + result.answers[answerFolded]
		result.storedErr = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond,
			policyv1alpha1.DefaultFoldFlushInterval+time.Minute, true, func(ctx context.Context) (bool, error) {
				list, err := client.EventsV1().Events(benchNamespace).List(ctx, metav1.ListOptions{FieldSelector: "reportingController=" + stormController})
				if err != nil {
					return false, err
				}
				result.stored = 0
				watched := true
				mu.Lock()
				defer mu.Unlock()
				for _, e := range list.Items {
					result.stored++
					if e.Series != nil {
						result.stored += int(e.Series.Count) - 1
					}
					watched = watched && seen[e.Name] == e.ResourceVersion
				}
				return result.stored == acknowledged && watched, nil
			})
	}
	watcher.Stop()
	<-watchDone
	return result
}

func report(b *testing.B, quiet, storm stormResult) {
	seconds := storm.duration.Seconds()
	total := 0
	var series []string
	for name, n := range storm.writesBySeries {
		series = append(series, name)
		total += n
	}
	sort.Strings(series)
	fmt.Printf("storm: %v per run, (a) %d workers over %d series, (b) %d reporters x %d events/s, (c) list every 100ms\n",
		storm.duration, stormWorkers, stormSeries, quietReporters, quietRate)
	for _, name := range series {
		n := storm.writesBySeries[name]
		fmt.Printf("(a) etcd writes, series %s: %d (%.2f/s)\n", name, n, float64(n)/seconds)
	}
	fmt.Printf("(a) etcd writes, total: %d (%.2f/s per series)\n", total, float64(total)/seconds/float64(max(len(series), 1)))
	var answers []string
	sent := 0
	for answer, n := range storm.answers {
		answers = append(answers, answer)
		sent += n
	}
	sort.Strings(answers)
	for _, answer := range answers {
		fmt.Printf("(a) answer %-22s %d\n", answer+":", storm.answers[answer])
	}
	fmt.Printf("(a) writes sent: %d (%.0f/s)\n", sent, float64(sent)/seconds)
	for _, run := range []struct {
		name string
		r    stormResult
	}{{"quiet", quiet}, {"storm", storm}} {
		fmt.Printf("(b) %s: %d creates, refused or failed %v, p50 %v, p99 %v; (c) %d lists, p99 %v\n", run.name,
			len(run.r.quietCreates), run.r.quietFailed, harness.Quantile(run.r.quietCreates, 0.5), harness.Quantile(run.r.quietCreates, 0.99),
			len(run.r.lists), harness.Quantile(run.r.lists, 0.99))
	}
	ratio := func(a, b time.Duration) float64 { return float64(a) / float64(max(b, 1)) }
	fmt.Printf("(b) create p50 storm/quiet: %.2f, p99 storm/quiet: %.2f\n",
		ratio(harness.Quantile(storm.quietCreates, 0.5), harness.Quantile(quiet.quietCreates, 0.5)),
		ratio(harness.Quantile(storm.quietCreates, 0.99), harness.Quantile(quiet.quietCreates, 0.99)))
	fmt.Printf("(c) list p99 storm/quiet: %.2f\n", ratio(harness.Quantile(storm.lists, 0.99), harness.Quantile(quiet.lists, 0.99)))
	b.ReportMetric(float64(total)/seconds/float64(max(len(series), 1)), "etcd-writes/s/series")
	b.ReportMetric(ratio(harness.Quantile(storm.quietCreates, 0.99), harness.Quantile(quiet.quietCreates, 0.99)), "b-p99-ratio")
}

// checkStorm fails the benchmark when storm safety regressed: (b) refused
// or not stored in either run; an occurrence of (a) acknowledged but
// neither stored nor folded; (a) answered otherwise than stored, folded or
// 429 with Retry-After; (a) stored more than the fold threshold per series,
// or written to etcd more often than folding allows (the threshold's
// creates, the first fold, and a write per group-commit window over the
// run, ticks at both ends included).
func checkStorm(b *testing.B, quiet, storm stormResult) {
	for _, run := range []struct {
		name string
		r    stormResult
	}{{"quiet", quiet}, {"storm", storm}} {
		if len(run.r.quietFailed) != 0 {
			b.Errorf("%s run: (b)'s creates refused or failed, by code: %v; want none", run.name, run.r.quietFailed)
		}
		if len(run.r.quietCreates) == 0 || run.r.quietStored != len(run.r.quietCreates) {
			b.Errorf("%s run: (b) has %d events stored of %d created; want all, and some", run.name, run.r.quietStored, len(run.r.quietCreates))
		}
	}
	acknowledged := storm.answers[answerStored] + storm.answers[answerFolded]
	if storm.storedErr != nil {
		b.Errorf("(a): %d occurrences in its stored events, %d acknowledged: %v", storm.stored, acknowledged, storm.storedErr)
	}
	for answer, n := range storm.answers {
		if answer != answerStored && answer != answerFolded && answer != answerThrottled {
			b.Errorf("(a) answered %q %d times; want only %q, %q or %q", answer, n, answerStored, answerFolded, answerThrottled)
		}
	}
	if storm.answers[answerFolded] == 0 {
		b.Errorf("(a): nothing folded (answers %v)", storm.answers)
	}
	if stored, most := storm.answers[answerStored], stormSeries*policyv1alpha1.DefaultFoldAfter; stored > most {
		b.Errorf("(a): %d events stored; want at most %d (%d series, folded after %d)", stored, most, stormSeries, policyv1alpha1.DefaultFoldAfter)
	}
	flushes := int(storm.duration/policyv1alpha1.DefaultFoldFlushInterval) + 2
	most := policyv1alpha1.DefaultFoldAfter + 1 + flushes
	if len(storm.writesBySeries) != stormSeries {
		b.Errorf("(a): etcd writes seen for %d series, want %d", len(storm.writesBySeries), stormSeries)
	}
	for series, n := range storm.writesBySeries {
		if n > most {
			b.Errorf("(a), series %s: %d etcd writes in %v; want at most %d (%d creates, the first fold, %d windows)",
				series, n, storm.duration, most, policyv1alpha1.DefaultFoldAfter, flushes)
		}
	}
}
