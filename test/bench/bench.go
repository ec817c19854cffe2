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

// Package bench measures events-apiserver side by side with kube-apiserver
// (the anchor): both started from the envtest assets of
// hack/envtest-assets.sh, each on a fresh etcd of the same binary, one
// after the other in one run, loaded by unmodified client-go. It reports
// creates per second per version and media type, lists by selector at the
// full event count, resident memory there, and selective watchers (one
// regarding name each): creates per second while they watch, events
// delivered of those expected, delivery latency and watchers cut off.
//
// hack/bench.sh runs it in full (make bench); TestSmoke runs a short form
// in CI.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kube-events/events-apiserver/test/harness"
)

// Config sizes a run.
type Config struct {
	// Assets is the envtest assets directory (kube-apiserver, etcd).
	Assets string
	// ServerBinary is a built events-apiserver.
	ServerBinary string
	// ServerEnv is added to events-apiserver's environment (for example
	// a GOMEMLIMIT).
	ServerEnv []string
	// ServerArgs are added to events-apiserver's flags (for example
	// --store-cache=watch-cache, to measure the watch cache).
	ServerArgs []string
	// WorkDir holds the servers' data; it must exist.
	WorkDir string
	// Writers is how many goroutines create concurrently.
	Writers int
	// CreatesPerMode is how many creates each version and media type is
	// measured on.
	CreatesPerMode int64
	// Events is how many events the store holds when lists and memory are
	// measured (the creates of the modes count towards it).
	Events int64
	// LargeEvents, when above Events, is how many events the store is
	// filled to once every other phase ran, for the memory reading at
	// scale and the collector's share of the fill's CPU; 0 skips it.
	LargeEvents int64
	// ListSamples is how many lists, at least, each selector is timed on,
	// and ListDuration how long, at least, they are timed: a few dozen
	// lists of a few milliseconds fall inside one collector cycle or
	// outside of any, and their median says which; lists over a couple of
	// seconds pay the collector's share as a user's lists do.
	ListSamples  int
	ListDuration time.Duration
	// Watchers are the numbers of selective watchers measured. Each phase
	// with watchers is preceded by its baseline, the same load without
	// them; 0 measures that load alone.
	Watchers []int
	// AnchorMaxWatchers caps the watchers put on kube-apiserver, whose
	// events have no watch cache: each watch is an etcd watch that decodes
	// every event. Larger phases are reported as not run.
	AnchorMaxWatchers int
	// WatchWarmup is how long, at least, events are created in a watcher
	// phase after the watchers are open and before the measured load: on
	// until the server's memory stops growing, at most four times as long.
	WatchWarmup time.Duration
	// WatchDuration is how long events are created, measured, in a watcher
	// phase.
	WatchDuration time.Duration
	// WatchRate, when above zero, paces the creates of the watcher phases
	// (and their baselines) at that many per second in all, so that
	// deliveries are timed on a server that is not saturated: the writers
	// keep two cores busy, and at saturation a create's latency is mostly
	// its wait for a CPU (by Little's law, writers divided by the rate).
	// Zero creates as fast as the writers can, which the creates/s ratios
	// need.
	WatchRate float64
	// DeliveryTimeout is how long, after the creates, events may take to
	// reach their watchers before they count as missing.
	DeliveryTimeout time.Duration
	// StallLists, when above zero, is how many lists of every event run
	// one after the other on our server once it holds LargeEvents, while
	// StallWatchers selective watchers are measured under creates paced
	// at StallRate per second; then CancelSamples lists of every event are
	// canceled by their client once the server scans, and the time until
	// the scan ends is measured. kube-apiserver is not measured there.
	StallLists    int
	StallWatchers int
	StallRate     float64
	CancelSamples int
	// ProfileDir, when set, receives events-apiserver's heap profiles at
	// Events (heap.pprof), at LargeEvents (heap-large.pprof) and with each
	// watcher phase's watchers open, and
	// 10 s CPU profiles of the fill (cpu.pprof), of the lists (they take
	// less with few -list-samples) and of each watcher phase's and each
	// baseline's measured load (cpu-watchers-N, cpu-baseline-N), with the
	// load generator's own beside it.
	ProfileDir string
	// SkipAnchor measures events-apiserver alone (for profiling it); the
	// table then has no ratios.
	SkipAnchor bool
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// Full is the configuration of `make bench`.
func Full() Config {
	return Config{
		Writers:           32,
		CreatesPerMode:    10000,
		Events:            100000,
		LargeEvents:       1000000,
		ListSamples:       20,
		ListDuration:      2 * time.Second,
		Watchers:          []int{100, 1000, 10000},
		AnchorMaxWatchers: 1000,
		WatchWarmup:       15 * time.Second,
		WatchDuration:     15 * time.Second,
		DeliveryTimeout:   60 * time.Second,
		StallLists:        10,
		StallWatchers:     100,
		StallRate:         100,
		CancelSamples:     100,
	}
}

// Result is what one server measured.
type Result struct {
	Server  string
	Creates map[string]createResult // by mode name
	Events  int64                   // events in the store at the lists
	Lists   map[string]listResult   // by selector row
	// Idle is the memory before the first create; AtEvents with Events in
	// the store.
	Idle, AtEvents memory
	// EtcdBytes is the size of etcd's database in use (pages holding
	// data) with Events in the store.
	EtcdBytes float64
	Watches   map[int]*watchResult // by watcher count; nil when not run
	Fill      createResult         // the creates that filled the store to Events
	// Large is the reading at LargeEvents; nil when not run.
	Large *largeResult
	// Stall is the lists of every event at LargeEvents; nil when not run.
	Stall *stallResult
}

// largeResult is the reading with LargeEvents in the store.
type largeResult struct {
	Events    int64
	Memory    memory
	EtcdBytes float64
	// Fill is the creates from the watcher phases' end to Events, with
	// the CPU the server's collector spent in them.
	Fill createResult
}

// listRows are the lists measured: a label, events.k8s.io or core/v1, a
// selector selecting about Events/pods (or /nodes) events.
var listRows = []struct {
	name     string
	events   bool
	selector string
}{
	{"core/v1 involvedObject.name", false, "involvedObject.name=pod-17"},
	{"events.k8s.io/v1 regarding.name", true, "regarding.name=pod-17"},
	{"events.k8s.io/v1 related.name", true, "related.name=node-17"},
}

// Run measures kube-apiserver, then events-apiserver, and returns both.
func Run(ctx context.Context, cfg Config) ([]*Result, error) {
	var results []*Result
	starts := []func() (*target, error){
		func() (*target, error) { return startKubeAPIServer(cfg.Assets) },
		func() (*target, error) {
			dir := filepath.Join(cfg.WorkDir, "events-apiserver-run")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			return startEventsAPIServer(ctx, cfg.Assets, cfg.ServerBinary, cfg.ServerEnv, cfg.ServerArgs, dir)
		},
	}
	if cfg.SkipAnchor {
		starts = starts[1:]
	}
	for _, start := range starts {
		cfg.logf("load average %s, before a server starts", loadAverage())
		t, err := start()
		if err != nil {
			return results, err
		}
		r, err := measure(ctx, cfg, t)
		err = errors.Join(err, t.stop())
		if r != nil {
			results = append(results, r)
		}
		if err != nil {
			return results, fmt.Errorf("%s: %w", t.name, err)
		}
	}
	return results, nil
}

// loadAverage is the machine's load average over 1, 5 and 15 minutes, as
// /proc/loadavg gives it ("unknown" where it cannot be read): what else
// the machine ran, which the measurements share the cores with.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	fields := strings.Fields(string(data))
	if len(fields) < 3 {
		return "unknown"
	}
	return strings.Join(fields[:3], " ")
}

