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

package health

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	dependencyAvailable = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "events_apiserver", Subsystem: "controller", Name: "dependency_available",
		Help:           "1 while the dependency of a background loop (archive, etcd, kube-apiserver) answers, 0 while its calls fail and it retries; by controller.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"controller"})

	registerOnce sync.Once
)

// registerMetrics registers the metrics in the legacy registry, which the
// server's /metrics serves. Safe to call more than once.
func registerMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(dependencyAvailable) })
}
