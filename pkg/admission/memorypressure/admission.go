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

// Package memorypressure is the EventMemoryPressure admission plugin: while
// the Go heap that survived the last collection is above a share
// (Threshold) of the process's soft memory limit (GOMEMLIMIT, which the
// server sets from its container's memory limit), event creates are
// refused with 503 ServiceUnavailable and a Retry-After. Every live event
// is cached, so the heap follows the live store, which --event-ttl × the
// create rate bounds; at the edge the store stops growing, reads and
// updates go on, and creates are taken again as events expire, instead of
// the collector running without pause and the container being killed at
// its limit. Unmodified client-go waits out the Retry-After and sends the
// create again. A process without a memory limit refuses nothing.
package memorypressure

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime/debug"
	"runtime/metrics"
	"sync"

	"github.com/kube-events/events-apiserver/pkg/admission/internal/eventwrite"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	compmetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// PluginName is the name under which the plugin registers.
const PluginName = "EventMemoryPressure"

// Threshold is the share of the soft memory limit above which the heap
// that survived the last collection refuses creates. The soft limit is
// itself 80 % of the container's: the rest of the process, the heap's
// growth between collections and the collector's headroom live in the
// difference.
const Threshold = 0.9

// RetryAfterSeconds is the Retry-After of a refused create: events expire
// continuously, and a refused client should not come back at once.
const RetryAfterSeconds = 10

// Memory reads the heap that survived the last collection and the soft
// memory limit, in bytes (limit 0: none).
type Memory func() (live, limit uint64)

// SharedLimit is the process's soft memory limit as the command set it,
// shared by the Go heap and the memory mapped outside it.
type SharedLimit interface {
	// Limit is the limit in bytes, 0 for none.
	Limit() int64
	// OffHeap is the memory outside the Go heap that counts against it.
	OffHeap() int64
}

// Register registers the plugin, reading the process's memory with shared.
func Register(plugins *admission.Plugins, shared SharedLimit) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return NewPlugin(ProcessMemory(shared)), nil
	})
}

// Plugin refuses event creates while the heap is near the memory limit.
type Plugin struct {
	*admission.Handler
	memory Memory
}

var _ admission.ValidationInterface = &Plugin{}

// NewPlugin returns the plugin reading memory.
func NewPlugin(memory Memory) *Plugin {
	registerMetrics()
	return &Plugin{Handler: admission.NewHandler(admission.Create), memory: memory}
}

// Validate refuses an event create with 503 and Retry-After while the heap
// that survived the last collection is above Threshold of the limit.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !eventwrite.Is(a) {
		return nil
	}
	live, limit := p.memory()
	if limit == 0 || float64(live) <= Threshold*float64(limit) {
		return nil
	}
	refusedTotal.Inc()
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure,
		Code:   http.StatusServiceUnavailable,
		Reason: metav1.StatusReasonServiceUnavailable,
		Message: fmt.Sprintf("the events store is at its memory limit (%d MiB in use of a %d MiB limit): new events are taken again as live ones expire",
			live>>20, limit>>20),
		Details: &metav1.StatusDetails{RetryAfterSeconds: RetryAfterSeconds},
	}}
}

// ProcessMemory reads this process's memory in use: the live heap
// (runtime/metrics' /gc/heap/live:bytes, as of the last collection) and
// the memory outside it that shared counts; and its limit: shared's, or
// else the Go heap's (debug.SetMemoryLimit; none when it is math.MaxInt64).
func ProcessMemory(shared SharedLimit) Memory {
	return func() (live, limit uint64) {
		if l := shared.Limit(); l > 0 {
			limit = uint64(l)
		} else if l := debug.SetMemoryLimit(-1); l > 0 && l != math.MaxInt64 {
			limit = uint64(l)
		}
		if limit == 0 {
			return 0, 0
		}
		sample := []metrics.Sample{{Name: heapLiveMetric}}
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live = sample[0].Value.Uint64()
		}
		return live + uint64(max(shared.OffHeap(), 0)), limit
	}
}

const heapLiveMetric = "/gc/heap/live:bytes"

var (
	refusedTotal = compmetrics.NewCounter(&compmetrics.CounterOpts{
		Namespace: "events_apiserver", Subsystem: "memory_pressure", Name: "refused_total",
		Help:           "Event creates refused with 503 ServiceUnavailable because the heap was near the process's memory limit.",
		StabilityLevel: compmetrics.ALPHA,
	})
	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(refusedTotal) })
}
