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

// Package archivebench measures an archive engine on a month of events:
// ingest rate, query latency by selector (first and following pages) and
// bytes per archived event on disk.
package archivebench

import (
	"container/heap"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-events/events-apiserver/pkg/archive"
)

// Config shapes the data set and the measurement.
type Config struct {
	// Events is the number of archived states (rows), Span the time they
	// spread over, ending now.
	Events int
	Span   time.Duration
	// Objects is the number of distinct regarding objects, Namespaces
	// the namespaces they live in, Reasons the distinct reasons.
	Objects, Namespaces, Reasons int
	// SeriesFraction of the events are series, of SeriesStates states
	// each on average (the rest have one state).
	SeriesFraction float64
	SeriesStates   int
	// RelatedFraction of the events name a related object (a node).
	RelatedFraction float64
	// Batch is the records per Append.
	Batch int
	// Queries is the number of queries per selector; Limit their page size
	// and Pages how many pages each follows at most.
	Queries, Limit, Pages int
	// Seed makes the data set repeatable.
	Seed uint64
	// Log receives progress lines.
	Log io.Writer
}

// Latency summarizes the durations of one kind of query.
type Latency struct {
	Name          string
	Count         int
	P50, P99, Max time.Duration
	// Records is the mean number of records per page.
	Records float64
}

// Result is what a run measured.
type Result struct {
	Events, DistinctEvents int
	// Ingest is the time spent in Append (the generator's time left out),
	// Sync the wait for durability after the last.
	Ingest, Sync time.Duration
	// EventsPerSecond is Events / Ingest.
	EventsPerSecond float64
	// Stats after the ingest (and the engine's own merges, if Settle).
	Stats         archive.Stats
	BytesPerEvent float64
	Queries       []Latency
}

// generator makes the data set as the archiver would append it: by time,
// an hour at a time, resourceVersions increasing. Each hour starts its
// share of the events; a series' later states wait in a heap for their
// hour.
type generator struct {
	cfg Config
	rng *rand.Rand
	now time.Time

	objects []object
	reasons []string
	nodes   []string

	hourEnd time.Time
	hours   int // hours started
	perHour int // states per hour
	created int // states created (emitted or waiting)
	pending stateHeap
	rv      int

	// Distinct counts the events; pairs are (regarding name, reason)
	// pairs that exist, for the queries.
	distinct int
	pairs    [][2]string
	pairSeen map[[2]string]bool
}

type object struct {
	ns, name, uid, rv, kind string
}

// event is one event whose states the generator emits.
type event struct {
	ev     corev1.Event
	fields map[string]string
}

type state struct {
	t     time.Time
	ev    *event
	count int32
}

type stateHeap []state

func (h stateHeap) Len() int           { return len(h) }
func (h stateHeap) Less(i, j int) bool { return h[i].t.Before(h[j].t) }
func (h stateHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *stateHeap) Push(x any)        { *h = append(*h, x.(state)) }
func (h *stateHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func newGenerator(cfg Config, now time.Time) *generator {
	g := &generator{
		cfg: cfg, now: now,
		rng:      rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), //nolint:gosec // a repeatable data set, not a secret
		hourEnd:  now.Add(-cfg.Span),
		pairSeen: map[[2]string]bool{},
	}
	hours := int(cfg.Span / time.Hour)
	g.perHour = (cfg.Events + hours - 1) / hours
	g.objects = make([]object, cfg.Objects)
	for i := range g.objects {
		kind := "Pod"
		if i%10 == 0 {
			kind = "Deployment"
		}
		g.objects[i] = object{
			ns:   fmt.Sprintf("team-%03d", i%cfg.Namespaces),
			name: fmt.Sprintf("app-%d-%s-%s", i%500, g.suffix(10), g.suffix(5)),
			uid:  g.uid(),
			rv:   strconv.Itoa(1000000 + g.rng.IntN(9000000)),
			kind: kind,
		}
	}
	g.reasons = []string{"Scheduled", "Pulling", "Pulled", "Created", "Started", "Killing", "BackOff", "Unhealthy", "FailedMount", "FailedScheduling"}
	for i := len(g.reasons); i < cfg.Reasons; i++ {
		g.reasons = append(g.reasons, fmt.Sprintf("CustomReason%03d", i))
	}
	g.nodes = make([]string, 200)
	for i := range g.nodes {
		g.nodes[i] = fmt.Sprintf("node-%03d.cluster.internal", i)
	}
	return g
}

func (g *generator) uid() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(g.rng.UintN(256))
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (g *generator) suffix(n int) string {
	const letters = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[g.rng.IntN(len(letters))]
	}
	return string(b)
}

