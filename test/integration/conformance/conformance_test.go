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

// Package conformance runs Kubernetes' four Events [Conformance] tests
// (test/conformance) through kube-apiserver's aggregator in takeover mode,
// with the server's default policy: envtest's kube-apiserver keeps its
// events in the events etcd our server stores events in, serves
// events.k8s.io/v1 no more (--runtime-config=events.k8s.io/v1=false), and
// our server is registered for it (artifacts/overlays/takeover). The
// tests' core/v1 requests are kube-apiserver's, their events.k8s.io/v1
// requests ours, on the same events, as a cluster in takeover mode has it.
// (The embedded default runs them in test/integration/server.)
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test ./test/integration/conformance/
package conformance

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/kube-events/events-apiserver/test/conformance"
	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// v1APIServiceName is artifacts/overlays/takeover's APIService.
const v1APIServiceName = "v1.events.k8s.io"

var (
	cluster        *framework.AggregatedCluster
	apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

func TestMain(m *testing.M) {
	// Before the in-process server starts: its embedded archive marks
	// flag.CommandLine parsed, which would leave -run and -v unread.
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := harness.ModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cluster, err = framework.StartAggregatedCluster(framework.AggregatedClusterOptions{
		Offload:            true,
		KubeAPIServerFlags: map[string]string{"runtime-config": "events.k8s.io/v1=false"},
		ExtraServerFlags:   []string{"--mirror=false", "--events-shared-with-kube-apiserver"},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the offload cluster: %v\n", err)
		return 1
	}
	code := 1
	if err := registerTakeover(root); err != nil {
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

// registerTakeover creates overlays/takeover's v1.events.k8s.io and waits
// until it is Available and discovery lists events.k8s.io/v1.
func registerTakeover(root string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	apiService, err := cluster.OverlayAPIService(ctx, root, "takeover", v1APIServiceName)
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
	disco, err := discovery.NewDiscoveryClientForConfig(cluster.AdminConfig)
	if err != nil {
		return err
	}
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := dyn.Resource(apiServicesGVR).Get(ctx, v1APIServiceName, metav1.GetOptions{})
		if err != nil || !available(got) {
			return false, nil
		}
		groups, err := disco.ServerGroups()
		if err != nil {
			return false, nil
		}
		for _, g := range groups.Groups {
			if g.Name == "events.k8s.io" && slices.ContainsFunc(g.Versions, func(v metav1.GroupVersionForDiscovery) bool { return v.Version == "v1" }) {
				return true, nil
			}
		}
		return false, nil
	})
}

// available says whether apiService's condition Available is True.
func available(apiService *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(apiService.Object, "status", "conditions")
	for _, c := range conditions {
		if m, _ := c.(map[string]any); m["type"] == "Available" {
			return m["status"] == "True"
		}
	}
	return false
}

// TestEventsConformanceInTakeover runs the four tests through
// kube-apiserver as its admin, each in a Namespace of its own.
func TestEventsConformanceInTakeover(t *testing.T) {
	conformance.Run(t, conformance.ClusterOf(framework.KubeClient(t, cluster.AdminConfig)), 2*time.Minute)
}
