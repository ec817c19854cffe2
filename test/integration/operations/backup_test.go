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

// Package operations runs the procedures of docs/operations.md.
package operations

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-events/events-apiserver/test/freeport"
	"github.com/kube-events/events-apiserver/test/harness"
)

// TestEtcdBackupAndRestore runs the backup of docs/operations.md on the
// server's etcd: events written through the server, `etcdctl snapshot
// save` against the member, `etcdutl snapshot restore` into a new data
// directory, a new etcd on it and the server on that: every event is back.
func TestEtcdBackupAndRestore(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal(`KUBEBUILDER_ASSETS is not set: run with KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"`)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	binary, err := harness.BuildServer(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}

	etcd, err := harness.StartEtcd(filepath.Join(assets, "etcd"), filepath.Join(dir, "etcd"), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = etcd.Stop() })
	server, err := harness.StartServer(ctx, binary, filepath.Join(dir, "server"), "--etcd-servers="+etcd.Endpoints[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Kill() })
	const namespace, events = "shop", 50
	var want []string
	c := kubernetes.NewForConfigOrDie(server.RestConfig)
	for i := range events {
		now := metav1.Now()
		event := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("web-%d.backup", i), Namespace: namespace},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: fmt.Sprintf("web-%d", i)},
			Reason:         "Started", Message: "started", Type: corev1.EventTypeNormal,
			Source: corev1.EventSource{Component: "kubelet"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
		}
		if _, err := c.CoreV1().Events(namespace).Create(ctx, event, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", event.Name, err)
		}
		want = append(want, event.Name)
	}
	slices.Sort(want)

	snapshot := filepath.Join(dir, "events-etcd.db")
	run(ctx, t, filepath.Join(assets, "etcdctl"), "--endpoints="+etcd.Endpoints[0], "snapshot", "save", snapshot)
	if err := server.Stop(); err != nil {
		t.Fatalf("stopping the server: %v", err)
	}
	if err := etcd.Stop(); err != nil {
		t.Fatalf("stopping etcd: %v", err)
	}

	// The restored member, on ports of its own.
	ports, err := freeport.Ports(2)
	if err != nil {
		t.Fatal(err)
	}
	clientURL, peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0]), fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	dataDir := filepath.Join(dir, "restored")
	run(ctx, t, filepath.Join(assets, "etcdutl"), "snapshot", "restore", snapshot, "--data-dir="+dataDir,
		"--name=events-etcd-0", "--initial-cluster=events-etcd-0="+peerURL, "--initial-advertise-peer-urls="+peerURL)
	restored := &harness.Process{Name: "restored-etcd", Path: filepath.Join(assets, "etcd"), LogPath: filepath.Join(dir, "restored-etcd.log"), Args: []string{
		"--name=events-etcd-0", "--data-dir=" + dataDir,
		"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL, "--log-level=warn",
	}}
	if err := restored.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = restored.Kill() })
	again, err := harness.StartServer(ctx, binary, filepath.Join(dir, "server-again"), "--etcd-servers="+clientURL)
	if err != nil {
		t.Fatalf("the server on the restored etcd: %v; etcd: %s", err, restored.Tail())
	}
	t.Cleanup(func() { _ = again.Kill() })
	list, err := kubernetes.NewForConfigOrDie(again.RestConfig).CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range list.Items {
		got = append(got, e.Name)
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events after the restore (-want +got):\n%s", diff)
	}
}

// run runs a command of the procedure and fails the test with its output
// if it fails.
func run(ctx context.Context, t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(name), args, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	t.Logf("%s %s: %s", filepath.Base(name), strings.Join(args, " "), lines[len(lines)-1])
}