// startHour starts the events first observed in the next hour.
func (g *generator) startHour() {
	hourStart := g.hourEnd
	g.hourEnd = g.hourEnd.Add(time.Hour)
	g.hours++
	// Each hour makes its share of the states (a series' later states
	// count in the hour it starts).
	for g.created < min(g.hours*g.perHour, g.cfg.Events) {
		g.startEvent(hourStart.Add(time.Duration(g.rng.Int64N(int64(time.Hour)))))
	}
}

func (g *generator) startEvent(first time.Time) {
	o := g.objects[g.rng.IntN(len(g.objects))]
	reason := g.reasons[g.rng.IntN(len(g.reasons))]
	// A few reasons make most events.
	if g.rng.Float64() < 0.8 {
		reason = g.reasons[g.rng.IntN(10)]
	}
	etype := "Normal"
	switch reason {
	case "BackOff", "Unhealthy", "FailedMount", "FailedScheduling":
		etype = "Warning"
	}
	node := g.nodes[g.rng.IntN(len(g.nodes))]
	e := &event{ev: corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:              fmt.Sprintf("%s.%016x", o.name, g.rng.Uint64()),
			Namespace:         o.ns,
			UID:               types.UID(g.uid()),
			CreationTimestamp: metav1.NewTime(first.Truncate(time.Second)),
		},
		InvolvedObject: corev1.ObjectReference{
			Kind: o.kind, Namespace: o.ns, Name: o.name, UID: types.UID(o.uid),
			APIVersion: "v1", ResourceVersion: o.rv, FieldPath: "spec.containers{app}",
		},
		Reason:              reason,
		Message:             fmt.Sprintf("%s: container app in pod %s/%s (%s) on %s", reason, o.ns, o.name, o.uid, node),
		Source:              corev1.EventSource{Component: "kubelet", Host: node},
		FirstTimestamp:      metav1.NewTime(first.Truncate(time.Second)),
		Type:                etype,
		ReportingController: "kubelet",
		ReportingInstance:   node,
	}}
	e.fields = map[string]string{
		"metadata.name": e.ev.Name, "metadata.namespace": o.ns,
		"involvedObject.kind": o.kind, "involvedObject.namespace": o.ns, "involvedObject.name": o.name,
		"involvedObject.uid": o.uid, "involvedObject.apiVersion": "v1", "involvedObject.resourceVersion": o.rv,
		"involvedObject.fieldPath": e.ev.InvolvedObject.FieldPath,
		"reason":                   reason, "source": "kubelet", "type": etype,
		"reportingComponent": "kubelet", "reportingInstance": node,
	}
	if g.rng.Float64() < g.cfg.RelatedFraction {
		e.ev.Related = &corev1.ObjectReference{Kind: "Node", Name: node, APIVersion: "v1"}
		e.fields["related.kind"], e.fields["related.name"], e.fields["related.apiVersion"] = "Node", node, "v1"
	}
	n := 1
	if g.rng.Float64() < g.cfg.SeriesFraction {
		n = 2 + g.rng.IntN(2*g.cfg.SeriesStates-3)
	}
	t := first
	for s := range n {
		if s > 0 {
			t = t.Add(time.Duration(10+g.rng.IntN(300)) * time.Second)
		}
		if t.After(g.now) || g.created == g.cfg.Events {
			break
		}
		heap.Push(&g.pending, state{t: t, ev: e, count: int32(s + 1)})
		g.created++
	}
	g.distinct++
	if p := [2]string{o.name, reason}; !g.pairSeen[p] && len(g.pairs) < 10000 {
		g.pairSeen[p] = true
		g.pairs = append(g.pairs, p)
	}
}

// next appends up to n records to dst, oldest first; none once every
// event is out.
func (g *generator) next(dst []archive.Record, n int) ([]archive.Record, error) {
	for len(dst) < n {
		if g.pending.Len() == 0 || !g.pending[0].t.Before(g.hourEnd) {
			if g.created == g.cfg.Events || g.hourEnd.After(g.now) {
				if g.pending.Len() == 0 {
					return dst, nil
				}
			} else {
				g.startHour()
				continue
			}
		}
		s := heap.Pop(&g.pending).(state)
		g.rv++
		ev := &s.ev.ev
		ev.Count = s.count
		ev.LastTimestamp = metav1.NewTime(s.t.Truncate(time.Second))
		ev.ResourceVersion = strconv.Itoa(100000000 + g.rv)
		obj, err := ev.Marshal()
		if err != nil {
			return dst, err
		}
		dst = append(dst, archive.Record{
			UID: string(ev.UID), Namespace: ev.Namespace, Name: ev.Name, ResourceVersion: ev.ResourceVersion,
			Time: ev.LastTimestamp.Time, Fields: s.ev.fields, Object: obj,
		})
	}
	return dst, nil
}

