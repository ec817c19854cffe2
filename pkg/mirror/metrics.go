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

package mirror

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	// The mirror's workqueue reports workqueue_*{name="events_mirror"}
	// (depth, adds, latency, retries...) in the legacy registry.
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
)

const metricsNamespace, metricsSubsystem = "events_apiserver", "mirror"

// Operations and drop reasons, the label values of the metrics.
const (
	OperationCreate = "create"
	OperationUpdate = "update"

	// DropInvalid is the only reason an upstream event is not mirrored:
	// our validation refused it. Every other failed write is retried.
	DropInvalid = "invalid"
)

var (
	writesTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "writes_total",
		Help:           "Events the mirror wrote into the store, by operation (create or update).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation"})
	droppedTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "dropped_total",
		Help:           "Upstream events the mirror did not write, by reason: invalid (refused by our validation; the only reason, failed writes are retried).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	lagSeconds = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "lag_seconds",
		Help: "Seconds from when kube-apiserver stored a change of an event (its creationTimestamp for a create, " +
			"whole seconds; the time the list or watch delivered it otherwise) to the mirror's write of it.",
		Buckets:        metrics.ExponentialBuckets(0.01, 2, 17),
		StabilityLevel: metrics.ALPHA,
	})
	relistsTotal = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "relists_total",
		Help:           "Full paginated lists of kube-apiserver's events the mirror started: one when it starts, one after each watch it could not resume (410 Gone).",
		StabilityLevel: metrics.ALPHA,
	})
	pendingEvents = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "pending_events",
		Help:           "Upstream events waiting to be written (queued, being written or waiting for a retry).",
		StabilityLevel: metrics.ALPHA,
	})
	pausedSecondsTotal = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "read_paused_seconds_total",
		Help:           "Seconds the mirror stopped reading from kube-apiserver because --mirror-queue-size events were pending (backpressure; nothing is dropped).",
		StabilityLevel: metrics.ALPHA,
	})

	registerOnce sync.Once
)

// registerMetrics registers the mirror's metrics in the legacy registry,
// which the server's /metrics serves. Safe to call more than once.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(writesTotal, droppedTotal, lagSeconds, relistsTotal, pendingEvents, pausedSecondsTotal)
	})
}
