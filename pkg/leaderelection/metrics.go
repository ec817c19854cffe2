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

package leaderelection

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	leader = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "events_apiserver", Name: "leader",
		Help:           "1 while this replica leads the election (and runs its work), 0 otherwise.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"election"})

	fencedWrites = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "events_apiserver", Name: "leader_fenced_writes_total",
		Help: "Writes of the elected work that etcd refused because, when it applied them, this replica no longer led " +
			"(paused or cut off past its lease): each one ends the term on this replica.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"election"})

	registerOnce sync.Once
)

// registerMetrics registers the metrics in the legacy registry, which the
// server's /metrics serves. Safe to call more than once.
func registerMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(leader, fencedWrites) })
}
