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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/test/freeport"
)

// workloadNamespace holds the scenarios' workloads.
const workloadNamespace = "e2e-workload"

// kubectl runs the assets' kubectl as the admin (or with kubeconfig) and
// returns its standard output.
func kubectl(ctx context.Context, kubeconfig string, args ...string) (string, error) {
	c := suite.cluster
	if kubeconfig == "" {
		kubeconfig = c.Kubeconfig
	}
	cmd := exec.CommandContext(ctx, filepath.Join(c.Assets, "kubectl"), args...)
	cmd.Dir = suite.root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// mustKubectl is kubectl that fails t.
func mustKubectl(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	out, err := kubectl(ctx, "", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// applyYAML applies manifests from a string.
func applyYAML(t *testing.T, ctx context.Context, manifests string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "manifests.yaml")
	if err := os.WriteFile(f, []byte(manifests), 0o644); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, ctx, "apply", "-f", f)
}

// ensureNamespace creates namespace and waits for its default
// ServiceAccount: until the controller-manager has made it, kube-apiserver
// refuses pods there (403, "error looking up service account"), as it does
// for any user who creates a namespace and a pod at once.
func ensureNamespace(t *testing.T, ctx context.Context, namespace string) {
	t.Helper()
	applyYAML(t, ctx, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", namespace))
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := suite.cluster.Client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("namespace %s: no default ServiceAccount: %v", namespace, err)
	}
}

// etcdVolumes makes the bundled etcd's three PersistentVolumes: a one-node
// cluster has no provisioner.
func etcdVolumes(t *testing.T, ctx context.Context, prefix string) {
	t.Helper()
	var manifests strings.Builder
	for i := range 3 {
		manifests.WriteString(hostPathVolume(t, fmt.Sprintf("%s-%d", prefix, i), "8Gi", ""))
	}
	applyYAML(t, ctx, manifests.String())
}

// archiveVolume makes the PersistentVolume of VictoriaLogs' claim (the
// StatefulSet's volumeClaimTemplate), bound to that claim alone so that no
// etcd member takes it.
func archiveVolume(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	applyYAML(t, ctx, hostPathVolume(t, name, "20Gi", "data-"+archiveStatefulSet+"-0"))
}

// hostPathVolume is the manifest of a PersistentVolume of capacity on a
// hostPath directory owned by the images' user (fsGroup does not apply to
// hostPath); a claim, when named, in serverNamespace is the only one it
// binds to.
func hostPathVolume(t *testing.T, name, capacity, claim string) string {
	t.Helper()
	dir := suite.cluster.path("volumes", name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	claimRef := ""
	if claim != "" {
		claimRef = fmt.Sprintf("  claimRef: {namespace: %s, name: %s}\n", serverNamespace, claim)
	}
	return fmt.Sprintf(`---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: %s
spec:
  capacity: {storage: %s}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  hostPath: {path: %s, type: Directory}
%s`, name, capacity, dir, claimRef)
}

// installDefault installs the release's manifest (overlays/default, the
// image pinned by digest) as shipped, with no certificate made by hand (the
// server makes its own), and returns how long the server took to be
// Available through the aggregator.
func installDefault(t *testing.T, ctx context.Context) time.Duration {
	t.Helper()
	etcdVolumes(t, ctx, "events-etcd")
	archiveVolume(t, ctx, "events-victorialogs")
	start := time.Now()
	mustKubectl(t, ctx, "apply", "-f", releaseManifest())
	mustKubectl(t, ctx, "-n", "events-apiserver", "rollout", "status", "statefulset/events-etcd", "--timeout=6m")
	etcdReady := time.Since(start)
	mustKubectl(t, ctx, "-n", "events-apiserver", "rollout", "status", "statefulset/"+archiveStatefulSet, "--timeout=5m")
	archiveReady := time.Since(start)
	mustKubectl(t, ctx, "-n", "events-apiserver", "rollout", "status", "deployment/events-apiserver", "--timeout=5m")
	deploymentReady := time.Since(start)
	mustKubectl(t, ctx, "wait", "--for=condition=Available", "apiservice/v1beta1.events.k8s.io", "--timeout=3m")
	available := time.Since(start)
	logf(t, "install: etcd members Ready after %s, VictoriaLogs Ready after %s, Deployment Ready after %s, APIService Available after %s",
		etcdReady.Round(time.Second), archiveReady.Round(time.Second), deploymentReady.Round(time.Second), available.Round(time.Second))
	return available
}

// releaseManifest is the install manifest of the release the suite built.
func releaseManifest() string {
	return filepath.Join(suite.release, "events-apiserver.yaml")
}

// eventItem is the part of an events.k8s.io event the scenarios read.
type eventItem struct {
	APIVersion string `json:"apiVersion"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Reason              string `json:"reason"`
	Action              string `json:"action"`
	ReportingController string `json:"reportingController"`
	Note                string `json:"note"`
	DeprecatedCount     int    `json:"deprecatedCount"`
	Series              *struct {
		Count int    `json:"count"`
		State string `json:"state"`
	} `json:"series"`
}

// podEvents lists, through the aggregator with the README's command, the
// events.k8s.io events regarding a pod.
func podEvents(ctx context.Context, kubeconfig, namespace, pod string) ([]eventItem, error) {
	out, err := kubectl(ctx, kubeconfig, "get", "events.events.k8s.io", "-n", namespace, "--field-selector", "regarding.name="+pod, "-o", "json")
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []eventItem `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// reasons counts events by reason.
func reasons(events []eventItem) map[string]int {
	counts := map[string]int{}
	for _, e := range events {
		counts[e.Reason]++
	}
	return counts
}

// summary prints reasons with their counts, controllers, actions and series.
func summary(events []eventItem) string {
	var lines []string
	for _, e := range events {
		line := fmt.Sprintf("%s/%s by %s action=%q count=%d", e.APIVersion, e.Reason, e.ReportingController, e.Action, e.DeprecatedCount)
		if e.Series != nil {
			line += fmt.Sprintf(" series{count=%d state=%s}", e.Series.Count, e.Series.State)
		}
		lines = append(lines, line)
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}

// waitReasons waits until the workload pod's events hold every reason in
// want, and returns them.
func waitReasons(t *testing.T, ctx context.Context, pod string, want []string, timeout time.Duration) []eventItem {
	t.Helper()
	return waitNamespaceReasons(t, ctx, workloadNamespace, pod, want, timeout)
}

// waitNamespaceReasons is waitReasons in namespace.
func waitNamespaceReasons(t *testing.T, ctx context.Context, namespace, pod string, want []string, timeout time.Duration) []eventItem {
	t.Helper()
	var events []eventItem
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		events, lastErr = podEvents(ctx, "", namespace, pod)
		if lastErr != nil {
			return false, nil
		}
		seen := reasons(events)
		for _, r := range want {
			if seen[r] == 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("pod %s: want reasons %v; saw %s (last error %v)", pod, want, summary(events), lastErr)
	}
	return events
}

// workload is a steady Deployment (the sandbox program), a pod whose
// container exits at once (the server with an unknown flag) and a pod whose
// image is on a loopback registry nothing serves.
func workload(missingImage string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: steady
  namespace: %[1]s
spec:
  replicas: 1
  selector:
    matchLabels: {app: steady}
  template:
    metadata:
      labels: {app: steady}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: steady
        image: %[2]s
        imagePullPolicy: IfNotPresent
---
apiVersion: v1
kind: Pod
metadata:
  name: crashloop
  namespace: %[1]s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: crash
    image: %[3]s
    imagePullPolicy: IfNotPresent
    args: [--no-such-flag]
---
apiVersion: v1
kind: Pod
metadata:
  name: missing-image
  namespace: %[1]s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: missing
    image: %[4]s
    imagePullPolicy: IfNotPresent
`, workloadNamespace, sandboxImage, serverImage, missingImage)
}

// TestDefaultOverlay: overlays/default (mirror mode) installed from the
// release's manifest, its pods running the release's image by digest; the
// APIService Available through the real Service; a workload's real events
// read back through the aggregator.
func TestDefaultOverlay(t *testing.T) {
	ctx := context.Background()
	c := suite.cluster
	installDefault(t, ctx)

	running := mustKubectl(t, ctx, "-n", "events-apiserver", "get", "pods", "-l", "app.kubernetes.io/name=events-apiserver",
		"-o", "jsonpath={.items[*].spec.containers[0].image}")
	if images := strings.Fields(running); len(images) == 0 || !strings.HasPrefix(images[0], releaseRepository+"@sha256:") {
		t.Fatalf("server pods run %q, want the release's image by digest", running)
	}

	// The APIService goes through the Service in front of the pods.
	svc, err := c.Client.CoreV1().Services("events-apiserver").Get(ctx, "events-apiserver", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ExternalName != "" {
		t.Fatalf("Service events-apiserver: want a cluster IP, got %+v", svc.Spec)
	}
	preferred := mustKubectl(t, ctx, "get", "--raw", "/apis/events.k8s.io")
	if !strings.Contains(preferred, `"preferredVersion":{"groupVersion":"events.k8s.io/v1beta1"`) {
		t.Errorf("events.k8s.io discovery: want v1beta1 preferred, got %s", preferred)
	}

	// A loopback port nothing listens on: the pull fails without leaving
	// the sandbox.
	missing := fmt.Sprintf("127.0.0.1:%d/missing:v1", freeport.Port(t))
	ensureNamespace(t, ctx, workloadNamespace)
	applyYAML(t, ctx, workload(missing))
	mustKubectl(t, ctx, "-n", workloadNamespace, "rollout", "status", "deployment/steady", "--timeout=3m")
	mustKubectl(t, ctx, "-n", workloadNamespace, "scale", "deployment/steady", "--replicas=3")
	mustKubectl(t, ctx, "-n", workloadNamespace, "rollout", "status", "deployment/steady", "--timeout=3m")

	crash := waitReasons(t, ctx, "crashloop", []string{"Scheduled", "Pulled", "Created", "Started", "BackOff"}, 4*time.Minute)
	logf(t, "crashloop: reasons %v; %s", reasons(crash), summary(crash))
	miss := waitReasons(t, ctx, "missing-image", []string{"Scheduled", "Pulling", "Failed", "BackOff"}, 4*time.Minute)
	logf(t, "missing-image: reasons %v; %s", reasons(miss), summary(miss))

	for _, e := range append(append([]eventItem{}, crash...), miss...) {
		if e.APIVersion != "events.k8s.io/v1beta1" {
			t.Errorf("event %s: apiVersion %q, want events.k8s.io/v1beta1 (our server, the preferred version)", e.Metadata.Name, e.APIVersion)
		}
		if e.ReportingController == "" {
			t.Errorf("event %s (%s): no reportingController", e.Metadata.Name, e.Reason)
		}
	}
	byReason := func(events []eventItem, reason string) eventItem {
		for _, e := range events {
			if e.Reason == reason {
				return e
			}
		}
		return eventItem{}
	}
	scheduled := byReason(crash, "Scheduled")
	if diff := cmp.Diff([]string{"default-scheduler", "Binding"}, []string{scheduled.ReportingController, scheduled.Action}); diff != "" {
		t.Errorf("Scheduled (-want +got):\n%s", diff)
	}
	if got := byReason(crash, "Started").ReportingController; got != "kubelet" {
		t.Errorf("Started: reportingController %q, want kubelet", got)
	}

	steadyPods, err := c.Client.CoreV1().Pods(workloadNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=steady"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range steadyPods.Items {
		events := waitReasons(t, ctx, p.Name, []string{"Scheduled", "Pulled", "Created", "Started"}, 2*time.Minute)
		logf(t, "steady pod %s: reasons %v", p.Name, reasons(events))
	}

	// The crash loop's BackOff repeats. The kubelet (v1.37) records with
	// client-go's core/v1 recorder (tools/record), which reports a repeat
	// as a growing count, never as a series: its events read back with
	// deprecatedCount and no series, as from kube-apiserver.
	backOffState := func() (eventItem, error) {
		events, err := podEvents(ctx, "", workloadNamespace, "crashloop")
		return byReason(events, "BackOff"), err
	}
	var backOff eventItem
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		var err error
		backOff, err = backOffState()
		return err == nil && backOff.DeprecatedCount > 1, nil
	}); err != nil {
		t.Fatalf("crashloop BackOff never repeated: %+v", backOff)
	}
	logf(t, "crashloop BackOff while the pod lives: count=%d series=%+v", backOff.DeprecatedCount, backOff.Series)
	if backOff.Series != nil {
		t.Errorf("crashloop BackOff: series %+v from the kubelet's core/v1 recorder, want none (a count)", *backOff.Series)
	}
	mustKubectl(t, ctx, "-n", workloadNamespace, "delete", "pod", "crashloop", "--wait=true", "--timeout=2m")

	schedulerSeries(t, ctx)

	t.Run("Events conformance", eventsConformance("mirror"))
}

// schedulerSeries: the scheduler records with client-go's events.k8s.io
// recorder (tools/events), which turns a repeat into a series. A pod no
// node can take fails to schedule again each time the scheduler tries it
// again (every 30 s here: the cluster's --pod-max-in-unschedulable-pods-duration);
// a repeat makes FailedScheduling a series, which the server marks
// Ongoing (the recorder never sets a state; it sends its final write six
// minutes after the last failure, which makes it Finished, longer than
// this suite waits).
func schedulerSeries(t *testing.T, ctx context.Context) {
	t.Helper()
	applyYAML(t, ctx, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: unschedulable
  namespace: %s
spec:
  terminationGracePeriodSeconds: 1
  nodeSelector: {events-e2e/absent: "true"}
  containers:
  - name: never
    image: %s
    imagePullPolicy: IfNotPresent
`, workloadNamespace, sandboxImage))
	start := time.Now()
	var failed eventItem
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		events, err := podEvents(ctx, "", workloadNamespace, "unschedulable")
		if err != nil {
			return false, nil
		}
		// The recorder's key holds the pod's resourceVersion: the first
		// failure, before the scheduler updates the pod's status, stays a
		// singleton of its own.
		for _, e := range events {
			if e.Reason == "FailedScheduling" && (failed.Series == nil || e.Series != nil) {
				failed = e
			}
		}
		return failed.Series != nil && failed.Series.State != "", nil
	})
	if err != nil {
		t.Fatalf("FailedScheduling never became a series: %+v (%v)", failed, err)
	}
	logf(t, "unschedulable: FailedScheduling by %s action=%q series{count=%d state=%s} after %s",
		failed.ReportingController, failed.Action, failed.Series.Count, failed.Series.State, time.Since(start).Round(time.Second))
	if diff := cmp.Diff([]string{"default-scheduler", "Scheduling", "Ongoing"}, []string{failed.ReportingController, failed.Action, failed.Series.State}); diff != "" {
		t.Errorf("FailedScheduling (-want +got):\n%s", diff)
	}
	if failed.Series.Count < 2 {
		t.Errorf("FailedScheduling series count %d, want at least 2", failed.Series.Count)
	}
	onState := mustKubectl(t, ctx, "get", "events.events.k8s.io", "-n", workloadNamespace,
		"--field-selector", "regarding.name=unschedulable,series.state=Ongoing", "-o", "name")
	if !strings.Contains(onState, failed.Metadata.Name) {
		t.Errorf("series.state=Ongoing selector: want %s, got %q", failed.Metadata.Name, onState)
	}
	mustKubectl(t, ctx, "-n", workloadNamespace, "delete", "pod", "unschedulable", "--wait=true", "--timeout=2m")
}
