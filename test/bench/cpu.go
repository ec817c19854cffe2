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
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/kube-events/events-apiserver/test/harness"
)

// cpuUse is the CPU time, in seconds, each process of a run spent: the
// server under test, its etcd and this load generator. Dividing it by the
// creates of a phase tells where a create's CPU goes on a machine whose
// cores all three share, which the create rate alone does not.
type cpuUse struct {
	server, etcd, client float64
	// gc is the part of server the Go runtime counts as its collector's
	// (the runtime's estimate).
	gc   float64
	tail tailUse
}

func (a cpuUse) sub(b cpuUse) cpuUse {
	return cpuUse{server: a.server - b.server, etcd: a.etcd - b.etcd, client: a.client - b.client, gc: a.gc - b.gc, tail: a.tail.sub(b.tail)}
}

// cpuNow reads the server's and etcd's process_cpu_seconds_total from their
// /metrics and this process's user and system time.
func cpuNow(ctx context.Context, t *target) (cpuUse, error) {
	var use cpuUse
	c, err := rest.UnversionedRESTClientFor(withCodecs(t.config))
	if err != nil {
		return use, err
	}
	m, err := harness.ScrapeMetrics(ctx, c)
	if err != nil {
		return use, fmt.Errorf("server: %w", err)
	}
	for _, name := range []string{cpuMetric, gcCPUMetric} {
		if !m.Has(name) {
			return use, fmt.Errorf("server: no %s in /metrics", name)
		}
	}
	use.server = m.Value(cpuMetric, nil)
	use.gc = m.Value(gcCPUMetric, nil)
	readServerTail(m, &use.tail)
	readClientTail(&use.tail)
	if use.etcd, err = etcdMetric(ctx, t, cpuMetric); err != nil {
		return use, err
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return use, err
	}
	use.client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	return use, nil
}

// cpuMetric is a process's CPU time, served by Go programs; gcCPUMetric
// the part of it its collector took, served by Go programs that export
// the runtime's metrics (both servers do, through component-base).
const (
	cpuMetric   = "process_cpu_seconds_total"
	gcCPUMetric = "go_cpu_classes_gc_total_cpu_seconds_total"
)

// etcdMetric reads metric from t's etcd's /metrics; a metric etcd does not
// serve is an error.
func etcdMetric(ctx context.Context, t *target, metric string) (float64, error) {
	etcd, err := harness.ScrapeMetricsURL(ctx, t.etcdURL+"/metrics")
	if err != nil {
		return 0, fmt.Errorf("etcd: %w", err)
	}
	if !etcd.Has(metric) {
		return 0, fmt.Errorf("etcd: no %s in /metrics", metric)
	}
	return etcd.Value(metric, nil), nil
}

// etcdInUseMetric is the part of etcd's database file holding data: what
// the events take, without the free pages a defragmentation would return.
const etcdInUseMetric = "etcd_mvcc_db_total_size_in_use_in_bytes"

// measured runs load and returns its result with the CPU each process
// spent during it.
func measured(ctx context.Context, t *target, load func() createResult) (createResult, error) {
	before, err := cpuNow(ctx, t)
	if err != nil {
		return createResult{}, err
	}
	res := load()
	after, err := cpuNow(ctx, t)
	if err != nil {
		return res, err
	}
	res.cpu = after.sub(before)
	return res, nil
}

// quietCPU is the share of one core below which the server and its etcd
// count as idle, and settleTimeout how long settle waits for it.
const (
	quietCPU      = 0.10
	settleTimeout = time.Minute
)

// settle waits until the server and its etcd are idle (together below
// quietCPU of a core over a second), so that a measurement does not pay
// for the work the previous phase left behind: the collector and the
// scavenger after a fill, the watch cache after a burst of deletes. A
// server still busy after settleTimeout is measured as it is, and logged.
func settle(ctx context.Context, cfg Config, t *target, before string) error {
	start := time.Now()
	last, err := cpuNow(ctx, t)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, settleTimeout, false, func(ctx context.Context) (bool, error) {
		now, err := cpuNow(ctx, t)
		if err != nil {
			return false, err
		}
		used := now.sub(last)
		last = now
		return used.server+used.etcd < quietCPU, nil
	})
	switch {
	case err == nil:
		cfg.logf("%s: idle after %v, before %s", t.name, time.Since(start).Round(time.Second), before)
	case ctx.Err() == nil && wait.Interrupted(err):
		cfg.logf("%s: still busy after %v, before %s; measuring anyway", t.name, settleTimeout, before)
	default:
		return err
	}
	return nil
}

// perCreate is the CPU milliseconds per create of each process, for a
// table cell.
func (r createResult) perCreate() string {
	if r.created == 0 {
		return "-"
	}
	per := func(s float64) float64 { return s * 1000 / float64(r.created) }
	return fmt.Sprintf("%.2f / %.2f / %.2f ms", per(r.cpu.server), per(r.cpu.etcd), per(r.cpu.client))
}
