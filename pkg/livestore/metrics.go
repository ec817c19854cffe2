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

package livestore

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	objectsGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "events_apiserver", Subsystem: "live_store", Name: "objects",
		Help:           "Objects the compact live store holds, by resource.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"resource"})
	mappedBytesGauge = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "events_apiserver", Subsystem: "live_store", Name: "mapped_bytes",
		Help: "Memory the compact live store maps outside the Go heap (its tables' arenas, with the chunks its scans and watch histories still read), " +
			"which counts against the process's soft memory limit with the heap.",
		StabilityLevel: metrics.ALPHA,
	})
	relistsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "events_apiserver", Subsystem: "live_store", Name: "relists_total",
		Help:           "Lists that reloaded the compact live store because its etcd watch could not go on from the store's revision (compacted, or a change it could not apply), by resource; each ends the watches it served.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"resource"})
	rewatchesTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "events_apiserver", Subsystem: "live_store", Name: "rewatches_total",
		Help:           "Watches of etcd the compact live store started again from its revision after one ended (closed, etcd unavailable), by resource; the watches it serves go on.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"resource"})
	loadingBytesGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "events_apiserver", Subsystem: "live_store", Name: "loading_bytes",
		Help: "Memory the table a list is loading into the compact live store maps so far (part of mapped_bytes), by resource; " +
			"past the relist bound, the old table is dropped.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"resource"})
	droppedTablesTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "events_apiserver", Subsystem: "live_store", Name: "dropped_tables_total",
		Help: "Relists of the compact live store whose new table outgrew the relist bound, so that the old table was dropped and every read went to etcd " +
			"until the new one was complete, by resource.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"resource"})
	watchersGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "events_apiserver", Subsystem: "live_store", Name: "watchers",
		Help:           "Watches the compact live store serves, by resource.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"resource"})
	scansGauge = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "events_apiserver", Subsystem: "live_store", Name: "scans",
		Help: "Scans of the compact live store's tables in progress: lists and watches' initial states reading them outside the store's lock; " +
			"each keeps the memory it reads mapped until it ends, and a list whose client went away ends its scan within 256 entries.",
		StabilityLevel: metrics.ALPHA,
	})
	slowWatchersTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "events_apiserver", Subsystem: "live_store", Name: "slow_watchers_total",
		Help:           "Watches ended because their client did not keep up with the changes (a full buffer, past the dispatch budget), by resource; clients resume from the last revision they got.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"resource"})

	registerOnce sync.Once
)

// registerMetrics registers the store's metrics in the legacy registry,
// which the server's /metrics serves. Safe to call more than once.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(objectsGauge, mappedBytesGauge, loadingBytesGauge, droppedTablesTotal, relistsTotal, rewatchesTotal, watchersGauge, scansGauge, slowWatchersTotal)
		mappedBytesGauge.Set(float64(MappedBytes()))
	})
}
