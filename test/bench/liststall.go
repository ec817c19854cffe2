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
	"io"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-events/events-apiserver/test/harness"
)

// scansMetric is the live store's gauge of scans in progress: a list of
// every event holds one while it reads the table.
const scansMetric = "events_apiserver_live_store_scans"

// stallResult is how our server served selective watchers while clients
// listed every event in the store, and how soon a list of every event
// whose client went away stopped reading the store.
type stallResult struct {
	events int64
	// listTimes are the unselective lists' durations, listBytes the size
	// of one answer.
	listTimes []time.Duration
	listBytes int64
	// watch is the selective watchers measured while the lists ran.
	watch watchResult
	// cancelStops are, per canceled list, the time from the cancel to
	// the scan's end as the server's scans gauge shows it; scrape is the
	// median time of one /metrics read with no list running, which each
	// of them includes. cancelUnseen counts lists that ended before a
	// scan was seen (none should, at a million events).
	cancelStops  []time.Duration
	scrape       time.Duration
	cancelUnseen int
	// noScansMetric is set when the server has no live store (it runs
	// --store-cache=watch-cache): the cancels are not measured.
	noScansMetric bool
}

// listStall measures, on a store of events events, cfg.StallWatchers
// selective watchers under a create load paced at cfg.StallRate while
// cfg.StallLists lists of every event run one after the other, then
// cfg.CancelSamples lists of every event canceled by their client once
// the server is scanning.
func listStall(ctx context.Context, cfg Config, t *target, g *generator, events int64) (*stallResult, error) {
	res := &stallResult{events: events}
	c, err := clientset(t.config, "application/json")
	if err != nil {
		return nil, err
	}
	lists := func(ctx context.Context) error {
		for range cfg.StallLists {
			start := time.Now()
			n, err := listEvery(ctx, c)
			if err != nil {
				return fmt.Errorf("a list of every event: %w", err)
			}
			res.listTimes = append(res.listTimes, time.Since(start))
			res.listBytes = n
			cfg.logf("%s: a list of every event: %v, %.1f MiB", t.name, time.Since(start).Round(time.Millisecond), float64(n)/(1<<20))
		}
		return nil
	}
	wcfg := cfg
	wcfg.WatchWarmup = min(cfg.WatchWarmup, 5*time.Second)
	wcfg.WatchDuration = time.Second // the lists set the measured load's length
	wcfg.WatchRate = cfg.StallRate
	if err := settle(ctx, cfg, t, "the lists of every event"); err != nil {
		return nil, err
	}
	if res.watch, err = selectiveWatchers(ctx, wcfg, t, g, cfg.StallWatchers, "", "", lists); err != nil {
		return nil, err
	}
	cfg.logf("%s: %d watchers during %d lists of every event: %s", t.name, cfg.StallWatchers, len(res.listTimes), res.watch.summary())

	if err := settle(ctx, cfg, t, "the canceled lists"); err != nil {
		return nil, err
	}
	var scrapes []time.Duration
	for range 10 {
		start := time.Now()
		m, err := harness.ScrapeMetrics(ctx, c.CoreV1().RESTClient())
		if err != nil {
			return nil, err
		}
		scrapes = append(scrapes, time.Since(start))
		if !m.Has(scansMetric) {
			res.noScansMetric = true
			return res, nil
		}
	}
	res.scrape = harness.Quantile(scrapes, 0.5)
	for range cfg.CancelSamples {
		stop, seen, err := canceledList(ctx, c)
		if err != nil {
			return nil, err
		}
		if !seen {
			res.cancelUnseen++
			continue
		}
		res.cancelStops = append(res.cancelStops, stop)
	}
	cfg.logf("%s: %s", t.name, res.cancelSummary())
	return res, nil
}

// listEvery lists every event of the benchmark's namespace, as kubectl get
// events does (JSON, no limit), reading the answer as it streams and
// discarding it; it returns the answer's size.
func listEvery(ctx context.Context, c kubernetes.Interface) (int64, error) {
	body, err := c.CoreV1().RESTClient().Get().Namespace(namespace).Resource("events").Stream(ctx)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	return io.Copy(io.Discard, body)
}

// canceledList starts a list of every event, waits until the server's
// scans gauge shows its scan, cancels it, and returns how long the gauge
// took to fall back; seen is false when the list ended before its scan
// was seen.
func canceledList(ctx context.Context, c kubernetes.Interface) (stop time.Duration, seen bool, err error) {
	scans := func(ctx context.Context) (float64, error) {
		m, err := harness.ScrapeMetrics(ctx, c.CoreV1().RESTClient())
		if err != nil {
			return 0, err
		}
		return m.Value(scansMetric, nil), nil
	}
	base, err := scans(ctx)
	if err != nil {
		return 0, false, err
	}
	listCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	listed := make(chan error, 1)
	go func() {
		_, err := listEvery(listCtx, c)
		listed <- err
	}()
	err = wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-listed:
			listed <- err
			return true, nil
		default:
		}
		n, err := scans(ctx)
		if n > base {
			seen = true
		}
		return seen, err
	})
	if err != nil {
		return 0, false, fmt.Errorf("waiting for the list's scan: %w", err)
	}
	cancel()
	at := time.Now()
	if seen {
		err = wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			n, err := scans(ctx)
			return n <= base, err
		})
		stop = time.Since(at)
		if err != nil {
			return stop, seen, fmt.Errorf("waiting for the canceled list's scan to end: %w", err)
		}
	}
	// A list canceled in flight ends with the cancel's error, or with
	// what the transport makes of it; a list that ended before its scan
	// was seen ended on its own, and has to have succeeded.
	if err := <-listed; err != nil && !seen {
		return stop, seen, fmt.Errorf("a list of every event: %w", err)
	}
	return stop, seen, nil
}

// cancelSummary is the canceled lists' log line and table cell.
func (r *stallResult) cancelSummary() string {
	if r.noScansMetric {
		return "not measured (no live store)"
	}
	return fmt.Sprintf("scan ended p50 %s p99 %s max %s after the cancel (%d lists; a /metrics read, included, takes %s; %d ended before their scan was seen)",
		ms(harness.Quantile(r.cancelStops, 0.5)), ms(harness.Quantile(r.cancelStops, 0.99)), ms(harness.Quantile(r.cancelStops, 1)),
		len(r.cancelStops), ms(r.scrape), r.cancelUnseen)
}
