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
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/VictoriaMetrics/VictoriaLogs/lib/logstorage"

	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/archive/victorialogs"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
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
	// Samples is the least number of pages measured per selector and
	// scope, first pages and following pages apart (following pages as far
	// as the selector's queries have them); Limit is the page size and
	// Pages how many pages a query follows at most.
	Samples, Limit, Pages int
	// SummarySamples is the number of namespace summaries measured.
	SummarySamples int
	// Seed makes the data set repeatable.
	Seed uint64
	// Log receives progress lines.
	Log io.Writer
}

// Latency summarizes the pages of one kind of query.
type Latency struct {
	// Name is the selector, its scope (cluster-wide or namespaced) and
	// the page (first or following).
	Name string
	// Count pages took P50, P99 and Max (wall time).
	Count         int
	P50, P99, Max time.Duration
	// CPU is the process's CPU time (user and system, all threads) per
	// page: the engine runs in the process.
	CPU time.Duration
	// Records is the mean number of records per page.
	Records float64
	// Phases are the engine's statistics of the pages' LogsQL queries, by
	// phase, summed over the Count pages.
	Phases []PhaseStats
}

// PhaseStats sums the LogsQL queries of one phase of a page.
type PhaseStats struct {
	Phase   victorialogs.QueryPhase
	Queries int
	Took    time.Duration
	Stats   logstorage.QueryStats
}

// Result is what a run measured.
type Result struct {
	Events, DistinctEvents int
	// Ingest is the time spent in Append (the generator's time left out),
	// Sync the wait for durability after the last.
	Ingest, Sync time.Duration
	// EventsPerSecond is Events / Ingest.
	EventsPerSecond float64
	// Settle is the wait, after Sync, for the engine's own merges to
	// finish.
	Settle time.Duration
	// Stats and BytesPerEvent are the size on disk (after Measure).
	Stats         archive.Stats
	BytesPerEvent float64
	Queries       []Latency
	// StartLoad is the one-minute load average when the run started; a
	// run that started above quietLoad measured other work's too.
	StartLoad float64
	// CgoEnabled is the test binary's CGO_ENABLED: "0" as the server ships.
	CgoEnabled string
}

// Busy reports whether the run started on a machine above quietLoad.
func (r *Result) Busy() bool { return r.StartLoad > quietLoad }

// generator makes the data set as the archiver would append it: by time,
// an hour at a time, resourceVersions increasing. Each hour starts its
// share of the events; a series' later states wait in a heap for their
// hour.
type generator struct {
	cfg Config
	rng *rand.Rand
	now time.Time

	objects []object
	trees   []object // the Deployments of the trees
	reasons []string
	nodes   []string

	hourEnd time.Time
	hours   int // hours started
	perHour int // states per hour
	created int // states created (emitted or waiting)
	pending stateHeap
	rv      int

	// Distinct counts the events; pairs are (namespace, regarding name,
	// reason) that exist, for the queries.
	distinct int
	pairs    [][3]string
	pairSeen map[[3]string]bool
}

type object struct {
	ns, name, uid, rv, kind string
	// chain is the object's ancestors (pkg/ownerchain's annotation), "" for
	// none: the pods of each namespace's tree (see newGenerator).
	chain string
}

// TreePods is how many pods each namespace's Deployment owns over the
// span, through two ReplicaSets: the tree an ancestor query selects.
const TreePods = 50

