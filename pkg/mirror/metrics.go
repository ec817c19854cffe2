package mirror

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const metricsNamespace, metricsSubsystem = "events_apiserver", "mirror"

// Operations and drop reasons, the label values of the metrics.
const (
	OperationCreate = "create"
	OperationUpdate = "update"

	DropQueueFull = "queue_full"
	DropInvalid   = "invalid"
	DropError     = "error"
)

var (
	writesTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "writes_total",
		Help:           "Events the mirror wrote into the store, by operation (create or update).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation"})
	droppedTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "dropped_total",
		Help:           "Upstream events the mirror did not write, by reason: queue_full (the bounded queue was full), invalid (rejected by validation), error (any other failed write).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	lagSeconds = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "lag_seconds",
		Help:           "Seconds between an event's latest upstream time (series.lastObservedTime, lastTimestamp, eventTime or creationTimestamp) and the mirror's write of it.",
		Buckets:        metrics.ExponentialBuckets(0.01, 2, 16),
		StabilityLevel: metrics.ALPHA,
	})
	relistsTotal = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "relists_total",
		Help:           "Full lists (list calls or watch-list streams) of kube-apiserver's events the mirror made: one at start, one after each expired resourceVersion or broken watch it could not resume.",
		StabilityLevel: metrics.ALPHA,
	})
	queueLength = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "queue_length",
		Help:           "Upstream events waiting in the mirror's queue.",
		StabilityLevel: metrics.ALPHA,
	})

	registerOnce sync.Once
)

// registerMetrics registers the mirror's metrics in the legacy registry,
// which the server's /metrics serves. Safe to call more than once.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(writesTotal, droppedTotal, lagSeconds, relistsTotal, queueLength)
	})
}
