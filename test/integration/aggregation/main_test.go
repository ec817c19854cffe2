// Package aggregation runs events-apiserver as an aggregated API server
// behind a real kube-apiserver (envtest) and exercises it through
// kube-apiserver: discovery, routing of events.k8s.io/v1beta1, field
// selectors, watch, and delegated authentication, authorization and
// admission.
//
// Run with the envtest assets of hack/envtest-assets.sh:
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test ./test/integration/aggregation/
package aggregation

import (
	"fmt"
	"os"
	"testing"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// cluster is shared by every test of the package: starting kube-apiserver
// and our server takes most of the suite's time.
var cluster *framework.AggregatedCluster

func TestMain(m *testing.M) {
	var err error
	cluster, err = framework.StartAggregatedCluster(framework.AggregatedClusterOptions{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the aggregated cluster: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the aggregated cluster: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