// treeEvery spaces the namespaces with a tree: a few objects carry a
// chain, as in a cluster where most events are about pods of workloads
// the server resolves, and some about others.
const treeEvery = 10

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
		pairSeen: map[[3]string]bool{},
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
	// The first objects of every treeEvery-th namespace are a tree: a
	// Deployment and the pods of its two ReplicaSets (old and new), each
	// pod's events carrying the chain.
	for ns := 0; ns < cfg.Namespaces; ns += treeEvery {
		if ns+TreePods*cfg.Namespaces >= len(g.objects) {
			break
		}
		deployment := &g.objects[ns]
		deployment.kind = "Deployment"
		replicaSets := []ownerchain.Ancestor{
			{Kind: "ReplicaSet", Name: deployment.name + "-" + g.suffix(10), UID: types.UID(g.uid())},
			{Kind: "ReplicaSet", Name: deployment.name + "-" + g.suffix(10), UID: types.UID(g.uid())},
		}
		for p := 1; p <= TreePods; p++ {
			pod := &g.objects[ns+p*cfg.Namespaces]
			pod.kind = "Pod"
			pod.chain = ownerchain.Encode([]ownerchain.Ancestor{replicaSets[p%2],
				{Kind: "Deployment", Name: deployment.name, UID: types.UID(deployment.uid)}})
		}
		g.trees = append(g.trees, *deployment)
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
	if o.chain != "" {
		e.fields["involvedObject.ancestor"] = o.chain
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
	if p := [3]string{o.ns, o.name, reason}; !g.pairSeen[p] && len(g.pairs) < 10000 {
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
		// The object as the archiver encodes it: without what the record
		// holds beside it (archive.Record.Object).
		stripped := *ev
		stripped.Name, stripped.Namespace, stripped.UID, stripped.ResourceVersion = "", "", "", ""
		obj, err := stripped.Marshal()
		if err != nil {
			return dst, err
		}
		dst = append(dst, archive.Record{
			UID: string(ev.UID), Namespace: ev.Namespace, Name: ev.Name, ResourceVersion: strconv.Itoa(100000000 + g.rv),
			Time: ev.LastTimestamp.Time, Fields: s.ev.fields, Object: obj,
			Occurrences: s.count, FirstObserved: ev.FirstTimestamp.Time,
		})
	}
	return dst, nil
}

// Run generates the data set, appends it to a, waits for the engine's
// merges to settle, and measures the queries. It logs the load average at
// the start and end of each phase.
func Run(ctx context.Context, a *victorialogs.Embedded, cfg Config) (Result, error) {
	now := time.Now()
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", args...)
		}
	}
	var res Result
	res.CgoEnabled = ownCgoEnabled()
	if res.CgoEnabled == "0" {
		logf("built with CGO_ENABLED=0, as the server ships (pure-Go zstd)")
	} else {
		logf("NOT AS SHIPPED: built with CGO_ENABLED=%q; the server ships with CGO_ENABLED=0 (pure-Go zstd)", res.CgoEnabled)
	}
	var err error
	if res.StartLoad, err = loadAverage(); err != nil {
		return res, err
	}
	if res.Busy() {
		logf("NOT QUIET: load average %.2f at the start, above %d: the figures include other work's", res.StartLoad, quietLoad)
	}
	end := logPhase(logf, "ingest")
	d, err := ingest(ctx, a, cfg, now, &res, logf)
	if err != nil {
		return res, err
	}
	end()
	end = logPhase(logf, "settle")
	if err := settle(ctx, a, &res, logf); err != nil {
		return res, err
	}
	end()
	if err := res.Measure(ctx, a); err != nil {
		return res, err
	}
	logf("on disk, merges settled: %d bytes, %d rows, %.1f bytes per event", res.Stats.DiskBytes, res.Stats.Rows, res.BytesPerEvent)
	if res.Queries, err = measureQueries(ctx, a, cfg, now, d, logf); err != nil {
		return res, err
	}
	return res, nil
}

// dataSet is what the queries pick their terms from.
type dataSet struct {
	// trees are the Deployments with pods, one per namespace.
	trees      []object
	objects    []object
	pairs      [][3]string
	nodes      []string
	namespaces []string
}

// ingest appends the generated events to a in batches and syncs.
func ingest(ctx context.Context, a archive.Archive, cfg Config, now time.Time, res *Result, logf func(string, ...any)) (dataSet, error) {
	logf("appending %d events over %s (%d objects, %d reasons) in batches of %d", cfg.Events, cfg.Span, cfg.Objects, cfg.Reasons, cfg.Batch)
	g := newGenerator(cfg, now)
	var batch []archive.Record
	var appendTime time.Duration
	began := time.Now()
	for {
		var err error
		if batch, err = g.next(batch[:0], cfg.Batch); err != nil {
			return dataSet{}, err
		}
		if len(batch) == 0 {
			break
		}
		// The generator's time is not the engine's.
		t := time.Now()
		if err := a.Append(ctx, batch); err != nil {
			return dataSet{}, fmt.Errorf("append at %d: %w", res.Events, err)
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
		return dataSet{}, err
	}
	res.Sync = time.Since(began)
	logf("ingest: %d events (%d distinct) in %s of appends (%.0f/s), sync %s", res.Events, res.DistinctEvents, res.Ingest.Round(time.Millisecond), res.EventsPerSecond, res.Sync.Round(time.Millisecond))
	d := dataSet{objects: g.objects, pairs: g.pairs, nodes: g.nodes, trees: g.trees}
	for i := range cfg.Namespaces {
		d.namespaces = append(d.namespaces, fmt.Sprintf("team-%03d", i))
	}
	return d, nil
}

// settle waits until the engine's merges have settled: no rows waiting to
// be searchable, no part in memory, no merge in flight and none finished
// since the previous look, a second before. The engine starts merges when
// parts are added, so without appends none follows.
func settle(ctx context.Context, a *victorialogs.Embedded, res *Result, logf func(string, ...any)) error {
	began := time.Now()
	merges := func(s *logstorage.StorageStats) uint64 {
		return s.InmemoryMergesCount + s.SmallMergesCount + s.BigMergesCount
	}
	var last logstorage.StorageStats
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Hour, false, func(context.Context) (bool, error) {
		s := a.EngineStats()
		settled := s.PendingRows == 0 && s.InmemoryParts == 0 &&
			s.ActiveInmemoryMerges+s.ActiveSmallMerges+s.ActiveBigMerges == 0 && merges(&s) == merges(&last)
		last = s
		return settled, nil
	})
	if err != nil {
		return fmt.Errorf("the engine's merges did not settle: %w", err)
	}
	res.Settle = time.Since(began)
	logf("merges settled in %s: %d partitions, %d small parts, %d big parts; %d merges done",
		res.Settle.Round(time.Millisecond), last.PartitionsCount, last.SmallParts, last.BigParts, merges(&last))
	return nil
}

