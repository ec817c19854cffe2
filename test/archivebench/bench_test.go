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

package archivebench

import (
	"context"
	"flag"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/kube-events/events-apiserver/pkg/archive/victorialogs"
)

var (
	full    = flag.Bool("history.full", false, "run TestHistory, the full benchmark (make bench-history)")
	events  = flag.Int("history.events", 10_000_000, "archived events (states) of TestHistory")
	objects = flag.Int("history.objects", 100_000, "distinct regarding objects of TestHistory")
	samples = flag.Int("history.samples", 1000, "pages measured per selector and scope of TestHistory, first and following pages apart")
	spaces  = flag.Int("history.namespaces", 100, "namespaces of TestHistory: 10 at 1,000,000 events holds a namespace's share of 10,000,000 in 100")
	dir     = flag.String("history.dir", "", "the embedded archive's directory (default: a temporary one)")
)

// bounds are what a run is held to; a zero p50 holds none.
type bounds struct {
	eventsPerSecond float64
	p50, p99        time.Duration
	// p99Of holds the query kinds whose name starts with a key to its p99
	// instead.
	p99Of         map[string]time.Duration
	bytesPerEvent float64
}

// p99For is the p99 the query kind name is held to.
func (b bounds) p99For(name string) time.Duration {
	for prefix, p99 := range b.p99Of {
		if strings.HasPrefix(name, prefix) {
			return p99
		}
	}
	return b.p99
}

// goals are issue 25's, on a 2-core machine, for the full run. The smoke's
// data set is too small for the goal on disk (the engine compresses a
// block per namespace and day: 196 bytes per event at 200,000 events, 180
// at 1,000,000), and CI shares its cores: its p99 of a few dozen pages is
// their slowest, one cold read or one stall of a shared core (above a
// second at load 8). It is held to half the ingest rate, a p50 of the
// goal and a p99 of two seconds, to catch a change that breaks the shape
// (a query that reads every block of the month) rather than one that
// moves the numbers.
//
// The tree and summary queries are held to theirs: a namespace's summary and its
// Warning events over the span answer within a second, a Deployment's
// tree (regarding.ancestor) within 200 ms.
var (
	goals = bounds{eventsPerSecond: 10_000, p99: 100 * time.Millisecond, bytesPerEvent: 150, p99Of: map[string]time.Duration{
		"summary":            time.Second,
		"type=Warning":       time.Second,
		"regarding.ancestor": 200 * time.Millisecond,
	}}
	smokeBounds = bounds{eventsPerSecond: 5_000, p50: 100 * time.Millisecond, p99: 2 * time.Second, bytesPerEvent: 220}
)

// config is a month of events shaped as issue 25 asks: a few hundred
// reasons, series, a tenth with a related object.
func config(t *testing.T, events, objects int) Config {
	return Config{
		Events: events, Span: 30 * 24 * time.Hour,
		Objects: objects, Namespaces: 100, Reasons: 300,
		SeriesFraction: 0.2, SeriesStates: 5, RelatedFraction: 0.1,
		Batch: 1000, Samples: *samples, SummarySamples: max(*samples/10, 10), Limit: 100, Pages: 3,
		Seed: 1, Log: testWriter{t},
	}
}

func run(t *testing.T, cfg Config, dir string) Result {
	_, ctx := ktesting.NewTestContext(t)
	a, err := victorialogs.OpenEmbedded(ctx, victorialogs.EmbeddedConfig{Dir: dir, Retention: 31 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	}()
	res, err := Run(ctx, a, cfg)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	a.ForceMerge()
	if err := res.Measure(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	t.Logf("on disk once each day is merged (%s): %d bytes, %.1f bytes per event (%.1f per distinct event)",
		time.Since(began).Round(time.Millisecond), res.Stats.DiskBytes, res.BytesPerEvent, float64(res.Stats.DiskBytes)/float64(res.DistinctEvents))
	if res.Busy() {
		t.Logf("NOT QUIET: the run started at load average %.2f, above %d", res.StartLoad, quietLoad)
	}
	return res
}

func check(t *testing.T, res Result, b bounds) {
	if res.EventsPerSecond < b.eventsPerSecond {
		t.Errorf("ingest %.0f events/s, bound %.0f", res.EventsPerSecond, b.eventsPerSecond)
	}
	if res.BytesPerEvent > b.bytesPerEvent {
		t.Errorf("%.1f bytes per event on disk, bound %.0f", res.BytesPerEvent, b.bytesPerEvent)
	}
	for _, l := range res.Queries {
		if b.p50 > 0 && l.P50 > b.p50 {
			t.Errorf("%s: p50 %s, bound %s", l.Name, l.P50, b.p50)
		}
		if bound := b.p99For(l.Name); l.P99 > bound {
			t.Errorf("%s: p99 %s, bound %s", l.Name, l.P99, bound)
		}
		if l.Records == 0 {
			t.Errorf("%s: no records", l.Name)
		}
	}
}

// TestSmoke runs the benchmark on 200,000 events (10,000 objects) in
// under a minute, as CI does (go test ./test/...), and holds it to
// smokeBounds.
func TestSmoke(t *testing.T) {
	if *full {
		t.Skip("-history.full runs TestHistory")
	}
	cfg := config(t, 200_000, 10_000)
	cfg.Samples, cfg.SummarySamples = 30, 10
	check(t, run(t, cfg, t.TempDir()), smokeBounds)
}

// TestHistory is the full benchmark (make bench-history): -history.events
// over 30 days, -history.objects regarding objects.
func TestHistory(t *testing.T) {
	if !*full {
		t.Skip("the full benchmark runs with -history.full (make bench-history)")
	}
	d := *dir
	if d == "" {
		d = t.TempDir()
	}
	cfg := config(t, *events, *objects)
	cfg.Namespaces = *spaces
	check(t, run(t, cfg, d), goals)
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}
