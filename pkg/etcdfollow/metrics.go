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

package etcdfollow

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	relistsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "events_apiserver", Subsystem: "follower", Name: "relists_total",
		Help:           "Lists of the followed etcd prefix made again because etcd compacted past the follower's revision, or its handler could not go on, by follower.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"follower"})
	rewatchesTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "events_apiserver", Subsystem: "follower", Name: "rewatches_total",
		Help:           "Watches of the followed etcd prefix started again from the follower's revision after one ended (closed, etcd unavailable), by follower.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"follower"})

	registerOnce sync.Once
)

// registerMetrics registers the followers' metrics in the legacy
// registry. Safe to call more than once.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(relistsTotal, rewatchesTotal)
	})
}