func (cfg Config) logf(format string, args ...any) {
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
}

// measure runs every phase against one server.
func measure(ctx context.Context, cfg Config, t *target) (*Result, error) {
	r := &Result{Server: t.name, Creates: map[string]createResult{}, Lists: map[string]listResult{}, Watches: map[int]*watchResult{}}
	admin, err := clientset(t.config, "application/json")
	if err != nil {
		return nil, err
	}
	if err := ensureNamespace(ctx, admin); err != nil {
		return nil, err
	}
	g := &generator{}
	profileDir := "" // only ours is profiled
	if t.name == "events-apiserver" {
		profileDir = cfg.ProfileDir
	}

	if err := settle(ctx, cfg, t, "the creates"); err != nil {
		return r, err
	}
	if r.Idle, err = readMemoryAndLive(ctx, t.config); err != nil {
		return r, err
	}
	cfg.logf("%s: idle: %s", t.name, r.Idle)
	for _, m := range modes {
		res, err := createsIn(ctx, t, g, m, cfg.Writers, cfg.CreatesPerMode)
		if err != nil {
			return r, err
		}
		if res.failed > 0 {
			return r, fmt.Errorf("%s: %d creates failed, first: %w", m.name, res.failed, res.firstErr)
		}
		r.Creates[m.name] = res
		cfg.logf("%s: %s: %.0f creates/s, CPU per create (server / etcd / load generator) %s", t.name, m.name, res.perSecond(), res.perCreate())
	}

	if fill := cfg.Events - g.next.Load(); fill > 0 {
		cfg.logf("%s: filling to %d events", t.name, cfg.Events)
		profiled := profileCPU(ctx, t, profileDir, "cpu", false)
		res, err := createsIn(ctx, t, g, modes[0], cfg.Writers, fill)
		if perr := profiled(); perr != nil {
			return r, perr
		}
		if err != nil {
			return r, err
		}
		if res.failed > 0 {
			return r, fmt.Errorf("filling: %d creates failed, first: %w", res.failed, res.firstErr)
		}
		r.Fill = res
		cfg.logf("%s: filled at %.0f creates/s, CPU per create (server / etcd / load generator) %s", t.name, res.perSecond(), res.perCreate())
	}
	r.Events = g.next.Load()

	// Memory is read once the fill has settled, before the lists: what the
	// server holds for the events, not the heap that a few seconds of
	// back-to-back lists churn (logged after them, for comparison).
	if err := settle(ctx, cfg, t, "the memory reading and the lists"); err != nil {
		return r, err
	}
	if r.AtEvents, err = readMemoryAndLive(ctx, t.config); err != nil {
		return r, err
	}
	cfg.logf("%s: at %d events: %s", t.name, r.Events, r.AtEvents)
	if r.EtcdBytes, err = etcdMetric(ctx, t, etcdInUseMetric); err != nil {
		return r, err
	}
	cfg.logf("%s: etcd database in use %.1f MiB at %d events", t.name, r.EtcdBytes/(1<<20), r.Events)
	if profileDir != "" {
		if err := saveProfile(ctx, t.config, "/debug/pprof/heap", "gc=1", filepath.Join(profileDir, "heap.pprof")); err != nil {
			return r, fmt.Errorf("heap profile: %w", err)
		}
	}
	profiled := profileCPU(ctx, t, profileDir, "cpu-lists", false)
	for _, row := range listRows {
		res, err := listBy(ctx, t.config, row.events, row.selector, cfg.ListSamples, cfg.ListDuration)
		if err != nil {
			return r, err
		}
		r.Lists[row.name] = res
		cfg.logf("%s: list %s: %v (median of %d), %d items", t.name, row.selector, res.median, res.samples, res.items)
	}
	if err := profiled(); err != nil {
		return r, err
	}
	afterLists, err := readMemory(ctx, t.config)
	if err != nil {
		return r, err
	}
	cfg.logf("%s: after the lists: %s", t.name, afterLists)

	for _, watchers := range cfg.Watchers {
		if t.name == "kube-apiserver" && watchers > cfg.AnchorMaxWatchers {
			r.Watches[watchers] = nil
			continue
		}
		var baseline *watchResult
		if watchers > 0 {
			b, err := selectiveWatchers(ctx, cfg, t, g, 0, profileDir, fmt.Sprintf("baseline-%d", watchers), nil)
			if err != nil {
				return r, fmt.Errorf("baseline of %d watchers: %w", watchers, err)
			}
			baseline = &b
			cfg.logf("%s: baseline of %d watchers: %s", t.name, watchers, b.summary())
		}
		res, err := selectiveWatchers(ctx, cfg, t, g, watchers, profileDir, fmt.Sprintf("watchers-%d", watchers), nil)
		if err != nil {
			return r, err
		}
		res.baseline = baseline
		r.Watches[watchers] = &res
		cfg.logf("%s: %d watchers: %s", t.name, watchers, res.summary())
		if baseline != nil {
			cfg.logf("%s: %d watchers: %.0f%% of the creates/s of its baseline", t.name, watchers, 100*res.ratio())
		}
	}

	// The watcher phases deleted their events: the store holds r.Events.
	if fill := cfg.LargeEvents - r.Events; fill > 0 {
		if r.Large, err = fillLarge(ctx, cfg, t, g, r.Events, fill, profileDir); err != nil {
			return r, fmt.Errorf("at %d events: %w", cfg.LargeEvents, err)
		}
	}
	if t.name == "events-apiserver" && cfg.StallLists > 0 {
		events := r.Events
		if r.Large != nil {
			events = r.Large.Events
		}
		if r.Stall, err = listStall(ctx, cfg, t, g, events); err != nil {
			return r, fmt.Errorf("lists of every event: %w", err)
		}
	}
	return r, nil
}

