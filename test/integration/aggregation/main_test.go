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
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// cluster is shared by every test of the package: starting kube-apiserver
// and our server takes most of the suite's time.
var cluster *framework.AggregatedCluster

func TestMain(m *testing.M) {
	// Before the in-process server starts: its embedded archive marks
	// flag.CommandLine parsed, which would leave -run and -v unread.
	flag.Parse()
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
