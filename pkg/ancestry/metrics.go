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

package ancestry

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const metricsNamespace, metricsSubsystem = "events_apiserver", "ancestry"

// Reasons, the label values of unresolvedTotal: why a chain stopped short
// of the top.
const (
	// ReasonForbidden: the server may not read an object (an owner kind
	// the server's ClusterRole does not list, such as a custom resource).
	ReasonForbidden = "forbidden"
	// ReasonNotFound: the object was deleted before its event was stored.
	ReasonNotFound = "not_found"
	// ReasonReplaced: an object of that name exists, but with another UID
	// than the one referred to.
	ReasonReplaced = "replaced"
	// ReasonNoKind: discovery knows no resource of the object's kind.
	ReasonNoKind = "no_kind"
	// ReasonTimeout: the resolution's time budget ran out.
	ReasonTimeout = "timeout"
	// ReasonCycle: the owners loop back to an object already in the chain.
	ReasonCycle = "cycle"
	// ReasonDepth: the chain reached ownerchain.MaxDepth.
	ReasonDepth = "depth"
	// ReasonInvalid: an owner reference whose kind, name or UID a chain
	// cannot hold.
	ReasonInvalid = "invalid"
	// ReasonError: any other failure of a read (kube-apiserver
	// unreachable, a 5xx).
	ReasonError = "error"
	// ReasonUncached: a Lookup found an object the cache does not know;
	// never counted.
	ReasonUncached = "uncached"
	// ReasonOtherNamespace: the event is about an object of another
	// namespace than its own, which is not read on its writer's behalf.
	ReasonOtherNamespace = "other_namespace"
	// ReasonThrottled: the namespace of the event spent its share of the
	// reads (Options.NamespaceQPS).
	ReasonThrottled = "throttled"
)

var (
	unresolvedTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "unresolved_total",
		Help:           "Chains of controller owners that stopped short of the top, by reason (forbidden, not_found, replaced, no_kind, timeout, cycle, depth, invalid, error, other_namespace, throttled); the event keeps the part resolved, and those cut short by a timeout, an error or the namespace's share of reads are resolved again.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"reason"})
	objectReadsTotal = metrics.NewCounter(&metrics.CounterOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "object_reads_total",
		Help:           "Metadata reads of an event's regarding object or one of its owners through kube-apiserver; the rest were answered from the cache.",
		StabilityLevel: metrics.ALPHA,
	})
	resolveDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace: metricsNamespace, Subsystem: metricsSubsystem, Name: "resolve_duration_seconds",
		Help:           "Time taken to resolve an event's chain of controller owners; the write that stores the chain waits for it.",
		Buckets:        []float64{0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
		StabilityLevel: metrics.ALPHA,
	})

	registerOnce sync.Once
)

// registerMetrics registers the metrics in the legacy registry, which the
// server's /metrics serves. Safe to call more than once.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(unresolvedTotal, objectReadsTotal, resolveDuration)
	})
}
