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

package certcache

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	lookups = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "events_apiserver", Name: "client_certificate_cache_lookups_total",
		Help: "Requests with a client certificate looked up among the kept chain verifications, by authenticator " +
			"(front-proxy or client-certificate) and result (hit, or miss: verified again by k8s.io/apiserver's authenticator).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"authenticator", "result"})

	evictions = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: "events_apiserver", Name: "client_certificate_cache_evictions_total",
		Help:           "Kept chain verifications dropped to keep the cache within its size, least recently used first.",
		StabilityLevel: metrics.ALPHA,
	})

	registerOnce sync.Once
)

// registerMetrics registers the metrics in the legacy registry, which the
// server's /metrics serves. Safe to call more than once.
func registerMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(lookups, evictions) })
}

// metricSet are the counters an Authenticator increments, resolved once.
type metricSet struct {
	frontProxyHits, frontProxyMisses               metrics.CounterMetric
	clientCertificateHits, clientCertificateMisses metrics.CounterMetric
	evictions                                      metrics.CounterMetric
}

func newMetricSet() *metricSet {
	return &metricSet{
		frontProxyHits:          lookups.WithLabelValues("front-proxy", "hit"),
		frontProxyMisses:        lookups.WithLabelValues("front-proxy", "miss"),
		clientCertificateHits:   lookups.WithLabelValues("client-certificate", "hit"),
		clientCertificateMisses: lookups.WithLabelValues("client-certificate", "miss"),
		evictions:               evictions,
	}
}
