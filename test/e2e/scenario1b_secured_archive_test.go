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
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// archiveProbeNamespace is where TestSecuredArchive's outsider runs.
const archiveProbeNamespace = "e2e-archive-probe"

// TestSecuredArchive: the default install's server reaches VictoriaLogs
// over TLS with the password (a history list answers from it), and a pod
// of another namespace that reaches the archive's Service without
// credentials gets 401 on every path, /internal/* included. The bridge CNI
// enforces no NetworkPolicy: this is VictoriaLogs' authentication alone.
func TestSecuredArchive(t *testing.T) {
	ctx := context.Background()
	c := suite.cluster
	dep, err := c.Client.AppsV1().Deployments(serverNamespace).Get(ctx, "events-apiserver", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the default overlay is not installed (TestDefaultOverlay runs first): %v", err)
	}
	var archiveArgs []string
	for _, arg := range dep.Spec.Template.Spec.Containers[0].Args {
		if strings.HasPrefix(arg, "--archive") {
			archiveArgs = append(archiveArgs, arg)
		}
	}
	logf(t, "server archive flags: %s", strings.Join(archiveArgs, " "))
	for _, want := range []string{
		"--archive-url=https://events-victorialogs.events-apiserver.svc:9428",
		// The server writes them from the Secrets it made.
		"--archive-ca-file=/tmp/archive/ca.crt",
		"--archive-password-file=/tmp/archive/password",
	} {
		if !slices.Contains(archiveArgs, want) {
			t.Errorf("server flags %q lack %q", archiveArgs, want)
		}
	}

	// A history list answers from the archive: the server's query went
	// through TLS and the password (a refused one answers 503).
	var items int
	var lastErr error
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := c.Client.EventsV1beta1().Events(workloadNamespace).List(ctx, metav1.ListOptions{FieldSelector: "history.since=1h"})
		if err != nil {
			lastErr = err
			return false, nil
		}
		items = len(list.Items)
		return items > 0, nil
	}); err != nil {
		t.Fatalf("history list of %s never answered with events: %v", workloadNamespace, lastErr)
	}
	logf(t, "history list of %s through the aggregator: %d events", workloadNamespace, items)

	// An outsider: no CA, no password, in another namespace.
	ensureNamespace(t, ctx, archiveProbeNamespace)
	base := "https://events-victorialogs.events-apiserver.svc:9428"
	paths := []string{"/select/logsql/query", "/insert/jsonline", "/internal/force_flush", "/internal/force_merge", "/internal/select/query", "/metrics"}
	args := []string{"post"}
	for _, p := range paths {
		args = append(args, base+p)
	}
	args = append(args, "http://events-victorialogs.events-apiserver.svc:9428/select/logsql/query")
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	applyYAML(t, ctx, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: archive-outsider
  namespace: %s
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: outsider
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["/pause"]
    args: [%s]
`, archiveProbeNamespace, sandboxImage, strings.Join(quoted, ", ")))
	out := succeededPodOutput(t, ctx, archiveProbeNamespace, "archive-outsider", 3*time.Minute)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, line := range lines {
		logf(t, "outsider in %s: %s", archiveProbeNamespace, line)
	}
	if len(lines) != len(args)-1 {
		t.Fatalf("the outsider printed %d lines, want %d", len(lines), len(args)-1)
	}
	for i, p := range paths {
		if want := base + p + ": 401 Unauthorized"; lines[i] != want {
			t.Errorf("outsider: %q, want %q", lines[i], want)
		}
	}
	// Plain http reaches nothing: the port speaks TLS only.
	if plain := lines[len(paths)]; !strings.Contains(plain, "400 Bad Request") {
		t.Errorf("outsider over plain http: %q, want 400 Bad Request (an http request to an https port)", plain)
	}
	mustKubectl(t, ctx, "delete", "namespace", archiveProbeNamespace, "--wait=false")
}

// succeededPodOutput waits up to timeout until a pod has succeeded and
// returns what its containers wrote to their standard output, from the
// node's copy: this cluster's kube-apiserver has no credentials for the
// kubelet's log endpoint (kubectl logs).
func succeededPodOutput(t *testing.T, ctx context.Context, namespace, pod string, timeout time.Duration) string {
	t.Helper()
	mustKubectl(t, ctx, "-n", namespace, "wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/"+pod, "--timeout="+timeout.String())
	uid := strings.TrimSpace(mustKubectl(t, ctx, "-n", namespace, "get", "pod", pod, "-o", "jsonpath={.metadata.uid}"))
	out, err := containerOutput(suite.cluster.path("pod-logs", fmt.Sprintf("%s_%s_%s", namespace, pod, uid)), "stdout")
	if err != nil {
		t.Fatalf("pod %s/%s: its output: %v", namespace, pod, err)
	}
	return out
}

// containerOutput is what a pod's containers wrote to stream ("stdout" or
// "stderr"), read from the kubelet's log files in podLogDir (CRI format:
// "<time> <stream> <tag> <text>"; a partial line, tag P, goes on in the
// next).
func containerOutput(podLogDir, stream string) (string, error) {
	files, err := filepath.Glob(filepath.Join(podLogDir, "*", "*.log"))
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "", fmt.Errorf("no container log in %s", podLogDir)
	}
	var out strings.Builder
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			return "", err
		}
		for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
			fields := strings.SplitN(line, " ", 4)
			if len(fields) < 4 || fields[1] != stream {
				continue
			}
			out.WriteString(fields[3])
			if fields[2] != "P" {
				out.WriteString("\n")
			}
		}
	}
	return out.String(), nil
}