// selector makes the terms of one kind of query: the namespace a
// namespaced variant names, and the field terms.
type selector struct {
	name  string
	terms func(rng *rand.Rand) (string, fields.Requirements)
	// namespaced runs only the namespaced variant: the API refuses the
	// cluster-wide one over the span (an unselective term).
	namespaced bool
}

func selectors(d dataSet) []selector {
	req := func(f, v string) fields.Requirement {
		return fields.Requirement{Operator: selection.Equals, Field: f, Value: v}
	}
	namespace := func(rng *rand.Rand) string { return d.namespaces[rng.IntN(len(d.namespaces))] }
	return []selector{
		{"regarding.name=X", func(rng *rand.Rand) (string, fields.Requirements) {
			o := d.objects[rng.IntN(len(d.objects))]
			return o.ns, fields.Requirements{req("involvedObject.name", o.name)}
		}, false},
		{"regarding.name=X,reason=Y", func(rng *rand.Rand) (string, fields.Requirements) {
			p := d.pairs[rng.IntN(len(d.pairs))]
			return p[0], fields.Requirements{req("involvedObject.name", p[1]), req("reason", p[2])}
		}, false},
		{"related.name=X", func(rng *rand.Rand) (string, fields.Requirements) {
			return namespace(rng), fields.Requirements{req("related.name", d.nodes[rng.IntN(len(d.nodes))])}
		}, false},
		{"newest (no selector)", func(rng *rand.Rand) (string, fields.Requirements) {
			return namespace(rng), nil
		}, false},
		{"type=Warning", func(rng *rand.Rand) (string, fields.Requirements) {
			return namespace(rng), fields.Requirements{req("type", "Warning")}
		}, true},
		{"regarding.ancestor=Deployment/X", func(rng *rand.Rand) (string, fields.Requirements) {
			o := d.trees[rng.IntN(len(d.trees))]
			return o.ns, fields.Requirements{req("involvedObject.ancestor", ownerchain.Ref(o.kind, o.name))}
		}, false},
	}
}

// pages accumulates the measurements of one kind of page.
type pages struct {
	took    []time.Duration
	cpu     time.Duration
	records int
	phases  map[victorialogs.QueryPhase]*PhaseStats
}

func (p *pages) trace(phase victorialogs.QueryPhase, stats *logstorage.QueryStats, took time.Duration) {
	ps := p.phases[phase]
	if ps == nil {
		ps = &PhaseStats{Phase: phase}
		p.phases[phase] = ps
	}
	ps.Queries++
	ps.Took += took
	ps.Stats.UpdateAtomic(stats)
}