// WriteTable prints the results side by side, with the ratio of the
// second server (ours) to the first (the anchor), as a Markdown table.
func WriteTable(w io.Writer, cfg Config, results []*Result) error {
	if len(results) == 1 {
		// Without the anchor: an empty column stands for it.
		results = append([]*Result{{Server: "(not run)", Creates: map[string]createResult{}, Lists: map[string]listResult{},
			Watches: map[int]*watchResult{}}}, results...)
	}
	if len(results) != 2 {
		return fmt.Errorf("want 2 results, have %d", len(results))
	}
	anchor, ours := results[0], results[1]
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	row := func(cells ...string) { fmt.Fprintln(tw, "| "+strings.Join(cells, "\t ")+"\t") }
	row("", anchor.Server, ours.Server, "ratio")
	row("---", "---", "---", "---")
	higher := func(a, b float64) string {
		if a == 0 || b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f×", b/a)
	}
	for _, m := range modes {
		a, b := anchor.Creates[m.name], ours.Creates[m.name]
		row("creates/s, "+m.name, fmt.Sprintf("%.0f", a.perSecond()), fmt.Sprintf("%.0f", b.perSecond()), higher(a.perSecond(), b.perSecond()))
	}
	// CPU per create: where a create's work goes on the shared cores; the
	// ratio compares the servers' own share.
	cpuRow := func(label string, a, b createResult) {
		ratio := "-"
		if a.created > 0 && b.created > 0 {
			ratio = higher(b.cpu.server/float64(b.created), a.cpu.server/float64(a.created))
		}
		row("CPU per create (server / etcd / load generator), "+label, a.perCreate(), b.perCreate(), ratio)
	}
	for _, m := range modes {
		cpuRow(m.name, anchor.Creates[m.name], ours.Creates[m.name])
	}
	cpuRow(fmt.Sprintf("fill to %d events", ours.Events), anchor.Fill, ours.Fill)
	for _, l := range listRows {
		a, b := anchor.Lists[l.name], ours.Lists[l.name]
		cell := func(r listResult) string {
			if r.unsupported {
				return "unsupported"
			}
			return fmt.Sprintf("%s (%d)", ms(r.median), r.items)
		}
		ratio := "-"
		if !a.unsupported && !b.unsupported {
			ratio = higher(b.median.Seconds(), a.median.Seconds())
		}
		row(fmt.Sprintf("list %s (%d of %d events)", l.selector, b.items, ours.Events), cell(a), cell(b), ratio)
	}
	mib := func(b float64) string { return fmt.Sprintf("%.0f MiB", b/(1<<20)) }
	bytes := func(b float64) string { return fmt.Sprintf("%.0f B", b) }
	row("RSS idle", mib(anchor.Idle.RSS), mib(ours.Idle.RSS), higher(ours.Idle.RSS, anchor.Idle.RSS))
	// memoryRows are the readings with events in the store: what the
	// process holds, and what each event added to it since idle.
	memoryRows := func(events int64, a, b memory) {
		row(fmt.Sprintf("RSS after %d events", events), mib(a.RSS), mib(b.RSS), higher(b.RSS, a.RSS))
		ra, rb := perEvent(anchor.Idle.RSS, a.RSS, events), perEvent(ours.Idle.RSS, b.RSS, events)
		row(fmt.Sprintf("RSS per event, idle to %d events", events), bytes(ra), bytes(rb), higher(rb, ra))
		la, lb := perEvent(anchor.Idle.Live, a.Live, events), perEvent(ours.Idle.Live, b.Live, events)
		row(fmt.Sprintf("live heap per event, idle to %d events", events), bytes(la), bytes(lb), higher(lb, la))
	}
	gcRow := func(label string, a, b createResult) {
		share := func(r createResult) string {
			if r.created == 0 {
				return "-"
			}
			return fmt.Sprintf("%.0f%%", 100*r.gcShare())
		}
		row("collector's share of the server's CPU, "+label, share(a), share(b), "-")
	}
	memoryRows(ours.Events, anchor.AtEvents, ours.AtEvents)
	gcRow(fmt.Sprintf("fill to %d events", ours.Events), anchor.Fill, ours.Fill)
	etcdPerEvent := func(r *Result) float64 {
		if r.Events == 0 {
			return 0
		}
		return r.EtcdBytes / float64(r.Events)
	}
	row(fmt.Sprintf("etcd database in use per event, at %d events", ours.Events), fmt.Sprintf("%.0f B", etcdPerEvent(anchor)),
		fmt.Sprintf("%.0f B", etcdPerEvent(ours)), higher(etcdPerEvent(ours), etcdPerEvent(anchor)))
	for _, n := range cfg.Watchers {
		a, b := anchor.Watches[n], ours.Watches[n]
		cell := func(r *watchResult) string {
			if r == nil {
				return "not run"
			}
			if n == 0 {
				return fmt.Sprintf("%.0f/s", r.creates.perSecond())
			}
			return fmt.Sprintf("%.0f/s, %d of %d, p50 %s p99 %s, %d cut off", r.creates.perSecond(), r.received, r.expected,
				ms(r.p50), ms(r.p99), r.cutOff+r.openFailed)
		}
		ratio := "-"
		if a != nil && b != nil {
			ratio = higher(a.creates.perSecond(), b.creates.perSecond())
		}
		label := fmt.Sprintf("%d selective watchers: creates/s, delivered, latency, cut off", n)
		if n == 0 {
			label = "no watchers: creates/s (same load)"
		}
		row(label, cell(a), cell(b), ratio)
		if n > 0 {
			vsBaseline := func(r *watchResult) string {
				if r == nil || r.baseline == nil {
					return "not run"
				}
				return fmt.Sprintf("%.0f of %.0f/s (%.0f%%)", r.creates.perSecond(), r.baseline.creates.perSecond(), 100*r.ratio())
			}
			row(fmt.Sprintf("%d watchers: creates/s with them of without them just before", n), vsBaseline(a), vsBaseline(b), "-")
			createLatency := func(r *watchResult) string {
				if r == nil || r.baseline == nil {
					return "not run"
				}
				return fmt.Sprintf("p50 %s p99 %s (p50 %s p99 %s)", ms(r.createP50), ms(r.createP99), ms(r.baseline.createP50), ms(r.baseline.createP99))
			}
			row(fmt.Sprintf("%d watchers: create latency with them (without them just before)", n), createLatency(a), createLatency(b), "-")
		}
		var ca, cb createResult
		if a != nil {
			ca = a.creates
		}
		if b != nil {
			cb = b.creates
		}
		cpuRow(fmt.Sprintf("%d watchers", n), ca, cb)
	}
	if large := ours.Large; large != nil {
		a := anchor.Large
		if a == nil {
			a = &largeResult{}
		}
		memoryRows(large.Events, a.Memory, large.Memory)
		row(fmt.Sprintf("etcd database in use per event, at %d events", large.Events), bytes(perEvent(0, a.EtcdBytes, a.Events)),
			bytes(perEvent(0, large.EtcdBytes, large.Events)), higher(perEvent(0, large.EtcdBytes, large.Events), perEvent(0, a.EtcdBytes, a.Events)))
		cpuRow(fmt.Sprintf("fill to %d events", large.Events), a.Fill, large.Fill)
		gcRow(fmt.Sprintf("fill to %d events", large.Events), a.Fill, large.Fill)
	}
	if s := ours.Stall; s != nil {
		row(fmt.Sprintf("%d lists of every event (%d), JSON, one after the other: each", len(s.listTimes), s.events), "not run",
			fmt.Sprintf("p50 %s max %s, %.1f MiB", ms(harness.Quantile(s.listTimes, 0.5)), ms(harness.Quantile(s.listTimes, 1)), float64(s.listBytes)/(1<<20)), "-")
		w := s.watch
		row(fmt.Sprintf("%d selective watchers during them, %.0f creates/s", w.watchers, w.creates.perSecond()), "not run",
			fmt.Sprintf("%d of %d, p50 %s p99 %s, %d cut off; creates p99 %s", w.received, w.expected, ms(w.p50), ms(w.p99), w.cutOff+w.openFailed, ms(w.createP99)), "-")
		row(fmt.Sprintf("a list of every event (%d) canceled by its client", s.events), "not run", s.cancelSummary(), "-")
	}
	return tw.Flush()
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}
