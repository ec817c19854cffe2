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

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// helm runs the helm CLI pinned in hack/tools/go.mod as the admin.
func helm(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"tool", "helm"}, args...)...)
	cmd.Dir = filepath.Join(suite.root, "hack", "tools")
	home := filepath.Join(suite.cluster.Dir, "helm")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+suite.cluster.Kubeconfig,
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// TestHelmInstall installs the chart in place of the kustomize install:
// the kustomize install is uninstalled as docs/operations.md says, the
// chart is installed with its defaults (the server makes its own
// certificates), the server answers through
// the aggregator again, and the chart is uninstalled the same way.
func TestHelmInstall(t *testing.T) {
	ctx := context.Background()
	c := suite.cluster
	if _, err := c.Client.AppsV1().Deployments(serverNamespace).Get(ctx, "events-apiserver", metav1.GetOptions{}); err != nil {
		t.Fatalf("no kustomize install to replace (TestDefaultOverlay runs first): %v", err)
	}
	start := time.Now()
	uninstall(t, ctx, func() error {
		_, err := kubectl(ctx, "", "delete", "-f", releaseManifest(), "--ignore-not-found", "--wait=true", "--timeout=5m")
		return err
	}, "events-etcd-0", "events-etcd-1", "events-etcd-2", "events-victorialogs")
	logf(t, "kustomize install uninstalled in %s", time.Since(start).Round(time.Second))

	etcdVolumes(t, ctx, "chart-etcd")
	archiveVolume(t, ctx, "chart-victorialogs")
	start = time.Now()
	if out, err := helm(ctx, "install", "events-apiserver", filepath.Join(suite.root, "charts", "events-apiserver"),
		"--namespace", serverNamespace, "--create-namespace"); err != nil {
		t.Fatal(err)
	} else {
		logf(t, "helm install: %s", firstLine(out))
	}
	mustKubectl(t, ctx, "-n", serverNamespace, "rollout", "status", "statefulset/events-etcd", "--timeout=6m")
	mustKubectl(t, ctx, "-n", serverNamespace, "rollout", "status", "statefulset/"+archiveStatefulSet, "--timeout=5m")
	mustKubectl(t, ctx, "-n", serverNamespace, "rollout", "status", "deployment/events-apiserver", "--timeout=5m")
	mustKubectl(t, ctx, "wait", "--for=condition=Available", "apiservice/v1beta1.events.k8s.io", "--timeout=3m")
	logf(t, "chart install Available after %s", time.Since(start).Round(time.Second))

	// The mirror copies kube-apiserver's events again: the workload's are
	// served by the new install.
	var events []eventItem
	var err error
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		events, err = podEvents(ctx, "", workloadNamespace, "missing-image")
		return err == nil && len(events) > 0, nil
	}); err != nil {
		t.Fatalf("no events of %s/missing-image through the chart's install: %v", workloadNamespace, err)
	}
	logf(t, "chart install serves %s/missing-image: reasons %v", workloadNamespace, reasons(events))
	start = time.Now()
	uninstall(t, ctx, func() error {
		out, err := helm(ctx, "uninstall", "events-apiserver", "--namespace", serverNamespace, "--wait", "--timeout=5m")
		if err != nil {
			return err
		}
		logf(t, "helm uninstall: %s", firstLine(out))
		// The release namespace is not the chart's: helm leaves it.
		_, err = kubectl(ctx, "", "delete", "namespace", serverNamespace, "--wait=true", "--timeout=5m")
		return err
	}, "chart-etcd-0", "chart-etcd-1", "chart-etcd-2", "chart-victorialogs")
	logf(t, "chart install uninstalled in %s", time.Since(start).Round(time.Second))
}

// uninstall runs the uninstall of docs/operations.md (mirror mode: steps 3
// to 5): the APIServices first, after which discovery is whole again
// (`kubectl api-resources` succeeds, no group missing); then the install
// itself, removeInstall, with its Namespace and so the StatefulSets'
// claims; then the volumes, whose reclaim policy here is Retain.
func uninstall(t *testing.T, ctx context.Context, removeInstall func() error, volumes ...string) {
	t.Helper()
	mustKubectl(t, ctx, "delete", "apiservice", "v1beta1.events.k8s.io", "v1alpha1.summaries.kube-events.io")
	var lastErr error
	if err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, lastErr = kubectl(ctx, "", "api-resources")
		return lastErr == nil, nil
	}); err != nil {
		t.Fatalf("discovery incomplete a minute after the APIServices were deleted: %v", lastErr)
	}
	if err := removeInstall(); err != nil {
		t.Fatal(err)
	}
	var left string
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		left, lastErr = kubectl(ctx, "", "get", "namespace", serverNamespace, "--ignore-not-found", "-o", "name")
		return lastErr == nil && strings.TrimSpace(left) == "", nil
	}); err != nil {
		t.Fatalf("namespace %s 3 minutes after the uninstall: %q, %v; want it gone", serverNamespace, left, lastErr)
	}
	mustKubectl(t, ctx, append([]string{"delete", "persistentvolume", "--wait=true", "--timeout=2m"}, volumes...)...)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
