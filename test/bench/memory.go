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
	"context"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kube-events/events-apiserver/test/harness"
)

// memory is a server's memory as its /metrics tells it, read the same way
// for both servers: its resident set (process_resident_memory_bytes), and
// how the Go runtime accounts for it.
type memory struct {
	RSS float64
	// HeapInUse is the heap's spans in use; FreeKept the free heap not
	// yet returned to the OS; NextGC the collector's next target.
	HeapInUse, FreeKept, NextGC float64
	Stacks                      float64
	Goroutines                  float64
	// Live is the heap a collection left (go_memstats_heap_alloc_bytes
	// right after one the reading forced); 0 when not read.
	Live float64
}

func (m memory) String() string {
	const mib = 1 << 20
	s := fmt.Sprintf("RSS %.0f MiB (heap in use %.0f MiB, free heap kept %.0f MiB, next GC at %.0f MiB, stacks %.0f MiB, %.0f goroutines)",
		m.RSS/mib, m.HeapInUse/mib, m.FreeKept/mib, m.NextGC/mib, m.Stacks/mib, m.Goroutines)
	if m.Live > 0 {
		s += fmt.Sprintf(", live heap %.0f MiB", m.Live/mib)
	}
	return s
}

// readMemoryAndLive reads the server's memory as it is, then forces a
// collection (the heap profile endpoint's gc=1, which both servers serve)
// and reads the heap it left live.
func readMemoryAndLive(ctx context.Context, cfg *rest.Config) (memory, error) {
	m, err := readMemory(ctx, cfg)
	if err != nil {
		return m, err
	}
	c, err := rest.UnversionedRESTClientFor(withCodecs(cfg))
	if err != nil {
		return m, err
	}
	if _, err := c.Get().AbsPath("/debug/pprof/heap").Param("gc", "1").Timeout(2 * time.Minute).DoRaw(ctx); err != nil {
		return m, fmt.Errorf("forcing a collection: %w", err)
	}
	metrics, err := harness.ScrapeMetrics(ctx, c)
	if err != nil {
		return m, err
	}
	const alloc = "go_memstats_heap_alloc_bytes"
	if !metrics.Has(alloc) {
		return m, fmt.Errorf("no %s in /metrics", alloc)
	}
	m.Live = metrics.Value(alloc, nil)
	return m, nil
}

// readMemory reads the server's memory from its /metrics.
func readMemory(ctx context.Context, cfg *rest.Config) (memory, error) {
	c, err := rest.UnversionedRESTClientFor(withCodecs(cfg))
	if err != nil {
		return memory{}, err
	}
	m, err := harness.ScrapeMetrics(ctx, c)
	if err != nil {
		return memory{}, err
	}
	for _, name := range []string{"process_resident_memory_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_heap_idle_bytes",
		"go_memstats_heap_released_bytes", "go_memstats_next_gc_bytes", "go_memstats_stack_inuse_bytes", "go_goroutines"} {
		if !m.Has(name) {
			return memory{}, fmt.Errorf("no %s in /metrics", name)
		}
	}
	value := func(name string) float64 { return m.Value(name, nil) }
	return memory{
		RSS:        value("process_resident_memory_bytes"),
		HeapInUse:  value("go_memstats_heap_inuse_bytes"),
		FreeKept:   value("go_memstats_heap_idle_bytes") - value("go_memstats_heap_released_bytes"),
		NextGC:     value("go_memstats_next_gc_bytes"),
		Stacks:     value("go_memstats_stack_inuse_bytes"),
		Goroutines: value("go_goroutines"),
	}, nil
}

// perEvent is what each of events added to a reading from base, in bytes.
func perEvent(from, to float64, events int64) float64 {
	if events <= 0 {
		return 0
	}
	return (to - from) / float64(events)
}

// fillLarge fills the store, which holds stored events, with fill more,
// then reads the memory and etcd's database once the server is idle, and
// saves its heap profile in profileDir when set.
func fillLarge(ctx context.Context, cfg Config, t *target, g *generator, stored, fill int64, profileDir string) (*largeResult, error) {
	cfg.logf("%s: filling to %d events", t.name, cfg.LargeEvents)
	res, err := createsIn(ctx, t, g, modes[0], cfg.Writers, fill)
	if err != nil {
		return nil, err
	}
	if res.failed > 0 {
		return nil, fmt.Errorf("filling: %d creates failed, first: %w", res.failed, res.firstErr)
	}
	cfg.logf("%s: filled at %.0f creates/s, CPU per create (server / etcd / load generator) %s, collector %.0f%% of the server's CPU",
		t.name, res.perSecond(), res.perCreate(), 100*res.gcShare())
	large := &largeResult{Events: stored + res.created, Fill: res}
	if err := settle(ctx, cfg, t, "the memory reading at scale"); err != nil {
		return nil, err
	}
	if large.Memory, err = readMemoryAndLive(ctx, t.config); err != nil {
		return nil, err
	}
	cfg.logf("%s: at %d events: %s", t.name, large.Events, large.Memory)
	if large.EtcdBytes, err = etcdMetric(ctx, t, etcdInUseMetric); err != nil {
		return nil, err
	}
	cfg.logf("%s: etcd database in use %.1f MiB at %d events", t.name, large.EtcdBytes/(1<<20), large.Events)
	if profileDir != "" {
		if err := saveProfile(ctx, t.config, "/debug/pprof/heap", "gc=1", filepath.Join(profileDir, "heap-large.pprof")); err != nil {
			return nil, fmt.Errorf("heap profile: %w", err)
		}
	}
	return large, nil
}

// gcShare is the part of the server's CPU its collector took.
func (r createResult) gcShare() float64 {
	if r.cpu.server <= 0 {
		return 0
	}
	return r.cpu.gc / r.cpu.server
}
