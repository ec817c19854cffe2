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

package eventratelimit

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	refusedTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "events_apiserver", Subsystem: "ratelimit", Name: "refused_total",
		Help:           "Event creates and updates refused with 429 TooManyRequests, by the limit type that refused them (Reporter, Object or Namespace).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"limit"})
	liveBuckets = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "events_apiserver", Subsystem: "ratelimit", Name: "buckets",
		Help:           "Token buckets currently kept, by limit type (bounded by each limit's cacheSize).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"limit"})

	registerOnce sync.Once
)

// registerMetrics registers the plugin's metrics in the legacy registry,
// which the server's /metrics serves. Safe to call more than once.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(refusedTotal, liveBuckets)
	})
}
