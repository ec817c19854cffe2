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
	"testing"
	"time"

	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestArchiverFailsOver runs two replicas, as processes of their own, on
// one etcd and one victoria-logs service; clients create events through
// both; the elected replica, which archives, is killed (SIGKILL) under
// that load and the clients go on through the other. Once every event
// has expired from the live store, every acknowledged create is in the
// history exactly once: the other replica took the election and archived
// from the checkpoint the killed one left. It logs how long that took.
func TestArchiverFailsOver(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the server")
	}
	const (
		ttl = 5 * time.Second
		// lease is how long the killed leader keeps the election.
		lease = 2 * time.Second
	)
	ctx := ctxFor(t)
	binary, err := harness.BuildServer(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	etcd := framework.StartEtcd(t)
	url := startVictoriaLogs(t, "-storageDataPath="+t.TempDir(), "-retentionPeriod=30d", "-inmemoryDataFlushInterval=1s")
	names, replicas, clients := startReplicas(ctx, t, binary, etcd.Endpoints, url, ttl, lease)
	lead, err := harness.Leader(ctx, 30*time.Second, replicas...)
	if err != nil {
		t.Fatal(err)
	}
	survivor := 1 - lead
	namespace := namespaceFor(t)

	// Two writers a replica, 10 creates/s each; the kill lands among them
	// once the archiver has checkpointed some of their events, and not
	// the others.
	l := startLoad(ctx, t, namespace, 4, 10, clients...)
	if err := waitPoll(ctx, time.Minute, func() bool { return l.count() >= 50 }); err != nil {
		t.Fatalf("load did not reach 50 creates: %v", err)
	}
	waitCheckpoint(ctx, t, etcd, l.newestRevision())

	killed := time.Now()
	if err := replicas[lead].Kill(); err != nil {
		t.Fatal(err)
	}
	l.use(clients[survivor])
	atKill, newestAtKill := l.count(), l.newestRevision()
	t.Logf("replica %s, the leader, killed after %d creates; checkpoint at %d, newest create at %d",
		names[lead], atKill, checkpoint(ctx, t, etcd).Revision, newestAtKill)

	// The survivor takes the election once the killed leader's lease
	// expires, and archives from the checkpoint it left, past every
	// create acknowledged before the kill.
	only := make([]*harness.Server, len(replicas))
	only[survivor] = replicas[survivor]
	if _, err := harness.Leader(ctx, 30*time.Second, only...); err != nil {
		t.Fatalf("replica %s did not take the election: %v", names[survivor], err)
	}
	elected := time.Since(killed)
	waitCheckpoint(ctx, t, etcd, newestAtKill)
	caughtUp := time.Since(killed)
	if err := waitPoll(ctx, time.Minute, func() bool { return l.count() >= atKill+100 }); err != nil {
		t.Fatalf("load through replica %s did not reach 100 more creates: %v", names[survivor], err)
	}
	acknowledged, failed := l.halt()
	t.Logf("failover (lease %v): replica %s elected %v after the kill, its checkpoint past every create acknowledged before the kill after %v; %d creates acknowledged, %d failed",
		lease, names[survivor], elected.Round(time.Millisecond), caughtUp.Round(time.Millisecond), len(acknowledged), failed)

	c := clients[survivor]
	waitExpired(ctx, t, c, namespace, 10*ttl)
	checkArchived(ctx, t, c, namespace, acknowledged, time.Minute)
}
