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

package storage

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	foldedTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "events_apiserver", Subsystem: "fold", Name: "folded_total",
		Help:           "Event creates folded into the live event of their series instead of being stored, and answered once the write holding them succeeded, by API group of the request (core or events.k8s.io).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"api"})
	foldWritesTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "events_apiserver", Subsystem: "fold", Name: "writes_total",
		Help:           "Writes of folded occurrences to etcd (one per series and group-commit window at most), by result: written, or error (their creates are answered with the error, and it is logged).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	foldWaitSeconds = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace: "events_apiserver", Subsystem: "fold", Name: "wait_seconds",
		Help:           "How long a folded create waited for the write of its occurrence (the group commit) before it was answered, successful or not.",
		Buckets:        metrics.ExponentialBuckets(0.005, 2, 12),
		StabilityLevel: metrics.ALPHA,
	})
	foldSeries = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "events_apiserver", Subsystem: "fold", Name: "series",
		Help:           "Event series the folder tracks (bounded by its cacheSize).",
		StabilityLevel: metrics.ALPHA,
	})

	registerFoldOnce sync.Once
)

// registerFoldMetrics registers the folder's metrics in the legacy registry,
// which the server's /metrics serves. Safe to call more than once.
func registerFoldMetrics() {
	registerFoldOnce.Do(func() {
		legacyregistry.MustRegister(foldedTotal, foldWritesTotal, foldWaitSeconds, foldSeries)
	})
}
