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
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestSmoke runs the benchmark in a short form, as CI does (budget: two
// minutes on two cores, the server's build included), so that it keeps
// working: both servers start, every phase runs without a failed request,
// the table has every row, every watcher phase has its baseline and both
// warm up and delete their events after them, and every event reaches its
// selective watcher on our server with no watcher cut off. Its numbers
// mean nothing; the full run is hack/bench.sh.
func TestSmoke(t *testing.T) {
	assets := filepath.Dir(framework.EnvtestAsset(t, "kube-apiserver"))
	dir := t.TempDir()
	binary, err := harness.BuildServer(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}

	cfg := Config{
		Assets:            assets,
		ServerBinary:      binary,
		WorkDir:           dir,
		Writers:           4,
		CreatesPerMode:    40,
		Events:            300,
		LargeEvents:       600,
		ListSamples:       3,
		Watchers:          []int{20},
		AnchorMaxWatchers: 20,
		WatchWarmup:       time.Second,
		WatchDuration:     2 * time.Second,
		DeliveryTimeout:   30 * time.Second,
		StallLists:        2,
		StallWatchers:     10,
		StallRate:         50,
		CancelSamples:     3,
		Log:               testWriter{t},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	results, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, cfg, results); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())

	for _, r := range results {
		for _, m := range modes {
			if c := r.Creates[m.name]; c.created != cfg.CreatesPerMode {
				t.Errorf("%s: %s: %d creates, want %d", r.Server, m.name, c.created, cfg.CreatesPerMode)
			}
		}
		for _, l := range listRows {
			if got := r.Lists[l.name]; got.items == 0 && (!got.unsupported || r.Server != "kube-apiserver") {
				t.Errorf("%s: list %s found nothing", r.Server, l.selector)
			}
		}
		if r.Idle.RSS <= 0 || r.AtEvents.RSS <= 0 || r.Idle.Live <= 0 || r.AtEvents.Live <= 0 {
			t.Errorf("%s: memory idle %v, at %d events %v; want both read", r.Server, r.Idle, r.Events, r.AtEvents)
		}
		if r.Large == nil || r.Large.Events != cfg.LargeEvents || r.Large.Memory.RSS <= 0 || r.Large.Memory.Live <= 0 || r.Large.EtcdBytes <= 0 || r.Large.Fill.cpu.server <= 0 {
			t.Errorf("%s: reading at %d events %+v, want the store filled to it and its memory, etcd and CPU read", r.Server, cfg.LargeEvents, r.Large)
		}
		for n, w := range r.Watches {
			if w == nil {
				continue
			}
			if w.baseline == nil || w.ratio() == 0 {
				t.Errorf("%s, %d watchers: no baseline phase measured before it", r.Server, n)
				continue
			}
			for _, phase := range []*watchResult{w.baseline, w} {
				if phase.createP50 <= 0 || phase.createP99 < phase.createP50 {
					t.Errorf("%s, %d watchers: create latency p50 %v p99 %v, want the measured creates timed", r.Server, n, phase.createP50, phase.createP99)
				}
				if phase.warmup.created == 0 || phase.deleted != int(phase.warmup.created+phase.creates.created) {
					t.Errorf("%s, %d watchers: %d warm-up and %d measured creates, %d deleted; want a warm-up, and every event of the phase (and of its baseline) deleted after it",
						r.Server, n, phase.warmup.created, phase.creates.created, phase.deleted)
				}
			}
		}
	}
	ours := results[1].Watches[20]
	if ours == nil || ours.expected == 0 || ours.received != ours.expected || ours.cutOff+ours.openFailed != 0 {
		t.Errorf("events-apiserver, 20 watchers: %+v, want every expected event delivered and none cut off", ours)
	}
	if s := results[1].Stall; s == nil || len(s.listTimes) != cfg.StallLists || s.listBytes == 0 || s.noScansMetric ||
		len(s.cancelStops)+s.cancelUnseen != cfg.CancelSamples || s.watch.expected == 0 || s.watch.received != s.watch.expected || s.watch.cutOff+s.watch.openFailed != 0 {
		t.Errorf("events-apiserver, lists of every event: %+v, want %d lists read, the scans gauge served, %d canceled lists, every event delivered to the watchers and none cut off",
			s, cfg.StallLists, cfg.CancelSamples)
	}
	for _, want := range []string{"lists of every event (600), JSON", "10 selective watchers during them", "a list of every event (600) canceled by its client", "creates/s, events.k8s.io/v1 JSON", "list related.name=node-17", "RSS after 300 events", "RSS per event, idle to 600 events", "live heap per event, idle to 600 events", "etcd database in use per event, at 600 events", "collector's share of the server's CPU, fill to 600 events", "20 selective watchers", "20 watchers: creates/s with them of without them just before", "20 watchers: create latency with them (without them just before)"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table has no row %q", want)
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