// measureQueries runs each selector cluster-wide and namespaced until it
// has cfg.Samples first pages and as many following pages, or (for a
// selector whose queries seldom have a following page) four times as many
// queries.
func measureQueries(ctx context.Context, a archive.Archive, cfg Config, now time.Time, d dataSet, logf func(string, ...any)) ([]Latency, error) {
	rng := rand.New(rand.NewPCG(cfg.Seed+1, cfg.Seed)) //nolint:gosec // repeatable queries, not a secret
	since := now.Add(-cfg.Span)
	var current *pages
	traced := victorialogs.WithQueryTrace(ctx, func(phase victorialogs.QueryPhase, stats *logstorage.QueryStats, took time.Duration) {
		current.trace(phase, stats, took)
	})
	var out []Latency
	for _, sel := range selectors(d) {
		for _, namespaced := range []bool{false, true} {
			if sel.namespaced && !namespaced {
				continue
			}
			name := sel.name + " cluster-wide"
			if namespaced {
				name = sel.name + " namespaced"
			}
			end := logPhase(logf, "queries "+name)
			first := &pages{phases: map[victorialogs.QueryPhase]*PhaseStats{}}
			next := &pages{phases: map[victorialogs.QueryPhase]*PhaseStats{}}
			for queries := 0; len(first.took) < cfg.Samples ||
				len(next.took) > 0 && len(next.took) < cfg.Samples && queries < 4*cfg.Samples; queries++ {
				ns, terms := sel.terms(rng)
				q := archive.Query{Since: since, Until: now.Add(time.Minute), Limit: cfg.Limit, Fields: terms}
				if namespaced {
					q.Namespace = ns
				}
				for p := range cfg.Pages {
					current = first
					if p > 0 {
						current = next
					}
					cpu := cpuTime()
					began := time.Now()
					page, err := a.Query(traced, q)
					took := time.Since(began)
					current.cpu += cpuTime() - cpu
					if err != nil {
						return nil, fmt.Errorf("%s: %w", name, err)
					}
					current.took = append(current.took, took)
					current.records += len(page.Records)
					if page.Next == nil {
						break
					}
					q.After = page.Next
				}
			}
			for _, l := range []Latency{summarize(name+", first page", first), summarize(name+", following pages", next)} {
				if l.Count > 0 {
					out = append(out, l)
					logLatency(logf, l)
				}
			}
			end()
		}
	}
	// A namespace's summary over the span: one answer, its rows.
	name := "summary (no selector) namespaced"
	end := logPhase(logf, "queries "+name)
	current = &pages{phases: map[victorialogs.QueryPhase]*PhaseStats{}}
	for range cfg.SummarySamples {
		q := archive.SummaryQuery{Namespace: d.namespaces[rng.IntN(len(d.namespaces))], Since: since, Until: now.Add(time.Minute)}
		cpu := cpuTime()
		began := time.Now()
		rows, err := a.Summarize(traced, q)
		took := time.Since(began)
		current.cpu += cpuTime() - cpu
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		current.took = append(current.took, took)
		current.records += len(rows)
	}
	if l := summarize(name, current); l.Count > 0 {
		out = append(out, l)
		logLatency(logf, l)
	}
	end()
	return out, nil
}

// logLatency logs l and its phases.
func logLatency(logf func(string, ...any), l Latency) {
	logf("query %-55s n=%5d p50=%8s p99=%8s max=%8s cpu=%8s records/page=%.1f", l.Name, l.Count,
		l.P50.Round(10*time.Microsecond), l.P99.Round(10*time.Microsecond), l.Max.Round(10*time.Microsecond), l.CPU.Round(10*time.Microsecond), l.Records)
	for _, ps := range l.Phases {
		n := float64(l.Count)
		logf("  %-7s per page: %5.1f queries %8.2f ms %7.0f blocks %9.0f rows processed %7.0f rows found %6.2f MB read %7.2f MB decompressed",
			ps.Phase, float64(ps.Queries)/n, float64(ps.Took.Microseconds())/1000/n, float64(ps.Stats.BlocksProcessed)/n,
			float64(ps.Stats.RowsProcessed)/n, float64(ps.Stats.RowsFound)/n,
			float64(ps.Stats.GetBytesReadTotal())/1e6/n, float64(ps.Stats.BytesProcessedUncompressedValues)/1e6/n)
	}
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

// summarize makes p's Latency; an empty one when p has no pages.
func summarize(name string, p *pages) Latency {
	d := p.took
	if len(d) == 0 {
		return Latency{Name: name}
	}
	slices.Sort(d)
	at := func(q float64) time.Duration {
		return d[min(len(d)-1, int(q*float64(len(d))))]
	}
	l := Latency{
		Name: name, Count: len(d), P50: at(0.5), P99: at(0.99), Max: d[len(d)-1],
		CPU: p.cpu / time.Duration(len(d)), Records: float64(p.records) / float64(len(d)),
	}
	for _, phase := range []victorialogs.QueryPhase{victorialogs.PhaseFind, victorialogs.PhaseCheck, victorialogs.PhaseFetch, victorialogs.PhaseSummary} {
		if ps := p.phases[phase]; ps != nil {
			l.Phases = append(l.Phases, *ps)
		}
	}
	return l
}
