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

package history

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestKilledWhileArchiving runs the server as a process of its own, kills
// it (SIGKILL) while clients create events and the archiver appends them,
// starts it again on the same data, and checks, once every event has
// expired from the live store, that every acknowledged create is in the
// history exactly once.
func TestKilledWhileArchiving(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the server")
	}
	const ttl = 10 * time.Second
	ctx := ctxFor(t)
	binary, err := harness.BuildServer(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	etcd := framework.StartEtcd(t)
	dataDir := t.TempDir()
	args := []string{"--etcd-servers=" + strings.Join(etcd.Endpoints, ","), "--archive=embedded",
		"--event-ttl=" + ttl.String(), "--embedded-etcd-log-level=error"}
	p, err := harness.StartServer(ctx, binary, dataDir, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })
	namespace := namespaceFor(t)
	c := clientset(t, p.RestConfig, runtime.ContentTypeProtobuf)

	// Writers create events as fast as the server answers; the kill
	// lands among them once the archiver has checkpointed some of them:
	// the states after the checkpoint are appended and not yet durable, or
	// not yet appended.
	l := startLoad(ctx, t, namespace, 4, 0, c)
	if err := waitPoll(ctx, time.Minute, func() bool { return l.count() >= 300 }); err != nil {
		t.Fatalf("load did not reach 300 creates: %v", err)
	}
	first := checkpoint(ctx, t, etcd).Revision
	if err := waitPoll(ctx, time.Minute, func() bool { return checkpoint(ctx, t, etcd).Revision > first && l.count() >= 600 }); err != nil {
		t.Fatalf("the checkpoint did not move under load: %v", err)
	}
	if m, err := p.Metrics(ctx); err == nil {
		t.Logf("archiver under load: %v states appended; lag %vs, %v revisions",
			m.Value("events_apiserver_archive_appended_records_total", nil),
			m.Value("events_apiserver_archive_lag_seconds", nil), m.Value("events_apiserver_archive_lag_revisions", nil))
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	acknowledged, failed := l.halt()
	t.Logf("%d creates acknowledged before the kill, %d failed", len(acknowledged), failed)

	// The killed server left its kubeconfig behind; the new one writes its own.
	if err := os.Remove(filepath.Join(dataDir, "kubeconfig")); err != nil {
		t.Fatal(err)
	}
	p, err = harness.StartServer(ctx, binary, dataDir, args...)
	if err != nil {
		t.Fatal(err)
	}
	c = clientset(t, p.RestConfig, runtime.ContentTypeProtobuf)
	waitExpired(ctx, t, c, namespace, 10*ttl)

	checkArchived(ctx, t, c, namespace, acknowledged, time.Minute)
}

func head(s []string) []string { return s[:min(len(s), 10)] }
