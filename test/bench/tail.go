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

package bench

import (
	"fmt"
	"math"
	"runtime/metrics"
	"slices"
	"time"

	"k8s.io/component-base/metrics/testutil"

	"github.com/kube-events/events-apiserver/test/harness"
)

// tailUse tells where a phase's slowest creates spent their time. A create
// is timed here, from sending it to its answer; the server times it from
// the request's arrival in its handler chain to the answer
// (apiserver_request_duration_seconds). When the server's count of creates
// over slowCreate stays low while the measured tail grows, the time went
// outside the server's handlers: waiting for a CPU, in the server's
// HTTP/2 loops, the kernel or this process. The Go runtime's own
// scheduling latencies (/sched/latencies:seconds, go_sched_latencies_seconds
// on the server's /metrics) say how long goroutines waited for a CPU in
// each process.
type tailUse struct {
	serverCreates, serverSlow float64
	// serverSched is the server's goroutines' wait for a CPU: cumulative
	// counts by upper bound, in seconds.
	serverSched map[float64]float64
	// clientGC is the CPU seconds this process's collector spent.
	clientGC float64
	// clientSched is this process's /sched/latencies:seconds histogram.
	clientSched metrics.Float64Histogram
}

// slowCreate is the latency a create's delivery is held to (issue 16).
const slowCreate = 100 * time.Millisecond

func (a tailUse) sub(b tailUse) tailUse {
	d := tailUse{
		serverCreates: a.serverCreates - b.serverCreates,
		serverSlow:    a.serverSlow - b.serverSlow,
		serverSched:   map[float64]float64{},
		clientGC:      a.clientGC - b.clientGC,
		clientSched:   metrics.Float64Histogram{Buckets: a.clientSched.Buckets, Counts: slices.Clone(a.clientSched.Counts)},
	}
	for le, n := range a.serverSched {
		d.serverSched[le] = n - b.serverSched[le]
	}
	for i := range min(len(d.clientSched.Counts), len(b.clientSched.Counts)) {
		d.clientSched.Counts[i] -= b.clientSched.Counts[i]
	}
	return d
}

// readClientTail reads this process's runtime metrics into t.
func readClientTail(t *tailUse) {
	samples := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/sched/latencies:seconds"}}
	metrics.Read(samples)
	t.clientGC = samples[0].Value.Float64()
	h := samples[1].Value.Float64Histogram()
	t.clientSched = metrics.Float64Histogram{Buckets: slices.Clone(h.Buckets), Counts: slices.Clone(h.Counts)}
}

// readServerTail reads from the server's metrics how many event creates it
// answered and how many of them in more than slowCreate, and its
// goroutines' scheduling latencies.
func readServerTail(m harness.Metrics, t *tailUse) {
	creates := cumulative(m.Histogram("apiserver_request_duration_seconds", map[string]string{"resource": "events", "verb": "POST"}))
	t.serverCreates = creates[math.Inf(1)]
	t.serverSlow = t.serverCreates - creates[slowCreate.Seconds()]
	t.serverSched = cumulative(m.Histogram("go_sched_latencies_seconds", nil))
}

// cumulative is the cumulative count of each bucket of vec (+Inf
// included), summed over its histograms.
func cumulative(vec testutil.HistogramVec) map[float64]float64 {
	counts := map[float64]float64{}
	for _, h := range vec {
		for _, b := range h.GetBucket() {
			counts[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	return counts
}

// String is the phase's tail, for its log line.
func (t tailUse) String() string {
	slow := 0.0
	if t.serverCreates > 0 {
		slow = 100 * t.serverSlow / t.serverCreates
	}
	return fmt.Sprintf("server: creates over %v %.2f %%, goroutines' wait for a CPU p99 %s; load generator: collector %.1f s of CPU, goroutines' wait for a CPU p99 %s",
		slowCreate, slow, serverSchedP99(t.serverSched), t.clientGC, clientSchedP99(t.clientSched))
}

// serverSchedP99 is the upper bound of the bucket that holds the 99th
// percentile of cumulative Prometheus buckets.
func serverSchedP99(cumulative map[float64]float64) string {
	bounds := slices.Sorted(func(yield func(float64) bool) {
		for le := range cumulative {
			if !yield(le) {
				return
			}
		}
	})
	if len(bounds) == 0 || cumulative[bounds[len(bounds)-1]] <= 0 {
		return "-"
	}
	all := cumulative[bounds[len(bounds)-1]]
	seconds := func(s float64) string {
		return time.Duration(s * float64(time.Second)).Round(time.Microsecond).String()
	}
	for i, le := range bounds {
		if cumulative[le] < 0.99*all {
			continue
		}
		if math.IsInf(le, 1) && i > 0 {
			return "> " + seconds(bounds[i-1])
		}
		return "≤ " + seconds(le)
	}
	return "-"
}

// clientSchedP99 is the upper bound of the bucket that holds the 99th
// percentile of a runtime/metrics histogram.
func clientSchedP99(h metrics.Float64Histogram) string {
	var total, seen uint64
	for _, c := range h.Counts {
		total += c
	}
	for i, c := range h.Counts {
		seen += c
		if total > 0 && seen*100 >= total*99 {
			if upper := h.Buckets[i+1]; !math.IsInf(upper, 1) {
				return "≤ " + time.Duration(upper*float64(time.Second)).Round(time.Microsecond).String()
			}
			return "> " + time.Duration(h.Buckets[i]*float64(time.Second)).Round(time.Microsecond).String()
		}
	}
	return "-"
}
