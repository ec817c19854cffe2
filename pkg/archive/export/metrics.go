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

package export

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const metricsNamespace, metricsSubsystem = "events_apiserver", "export"

// Label values.
const (
	resultSuccess   = "success"
	resultError     = "error"
	reasonSelection = "selection"
	reasonRate      = "rate"
	reasonUndecoded = "undecodable"
)

var (
	exportedRecords = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "exported_records_total",
		Help:           "Event states the OTLP receiver took (a state sent again after an interruption counts again).",
		StabilityLevel: metrics.ALPHA,
	})
	requests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "requests_total",
		Help:           "Export requests of a batch to the OTLP receiver, by result (success or error); each error is retried.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	retries = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "retries_total",
		Help:           "Export requests sent again after the OTLP receiver failed or refused one.",
		StabilityLevel: metrics.ALPHA,
	})
	dropped = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "dropped_records_total",
		Help:           "Archived event states not exported, by reason: selection (the event policy's export selection), rate (over the namespace's rate), undecodable.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	cursorRevision = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "cursor_revision",
		Help:           "The etcd revision the export's cursor holds: every archived state written at or before it has been exported.",
		StabilityLevel: metrics.ALPHA,
	})
	lagRevisions = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "cursor_lag_revisions",
		Help:           "etcd revisions between the archive checkpoint and the export's cursor.",
		StabilityLevel: metrics.ALPHA,
	})
	lagSeconds = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "cursor_lag_seconds",
		Help:           "How long the export's cursor has been behind the archive checkpoint; 0 when it is caught up.",
		StabilityLevel: metrics.ALPHA,
	})

	registerOnce sync.Once
)

// registerMetrics registers the metrics in the legacy registry, which the
// server's /metrics serves. Safe to call more than once.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(exportedRecords, requests, retries, dropped, cursorRevision, lagRevisions, lagSeconds)
	})
}
