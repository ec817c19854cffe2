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

// Package takeover runs takeover mode: offload mode (envtest's
// kube-apiserver keeps its events in the events etcd our server stores
// events in), with kube-apiserver started with
// --runtime-config=events.k8s.io/v1=false and our server registered for
// events.k8s.io/v1 (artifacts/overlays/takeover) beside v1beta1. It checks
// that unmodified client-go writes of events.k8s.io/v1 through
// kube-apiserver meet our admission, that core/v1 reads through
// kube-apiserver see them, and the switch to and from takeover mode.
//
// Run with the envtest assets of hack/envtest-assets.sh:
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test ./test/integration/takeover/
package takeover

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

const (
	timeout = 90 * time.Second

	// v1APIServiceName is the APIService of events.k8s.io/v1, kube-apiserver's
	// own (local) or ours (artifacts/overlays/takeover).
	v1APIServiceName = "v1.events.k8s.io"
	// kubeV1Disabled is the kube-apiserver flag of takeover mode.
	kubeV1Disabled = "events.k8s.io/v1=false"
)

// The storm policy: a reporter may write 3 events at once and 2 a second,
// and the third isomorphic create is folded into the second.
const (
	reporterBurst  = 3
	foldingAfter   = 2
	admissionRules = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: EventSeries
  configuration:
    apiVersion: eventseries.admission.events.k8s.io/v1alpha1
    kind: EventSeriesConfiguration
    finishAfter: %s
    heartbeatInterval: %s
    heartbeatSlack: %s
    sweepInterval: %s
- name: EventRateLimit
  configuration:
    apiVersion: eventratelimit.admission.events.k8s.io/v1alpha1
    kind: EventRateLimitConfiguration
    limits: [{type: Reporter, qps: 2, burst: %d}]
    folding: {after: %d, window: 1m, flushInterval: 500ms}
`
)

var (
	cluster  *framework.AggregatedCluster
	repoRoot string
)

func TestMain(m *testing.M) {
	// Before the in-process server starts: its embedded archive marks
	// flag.CommandLine parsed, which would leave -run and -v unread.
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "events-takeover-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if repoRoot, err = harness.ModuleRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	config := filepath.Join(dir, "admission.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, admissionRules,
		framework.SeriesFinishAfter, framework.SeriesHeartbeatInterval, framework.SeriesHeartbeatSlack, framework.SeriesSweepInterval,
		reporterBurst, foldingAfter), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cluster, err = framework.StartAggregatedCluster(framework.AggregatedClusterOptions{
		Offload: true,
		KubeAPIServerFlags: map[string]string{
			"runtime-config": kubeV1Disabled,
			// On SIGTERM, drain requests and give watches 2s (not the
			// minute of --request-timeout), so that restarts are prompt.
			"shutdown-send-retry-after": "true",
		},
		ExtraServerFlags: []string{"--mirror=false", "--events-shared-with-kube-apiserver", "--admission-control-config-file=" + config},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the offload cluster: %v\n", err)
		return 1
	}
	code := 1
	if err := registerTakeover(); err != nil {
		fmt.Fprintf(os.Stderr, "registering %s: %v\n", v1APIServiceName, err)
	} else {
		code = m.Run()
	}
	if err := cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the takeover cluster: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// registerTakeover creates our v1.events.k8s.io of
// artifacts/overlays/takeover and waits until kube-apiserver serves it.
func registerTakeover() error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	apiService, err := cluster.OverlayAPIService(ctx, repoRoot, "takeover", v1APIServiceName)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cluster.AdminConfig)
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(apiServicesGVR).Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		return err
	}
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		return servedByUs(ctx) == nil, nil
	})
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	return ctx
}
