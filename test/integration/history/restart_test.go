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
	"context"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-events/events-apiserver/pkg/archive/archiver"
	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestArchiverResumes stops the archiving server, lets another replica
// (without an archive) write events that expire while the archiver is
// down, and checks that the restarted archiver resumes from its
// checkpoint: those events, which no relist could find any more, are in
// the history, once each.
func TestArchiverResumes(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) { testArchiverResumes(t, engine) })
	}
}

func testArchiverResumes(t *testing.T, engine string) {
	const ttl = 3 * time.Second
	s, etcd := historyServer(t, engine, ttl)
	ctx := ctxFor(t)
	namespace := namespaceFor(t)
	c := clientset(t, s.RestConfig, runtime.ContentTypeProtobuf)
	last := create(ctx, t, c, namespace, fixtures[:3], 0)
	waitCheckpoint(ctx, t, etcd, last)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	before := checkpoint(ctx, t, etcd)

	// Another replica, without an archive and outside the election, writes
	// while the archiver is down; its events expire before it is back.
	other := framework.StartServer(t, framework.WithEtcd(etcd), framework.WithEventTTL(ttl),
		framework.WithServerArgs("--archive=none", "--leader-elect=false"))
	oc := clientset(t, other.RestConfig, runtime.ContentTypeJSON)
	create(ctx, t, oc, namespace, fixtures[3:6], 0)
	waitExpired(ctx, t, oc, namespace, 10*ttl)
	if err := other.Stop(); err != nil {
		t.Fatal(err)
	}
	if after := checkpoint(ctx, t, etcd); after.Revision != before.Revision {
		t.Fatalf("checkpoint moved from %d to %d while the archiver was down", before.Revision, after.Revision)
	}

	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	waitHistory(ctx, t, c, namespace, 6, 30*time.Second)
	list, err := c.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "history.since=1h"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range list.Items {
		seen[e.Name]++
	}
	for _, f := range fixtures[:6] {
		if seen[f.name] != 1 {
			t.Errorf("%s is %d times in the history, want once; history: %v", f.name, seen[f.name], seen)
		}
	}
	waitCheckpoint(ctx, t, etcd, before.Revision+1)
}

// checkpoint reads the archive's checkpoint from etcd.
func checkpoint(ctx context.Context, t testing.TB, etcd *framework.Etcd) archiver.Checkpoint {
	t.Helper()
	resp, err := etcd.Client.Get(ctx, "/registry"+archiver.CheckpointKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		return archiver.Checkpoint{}
	}
	var cp archiver.Checkpoint
	if err := json.Unmarshal(resp.Kvs[0].Value, &cp); err != nil {
		t.Fatal(err)
	}
	return cp
}

// waitCheckpoint waits until the checkpoint is at or past revision: every
// state written up to it is durably archived.
func waitCheckpoint(ctx context.Context, t testing.TB, etcd *framework.Etcd, revision int64) archiver.Checkpoint {
	t.Helper()
	var cp archiver.Checkpoint
	if err := waitPoll(ctx, 30*time.Second, func() bool {
		cp = checkpoint(ctx, t, etcd)
		return cp.Revision >= revision
	}); err != nil {
		t.Fatalf("archive checkpoint at %d, not past %d within 30s", cp.Revision, revision)
	}
	return cp
}

// TestArchiverRelistsAfterCompaction stops the archiving server, has
// another replica write events, compacts etcd past the archive's
// checkpoint (as a kube-apiserver sharing the etcd would), and checks
// that the restarted archiver archives every live event again.
func TestArchiverRelistsAfterCompaction(t *testing.T) {
	const ttl = time.Hour
	s, etcd := historyServer(t, "embedded", ttl)
	ctx := ctxFor(t)
	namespace := namespaceFor(t)
	c := clientset(t, s.RestConfig, runtime.ContentTypeJSON)
	waitCheckpoint(ctx, t, etcd, create(ctx, t, c, namespace, fixtures[:2], 0))
	relistsBefore := metric(ctx, t, c, "events_apiserver_archive_relists_total")
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}

	other := framework.StartServer(t, framework.WithEtcd(etcd), framework.WithEventTTL(ttl),
		framework.WithServerArgs("--archive=none", "--leader-elect=false"))
	oc := clientset(t, other.RestConfig, runtime.ContentTypeJSON)
	create(ctx, t, oc, namespace, fixtures[2:5], 0)
	if err := other.Stop(); err != nil {
		t.Fatal(err)
	}
	resp, err := etcd.Client.Get(ctx, "compact")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := etcd.Client.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}

	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	// The relist checkpoints the revision it listed at, past the compaction.
	waitCheckpoint(ctx, t, etcd, resp.Header.Revision)
	if got := metric(ctx, t, c, "events_apiserver_archive_relists_total"); got <= relistsBefore {
		t.Errorf("relists %v after the compaction, want more than %v", got, relistsBefore)
	}
	waitHistory(ctx, t, c, namespace, 5, 30*time.Second)
}

// metric reads a counter or gauge without labels from the server's /metrics.
func metric(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) float64 {
	t.Helper()
	m, err := harness.ScrapeMetrics(ctx, c.CoreV1().RESTClient())
	if err != nil {
		t.Fatal(err)
	}
	return m.Value(name, nil)
}
