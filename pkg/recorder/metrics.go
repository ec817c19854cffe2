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

package recorder

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Write kinds, the values of the kind label of writesTotal.
const (
	writeCreate      = "create"       // the first occurrence, or a recreate after the event vanished
	writeSeriesStart = "series_start" // the second occurrence turns the event into a series
	writeHeartbeat   = "heartbeat"    // a live series re-sent after HeartbeatInterval
	writeFinish      = "finish"       // state Finished with the final count
	writeFlush       = "flush"        // Shutdown writes the count of a live series
)

var (
	writesTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "events_apiserver",
		Subsystem:      "recorder",
		Name:           "writes_total",
		Help:           "Event writes that succeeded, by kind: create, series_start, heartbeat, finish, flush.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind"})
	backoffsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "events_apiserver",
		Subsystem:      "recorder",
		Name:           "backoffs_total",
		Help:           "Writes or lists retried after a backoff, by reason: throttled (429), server_error (5xx), unreachable.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	droppedTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "events_apiserver",
		Subsystem:      "recorder",
		Name:           "dropped_total",
		Help:           "Event writes given up, by reason: buffer_full (oldest dropped), rejected (4xx), shutdown (not written before Shutdown ended).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
)

var registerMetrics sync.Once

// RegisterMetrics registers the recorder's metrics with component-base's
// legacy registry (served on /metrics by Kubernetes components).
// NewBroadcaster calls it.
func RegisterMetrics() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(writesTotal, backoffsTotal, droppedTotal)
	})
}
