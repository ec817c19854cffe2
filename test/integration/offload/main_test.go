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

// Package offload runs offload mode: envtest's kube-apiserver keeps its
// events in the events etcd (--etcd-servers-overrides=/events#...) that our
// server (aggregated for events.k8s.io/v1beta1) stores events in, and checks
// that both serve the same events, that every series gets its state,
// whoever wrote it, and that the cluster's main etcd holds no event.
//
// Run with the envtest assets of hack/envtest-assets.sh:
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test ./test/integration/offload/
package offload

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

const timeout = 60 * time.Second

var cluster *framework.AggregatedCluster

func TestMain(m *testing.M) {
	// Before the in-process server starts: its embedded archive marks
	// flag.CommandLine parsed, which would leave -run and -v unread.
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "events-offload-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	config, err := framework.WriteSeriesAdmissionConfig(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cluster, err = framework.StartAggregatedCluster(framework.AggregatedClusterOptions{
		Offload: true,
		// On SIGTERM, drain requests and give watches 2s (not the minute
		// of --request-timeout), so that RestartKubeAPIServer is prompt.
		KubeAPIServerFlags: map[string]string{"shutdown-send-retry-after": "true"},
		ExtraServerFlags: []string{"--mirror=false", "--events-shared-with-kube-apiserver", "--admission-control-config-file=" + config,
			// As installed: the history beside the live store.
			"--archive=embedded"},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the offload cluster: %v\n", err)
		return 1
	}
	code := m.Run()
	if err := cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the offload cluster: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	return ctx
}
