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
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-events/events-apiserver/pkg/archive/archiver"
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
	create(ctx, t, c, namespace, fixtures[:3], 0)
	waitHistory(ctx, t, c, namespace, 3, 30*time.Second)

	checkpoint := func() archiver.Checkpoint {
		t.Helper()
		resp, err := etcd.Client.Get(ctx, "/registry"+archiver.CheckpointKey)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 {
			t.Fatalf("no archive checkpoint in etcd")
		}
		var cp archiver.Checkpoint
		if err := json.Unmarshal(resp.Kvs[0].Value, &cp); err != nil {
			t.Fatal(err)
		}
		return cp
	}
	var before archiver.Checkpoint
	if err := waitPoll(ctx, 30*time.Second, func() bool {
		before = checkpoint()
		return before.Revision > 0
	}); err != nil {
		t.Fatalf("checkpoint %+v never moved", before)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}

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
	if after := checkpoint(); after.Revision != before.Revision {
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
	if err := waitPoll(ctx, 30*time.Second, func() bool { return checkpoint().Revision > before.Revision }); err != nil {
		t.Errorf("checkpoint did not move past %d after the restart", before.Revision)
	}
}
