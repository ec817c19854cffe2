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

package app

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"time"

	"github.com/kube-events/events-apiserver/pkg/admission/memorypressure"
	"github.com/kube-events/events-apiserver/pkg/livestore"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// DefaultGCPercent is the collector's target when GOGC is not set: between
// collections the heap may grow 75 % over what is live, not Go's 100 %.
// With the watch cache (--store-cache=watch-cache), which keeps every event
// decoded on the heap, what is live is most of the process, and the target
// sets its size: at 100,000 cached events about 490 MiB resident instead of
// 570 MiB, for a create rate within the benchmark's noise. The compact live
// store keeps the events outside the heap, where the target does not
// multiply them; what is live is its indexes (64 bytes per event at a
// million events, in the benchmark) and the requests in flight.
// GOGC, and GOMEMLIMIT beside it, still decide when set.
const DefaultGCPercent = 75

// SetDefaultGCPercent applies DefaultGCPercent unless the environment sets
// GOGC, which the runtime has then applied already.
func SetDefaultGCPercent() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(DefaultGCPercent)
	}
}

// MemoryLimitRatio is the share of the container's memory limit that the
// Go heap's soft limit (GOMEMLIMIT) is set to when the environment sets
// none: the collector works harder as the heap nears it, and the rest is
// for goroutine stacks, the runtime and the heap's growth while a
// collection runs, so that the process stays under the limit instead of
// being killed at it.
const MemoryLimitRatio = 0.8

// SetMemoryLimit sets the Go heap's soft limit to MemoryLimitRatio of the
// cgroup's memory limit (the container's), unless the environment sets
// GOMEMLIMIT, or AUTOMEMLIMIT=off; a process without a memory limit keeps
// none. It returns that limit, which the compact live store's memory,
// outside the Go heap, counts against (see MemoryLimit.Follow).
func SetMemoryLimit() *MemoryLimit {
	logger := klog.Background().V(2) // it runs before the flags, --version included: quiet
	setMemoryLimit(unreadableAsNoLimit(memlimit.FromCgroup, logger), logger)
	m := &MemoryLimit{offHeap: livestore.MappedBytes}
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
		m.limit = limit
	}
	return m
}

// followInterval is how often MemoryLimit.Follow reads the memory mapped
// outside the heap: the store maps it a 1 MiB chunk at a time.
const followInterval = 100 * time.Millisecond

// MemoryLimit is the process's soft memory limit, shared by the Go heap and
// the memory the compact live store maps outside it; the zero value has
// none. EventMemoryPressure reads it (memorypressure.SharedLimit).
type MemoryLimit struct {
	limit   int64
	offHeap func() int64
}

var _ memorypressure.SharedLimit = &MemoryLimit{}

// Limit is the limit in bytes, 0 for none.
func (m *MemoryLimit) Limit() int64 { return m.limit }

// OffHeap is the memory mapped outside the Go heap.
func (m *MemoryLimit) OffHeap() int64 {
	if m.offHeap == nil {
		return 0
	}
	return m.offHeap()
}

// Follow keeps the Go runtime's soft limit at the limit less the memory
// mapped outside the heap until ctx ends, so that the collector works
// harder as the store grows instead of letting the heap and the store
// together pass the limit. Without a limit it returns at once.
func (m *MemoryLimit) Follow(ctx context.Context) {
	if m.limit <= 0 {
		return
	}
	ticker := time.NewTicker(followInterval)
	defer ticker.Stop()
	var last int64 = -1
	for {
		last = m.follow(last)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// follow sets the Go runtime's soft limit to the limit less the memory
// mapped now, leaving the heap a floor of a quarter of the limit, unless
// that memory is still last; it returns the memory mapped.
func (m *MemoryLimit) follow(last int64) int64 {
	offHeap := m.OffHeap()
	if offHeap != last {
		debug.SetMemoryLimit(max(m.limit-offHeap, m.limit/4))
	}
	return offHeap
}

// unreadableAsNoLimit is limit, where a limit that cannot be read (no
// /proc, not Linux) is no limit to follow rather than an error.
func unreadableAsNoLimit(limit memlimit.Provider, logger klog.Logger) memlimit.Provider {
	return func() (uint64, error) {
		bytes, err := limit()
		if err != nil && !errors.Is(err, memlimit.ErrNoLimit) {
			logger.Info("No memory limit to follow", "reason", err.Error())
			return 0, memlimit.ErrNoLimit
		}
		return bytes, err
	}
}

func setMemoryLimit(limit memlimit.Provider, logger klog.Logger) {
	_, _ = memlimit.Set( // an error is logged, and the heap keeps no soft limit
		memlimit.WithProvider(limit),
		memlimit.WithRatio(MemoryLimitRatio),
		memlimit.WithLogger(slog.New(logr.ToSlogHandler(logger))),
	)
}