// Run generates the data set, appends it to a, and measures.
func Run(ctx context.Context, a archive.Archive, cfg Config) (Result, error) {
	now := time.Now()
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", args...)
		}
	}
	logf("appending %d events over %s (%d objects, %d reasons) in batches of %d", cfg.Events, cfg.Span, cfg.Objects, cfg.Reasons, cfg.Batch)
	g := newGenerator(cfg, now)
	var res Result
	var batch []archive.Record
	var appendTime time.Duration
	began := time.Now()
	for {
		var err error
		if batch, err = g.next(batch[:0], cfg.Batch); err != nil {
			return res, err
		}
		if len(batch) == 0 {
			break
		}
		// The generator's time is not the engine's.
		t := time.Now()
		if err := a.Append(ctx, batch); err != nil {
			return res, fmt.Errorf("append at %d: %w", res.Events, err)
		}
		appendTime += time.Since(t)
		res.Events += len(batch)
		if res.Events%(100*cfg.Batch) == 0 {
			logf("  %d appended, %.0f/s appending, %.0f/s with generating", res.Events, float64(res.Events)/appendTime.Seconds(), float64(res.Events)/time.Since(began).Seconds())
		}
	}
	res.DistinctEvents = g.distinct
	res.Ingest = appendTime
	res.EventsPerSecond = float64(res.Events) / res.Ingest.Seconds()
	began = time.Now()
	if err := a.Sync(ctx); err != nil {
		return res, err
	}
	res.Sync = time.Since(began)
	logf("ingest: %d events (%d distinct) in %s of appends (%.0f/s), sync %s", res.Events, res.DistinctEvents, res.Ingest.Round(time.Millisecond), res.EventsPerSecond, res.Sync.Round(time.Millisecond))
	d := struct {
		objects []string
		pairs   [][2]string
		related []string
	}{pairs: g.pairs, related: g.nodes}
	for _, o := range g.objects {
		d.objects = append(d.objects, o.name)
	}

	rng := rand.New(rand.NewPCG(cfg.Seed+1, cfg.Seed)) //nolint:gosec // repeatable queries, not a secret
	since := now.Add(-cfg.Span)
	req := func(f, v string) fields.Requirement {
		return fields.Requirement{Operator: selection.Equals, Field: f, Value: v}
	}
	selectors := []struct {
		name  string
		terms func() fields.Requirements
	}{
		{"regarding.name=X", func() fields.Requirements {
			return fields.Requirements{req("involvedObject.name", d.objects[rng.IntN(len(d.objects))])}
		}},
		{"regarding.name=X,reason=Y", func() fields.Requirements {
			p := d.pairs[rng.IntN(len(d.pairs))]
			return fields.Requirements{req("involvedObject.name", p[0]), req("reason", p[1])}
		}},
		{"related.name=X", func() fields.Requirements {
			return fields.Requirements{req("related.name", d.related[rng.IntN(len(d.related))])}
		}},
		{"newest (no selector)", func() fields.Requirements { return nil }},
	}
	for _, sel := range selectors {
		var first, next []time.Duration
		var firstRecords, nextRecords int
		for range cfg.Queries {
			q := archive.Query{Since: since, Until: now.Add(time.Minute), Limit: cfg.Limit, Fields: sel.terms()}
			for p := range cfg.Pages {
				began := time.Now()
				page, err := a.Query(ctx, q)
				took := time.Since(began)
				if err != nil {
					return res, fmt.Errorf("%s: %w", sel.name, err)
				}
				if p == 0 {
					first, firstRecords = append(first, took), firstRecords+len(page.Records)
				} else {
					next, nextRecords = append(next, took), nextRecords+len(page.Records)
				}
				if page.Next == nil {
					break
				}
				q.After = page.Next
			}
		}
		res.Queries = append(res.Queries, summarize(sel.name+", first page", first, firstRecords))
		if len(next) > 0 {
			res.Queries = append(res.Queries, summarize(sel.name+", following pages", next, nextRecords))
		}
	}
	for _, l := range res.Queries {
		logf("query %-45s n=%4d p50=%8s p99=%8s max=%8s records/page=%.1f", l.Name, l.Count, l.P50.Round(10*time.Microsecond), l.P99.Round(10*time.Microsecond), l.Max.Round(10*time.Microsecond), l.Records)
	}
	return res, nil
}

// Measure reads the archive's size and computes bytes per event.
func (r *Result) Measure(ctx context.Context, a archive.Archive) error {
	stats, err := a.Stats(ctx)
	if err != nil {
		return err
	}
	r.Stats = stats
	r.BytesPerEvent = float64(stats.DiskBytes) / float64(r.Events)
	return nil
}

func summarize(name string, d []time.Duration, records int) Latency {
	slices.Sort(d)
	at := func(q float64) time.Duration {
		return d[min(len(d)-1, int(q*float64(len(d))))]
	}
	return Latency{Name: name, Count: len(d), P50: at(0.5), P99: at(0.99), Max: d[len(d)-1], Records: float64(records) / float64(len(d))}
}
