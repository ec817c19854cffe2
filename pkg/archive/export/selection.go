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

package export

import (
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/lru"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

// Selection says which states are exported: those whose namespace, type,
// reason and reporting controller are each in its set (an empty set takes
// every value) and whose namespace is not excluded, within a rate per
// namespace.
type Selection struct {
	Namespaces, ExcludedNamespaces sets.Set[string]
	Types, Reasons                 sets.Set[string]
	ReportingControllers           sets.Set[string]
	// NamespaceQPS and NamespaceBurst bound the states of one namespace
	// exported per second of the events' own time; QPS 0 is no bound.
	NamespaceQPS   float64
	NamespaceBurst int
}

// selects tells whether s takes event, the rate aside.
func (s *Selection) selects(event *core.Event) bool {
	in := func(set sets.Set[string], value string) bool { return set.Len() == 0 || set.Has(value) }
	return in(s.Namespaces, event.Namespace) && !s.ExcludedNamespaces.Has(event.Namespace) &&
		in(s.Types, event.Type) && in(s.Reasons, event.Reason) &&
		in(s.ReportingControllers, event.ReportingController)
}

// maxNamespaceBuckets bounds the namespaces whose buckets are kept; the
// least recently used are forgotten (and start full again).
const maxNamespaceBuckets = 4096

// rates keeps a token bucket per namespace. The buckets are refilled by
// the states' own time (their last observation), not the export's clock:
// a backlog sent after an outage is bounded as the same states would have
// been live, not dropped for arriving together, and a storm folded into
// series exports as its states, each taking one token.
type rates struct {
	qps   float64
	burst int
	// buckets holds a *bucket per namespace.
	buckets *lru.Cache
}

type bucket struct {
	limiter *rate.Limiter
	last    time.Time // the latest time the bucket was asked at
}

func newRates(qps float64, burst int) *rates {
	return &rates{qps: qps, burst: burst, buckets: lru.New(maxNamespaceBuckets)}
}

// allow takes a token from namespace's bucket at t, and tells whether
// there was one. A state older than one already counted is counted at the
// later time.
func (r *rates) allow(namespace string, t time.Time) bool {
	if r.qps <= 0 {
		return true
	}
	var b *bucket
	if v, ok := r.buckets.Get(namespace); ok {
		b = v.(*bucket)
	} else {
		b = &bucket{limiter: rate.NewLimiter(rate.Limit(r.qps), max(r.burst, 1)), last: t}
		r.buckets.Add(namespace, b)
	}
	if t.After(b.last) {
		b.last = t
	}
	return b.limiter.AllowN(b.last, 1)
}
