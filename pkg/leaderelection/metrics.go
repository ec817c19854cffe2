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

	registerOnce sync.Once
)

// registerMetrics registers the gauge in the legacy registry, which the
// server's /metrics serves. Safe to call more than once.
func registerMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(leader) })
}
