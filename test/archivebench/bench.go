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
	// Ingest is the time the appends took, Sync the wait for durability
	// after them.
	Ingest, Sync time.Duration
	// EventsPerSecond is Events / Ingest.
	EventsPerSecond float64
	// Stats after the ingest (and the engine's own merges, if Settle).
	Stats         archive.Stats
	BytesPerEvent float64
	Queries       []Latency
}

// data is the generated data set.
type data struct {
	records []archive.Record
	objects []string // regarding names, by index
	pairs   [][2]string
	related []string
}

// generate builds cfg.Events records, oldest first, with realistic events
// (core/v1 protobuf objects of a kubelet-like reporter).
func generate(cfg Config, now time.Time) (*data, error) {
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	uid := func() string {
		var b [16]byte
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	}
	suffix := func(n int) string {
		const letters = "bcdfghjklmnpqrstvwxz2456789"
		b := make([]byte, n)
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		return string(b)
	}
	type object struct {
		ns, name, uid, rv, kind string
	}
	objects := make([]object, cfg.Objects)
	d := &data{objects: make([]string, cfg.Objects)}
	for i := range objects {
		kind := "Pod"
		if i%10 == 0 {
			kind = "Deployment"
		}
		objects[i] = object{
			ns:   fmt.Sprintf("team-%03d", i%cfg.Namespaces),
			name: fmt.Sprintf("app-%d-%s-%s", i%500, suffix(10), suffix(5)),
			uid:  uid(),
			rv:   strconv.Itoa(1000000 + rng.IntN(9000000)),
			kind: kind,
		}
		d.objects[i] = objects[i].name
	}
	reasons := []string{"Scheduled", "Pulling", "Pulled", "Created", "Started", "Killing", "BackOff", "Unhealthy", "FailedMount", "FailedScheduling"}
	for i := len(reasons); i < cfg.Reasons; i++ {
		reasons = append(reasons, fmt.Sprintf("CustomReason%03d", i))
	}
	nodes := make([]string, 200)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node-%03d.cluster.internal", i)
	}
	d.related = nodes

	// Events in the order they are first observed; a series gets its
	// states spread after its first.
	type state struct {
		t   time.Time
		rec int
	}
	start := now.Add(-cfg.Span)
	var states []archive.Record
	pairSeen := map[[2]string]bool{}
	rv := 100000000
	for len(states) < cfg.Events {
		o := objects[rng.IntN(len(objects))]
		reason := reasons[rng.IntN(len(reasons))]
		// A few reasons make most events.
		if rng.Float64() < 0.8 {
			reason = reasons[rng.IntN(10)]
		}
		etype := "Normal"
		if reason == "BackOff" || reason == "Unhealthy" || reason == "FailedMount" || reason == "FailedScheduling" {
			etype = "Warning"
		}
		node := nodes[rng.IntN(len(nodes))]
		first := start.Add(time.Duration(rng.Int64N(int64(cfg.Span - time.Minute))))
		n := 1
		if rng.Float64() < cfg.SeriesFraction {
			n = 2 + rng.IntN(2*cfg.SeriesStates-3)
		}
		n = min(n, cfg.Events-len(states))
		ev := corev1.Event{
			ObjectMeta: metav1.ObjectMeta{
				Name:              fmt.Sprintf("%s.%016x", o.name, rng.Uint64()),
				Namespace:         o.ns,
				UID:               types.UID(uid()),
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
		}
		var related string
		if rng.Float64() < cfg.RelatedFraction {
			related = node
			ev.Related = &corev1.ObjectReference{Kind: "Node", Name: node, APIVersion: "v1"}
		}
		t := first
		for s := range n {
			if s > 0 {
				t = t.Add(time.Duration(10+rng.IntN(300)) * time.Second)
				if t.After(now) {
					break
				}
			}
			rv++
			ev.Count = int32(s + 1)
			ev.LastTimestamp = metav1.NewTime(t.Truncate(time.Second))
			ev.ResourceVersion = strconv.Itoa(rv)
			obj, err := ev.Marshal()
			if err != nil {
				return nil, err
			}
			f := map[string]string{
				"metadata.name": ev.Name, "metadata.namespace": ev.Namespace,
				"involvedObject.kind": o.kind, "involvedObject.namespace": o.ns, "involvedObject.name": o.name,
				"involvedObject.uid": o.uid, "involvedObject.apiVersion": "v1", "involvedObject.resourceVersion": o.rv,
				"involvedObject.fieldPath": ev.InvolvedObject.FieldPath,
				"reason":                   reason, "source": "kubelet", "type": etype,
				"reportingComponent": "kubelet", "reportingInstance": node,
			}
			if related != "" {
				f["related.kind"], f["related.name"], f["related.apiVersion"] = "Node", related, "v1"
			}
			states = append(states, archive.Record{
				UID: string(ev.UID), Namespace: ev.Namespace, Name: ev.Name, ResourceVersion: ev.ResourceVersion,
				Time: ev.LastTimestamp.Time, Fields: f, Object: obj,
			})
		}
		if p := [2]string{o.name, reason}; !pairSeen[p] && len(d.pairs) < 10000 {
			pairSeen[p] = true
			d.pairs = append(d.pairs, p)
		}
	}
	// The archiver appends states as they happen: by time.
	slices.SortStableFunc(states, func(a, b archive.Record) int { return a.Time.Compare(b.Time) })
	d.records = states
	return d, nil
}

// Run generates the data set, appends it to a, and measures.
func Run(ctx context.Context, a archive.Archive, cfg Config) (Result, error) {
	now := time.Now()
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", args...)
		}
	}
	logf("generating %d events over %s (%d objects, %d reasons)", cfg.Events, cfg.Span, cfg.Objects, cfg.Reasons)
	d, err := generate(cfg, now)
	if err != nil {
		return Result{}, err
	}
	res := Result{Events: len(d.records)}
	distinct := map[string]bool{}
	for _, r := range d.records {
		distinct[r.UID] = true
	}
	res.DistinctEvents = len(distinct)

	logf("appending in batches of %d", cfg.Batch)
	began := time.Now()
	for i := 0; i < len(d.records); i += cfg.Batch {
		batch := d.records[i:min(i+cfg.Batch, len(d.records))]
		if err := a.Append(ctx, batch); err != nil {
			return res, fmt.Errorf("append at %d: %w", i, err)
		}
		if i > 0 && i%(100*cfg.Batch) == 0 {
			logf("  %d appended, %.0f/s", i, float64(i)/time.Since(began).Seconds())
		}
	}
	res.Ingest = time.Since(began)
	res.EventsPerSecond = float64(len(d.records)) / res.Ingest.Seconds()
	began = time.Now()
	if err := a.Sync(ctx); err != nil {
		return res, err
	}
	res.Sync = time.Since(began)
	logf("ingest: %d events in %s (%.0f/s), sync %s", len(d.records), res.Ingest.Round(time.Millisecond), res.EventsPerSecond, res.Sync.Round(time.Millisecond))
	d.records = nil

	rng := rand.New(rand.NewPCG(cfg.Seed+1, cfg.Seed))
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
