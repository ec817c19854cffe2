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

package etcdmaint

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const metricsNamespace, metricsSubsystem = "events_apiserver", "etcd_maintenance"

// Results, the label values of the counters.
const (
	resultSuccess = "success"
	resultError   = "error"
)

var (
	defragmentations = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "defragmentations_total",
		Help:           "etcd member defragmentations the server ran, by result (success or error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	compactions = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "compactions_total",
		Help:           "Compactions the server ran, by result: while etcd was out of space, and the periodic ones when the server compacts instead of the generic storage.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	heldCompactions = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "held_compactions_total",
		Help:           "Compactions the server ran to an older revision than due (periodic, and while etcd was out of space), because the archive had not archived past it.",
		StabilityLevel: metrics.ALPHA,
	})
	historyLostRevisions = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "history_lost_revisions_total",
		Help:           "Revisions compacted past the archive's checkpoint while etcd was out of space, because compacting to the checkpoint freed too little: the states written in them that the archive had not taken yet are missing from the history.",
		StabilityLevel: metrics.ALPHA,
	})
	alarmsDisarmed = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "nospace_alarms_disarmed_total",
		Help:           "etcd NOSPACE alarms the server disarmed once the space was back.",
		StabilityLevel: metrics.ALPHA,
	})
	dbSizeRatio = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "db_size_quota_ratio",
		Help:           "The largest ratio of an etcd member's database file size to its quota, at the last maintenance round (etcd refuses writes at 1).",
		StabilityLevel: metrics.ALPHA,
	})

	registerOnce sync.Once
)

// registerMetrics registers the metrics in the legacy registry, which the
// server's /metrics serves. Safe to call more than once.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(defragmentations, compactions, heldCompactions, historyLostRevisions, alarmsDisarmed, dbSizeRatio)
	})
}

// recordSizes sets the size gauge from a round's member statuses.
func recordSizes(members []member) {
	var largest float64
	for _, mem := range members {
		if ratio := float64(mem.dbSize) / float64(mem.quota); ratio > largest {
			largest = ratio
		}
	}
	dbSizeRatio.Set(largest)
}
