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

package archiver

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const metricsNamespace, metricsSubsystem = "events_apiserver", "archive"

// Results, the label values of appendsTotal.
const (
	resultSuccess = "success"
	resultError   = "error"
)

var (
	appendsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "appends_total",
		Help:           "Appends of a batch of event states to the archive, by result (success or error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	appendedRecords = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "appended_records_total",
		Help:           "Event states appended to the archive (a state appended again after a restart counts again).",
		StabilityLevel: metrics.ALPHA,
	})
	decodeErrors = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "decode_errors_total",
		Help:           "Stored events the archiver could not decode and skipped.",
		StabilityLevel: metrics.ALPHA,
	})
	chainsCompleted = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "chains_completed_total",
		Help:           "Event states archived with the chain of controller owners their stored event lacked (none, or one stopped short), from the resolver's cache.",
		StabilityLevel: metrics.ALPHA,
	})
	relists = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "relists_total",
		Help:           "Times the archiver archived every live event because it had no checkpoint or etcd had compacted past it.",
		StabilityLevel: metrics.ALPHA,
	})
	lagSeconds = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "lag_seconds",
		Help:           "How long the oldest event state the archiver has received but not yet appended has waited; 0 when it is caught up.",
		StabilityLevel: metrics.ALPHA,
	})
	lagRevisions = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "lag_revisions",
		Help:           "etcd revisions between the newest the archiver has seen and the one it has archived up to.",
		StabilityLevel: metrics.ALPHA,
	})
	appendDelay = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "append_delay_seconds",
		Help:           "Time from the archiver receiving an event state to the archive taking it (its Append returning; durable once a Sync returns), per batch (its oldest state).",
		Buckets:        []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		StabilityLevel: metrics.ALPHA,
	})
	syncDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "sync_duration_seconds",
		Help:           "Time the archive took to make what was appended durable before a checkpoint (its Sync); the floor of the checkpoint's lag.",
		Buckets:        []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 4, 5, 7.5, 10, 15, 30, 60},
		StabilityLevel: metrics.ALPHA,
	})
	checkpointRevision = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "checkpoint_revision",
		Help:           "The etcd revision the archive's checkpoint holds: every state written at or before it is durably archived.",
		StabilityLevel: metrics.ALPHA,
	})
	rows = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "rows",
		Help:           "Event states the archive holds, as its engine last reported.",
		StabilityLevel: metrics.ALPHA,
	})
	diskBytes = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "disk_bytes",
		Help:           "Bytes the archive takes on disk, as its engine last reported.",
		StabilityLevel: metrics.ALPHA,
	})

	registerOnce sync.Once
)

// registerMetrics registers the metrics in the legacy registry, which the
// server's /metrics serves. Safe to call more than once.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(appendsTotal, appendedRecords, decodeErrors, chainsCompleted, relists,
			lagSeconds, lagRevisions, appendDelay, syncDuration, checkpointRevision, rows, diskBytes)
	})
}
