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
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kube-events/events-apiserver/pkg/archive/archiver"
	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestPausedLeaderIsFenced runs two replicas, as processes of their own,
// on one etcd and one victoria-logs service, under a create load through
// both; the elected replica, which archives, is paused (SIGSTOP) past its
// lease, the other takes the election and archives on, and then the
// paused one resumes (SIGCONT) with its archiver's work in flight. Its
// writes are refused (events_apiserver_leader_fenced_writes_total; the
// pause is repeated, up to three times, until a resumed replica wrote
// before it saw its session gone), the
// checkpoint never moves backwards (every write of it, seen through an
// etcd watch from the start), and once every event has expired from the
// live store every acknowledged create is in the history exactly once.
func TestPausedLeaderIsFenced(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and pauses the server")
	}
	const (
		ttl       = 5 * time.Second
		lease     = 2 * time.Second
		maxPauses = 3
	)
	ctx := ctxFor(t)
	binary, err := harness.BuildServer(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	etcd := framework.StartEtcd(t)
	checkpoints := watchCheckpoints(ctx, t, etcd)
	url := startVictoriaLogs(t, "-storageDataPath="+t.TempDir(), "-retentionPeriod=30d", "-inmemoryDataFlushInterval=1s")
	names, replicas, clients := startReplicas(ctx, t, binary, etcd.Endpoints, url, ttl, lease)
	namespace := namespaceFor(t)
	l := startLoad(ctx, t, namespace, 4, 10, clients...)
	if err := waitPoll(ctx, time.Minute, func() bool { return l.count() >= 50 }); err != nil {
		t.Fatalf("load did not reach 50 creates: %v", err)
	}

	// Whether the resumed replica's first write comes before it sees its
	// session gone is a race (both take a round trip to etcd): the pause
	// is repeated, on whichever replica leads, until a write was refused.
	var (
		refused float64
		pauses  []string
	)
	for attempt := 1; attempt <= maxPauses && refused == 0; attempt++ {
		lead, err := harness.Leader(ctx, 30*time.Second, replicas...)
		if err != nil {
			t.Fatal(err)
		}
		other := 1 - lead
		refusedBefore, err := fencedWrites(ctx, replicas[lead])
		if err != nil {
			t.Fatal(err)
		}

		// The pause lands while the leader's archiver has appended what it
		// has not checkpointed yet: under a steady load, its Syncs always
		// trail.
		waitCheckpoint(ctx, t, etcd, l.newestRevision())
		l.use(clients[other])
		if err := replicas[lead].Pause(); err != nil {
			t.Fatal(err)
		}
		paused := time.Now()
		newestAtPause := l.newestRevision()

		// The other replica takes the election once the paused leader's
		// lease expires, and archives past every create acknowledged
		// before the pause, and past those after it.
		only := make([]*harness.Server, len(replicas))
		only[other] = replicas[other]
		if _, err := harness.Leader(ctx, 30*time.Second, only...); err != nil {
			t.Fatalf("replica %s did not take the election: %v", names[other], err)
		}
		elected := time.Since(paused)
		atElection := l.count()
		if err := waitPoll(ctx, time.Minute, func() bool { return l.count() >= atElection+50 }); err != nil {
			t.Fatalf("load through replica %s did not reach 50 more creates: %v", names[other], err)
		}
		waitCheckpoint(ctx, t, etcd, l.newestRevision())

		// The paused replica resumes, past its lease, with its archiver's
		// appends unconfirmed: what it writes is refused, and it follows.
		if err := replicas[lead].Resume(); err != nil {
			t.Fatal(err)
		}
		resumed := time.Now()
		// Its gauge falls once its elected loops have stopped, after their
		// last writes.
		if err := waitPoll(ctx, time.Minute, func() bool {
			m, err := replicas[lead].Metrics(ctx)
			return err == nil && !harness.Leads(m)
		}); err != nil {
			t.Fatalf("replica %s, resumed past its lease, still leads: %v", names[lead], err)
		}
		refusedAfter, err := fencedWrites(ctx, replicas[lead])
		if err != nil {
			t.Fatal(err)
		}
		refused = refusedAfter - refusedBefore
		pauses = append(pauses, fmt.Sprintf("replica %s paused (lease %v) at revision %d, replica %s elected after %v, replica %s resumed %v after the pause: %v of its writes refused",
			names[lead], lease, newestAtPause, names[other], elected.Round(time.Millisecond), names[lead], resumed.Sub(paused).Round(time.Millisecond), refused))
		l.use(clients...)
	}
	if refused == 0 {
		t.Errorf("in %d pauses past the lease, no write of the resumed replica was refused (events_apiserver_leader_fenced_writes_total): %s", len(pauses), strings.Join(pauses, "; "))
	}
	atResume := l.count()
	if _, err := harness.Leader(ctx, 30*time.Second, replicas...); err != nil {
		t.Fatalf("after the resume: %v", err)
	}
	if err := waitPoll(ctx, time.Minute, func() bool { return l.count() >= atResume+50 }); err != nil {
		t.Fatalf("load did not reach 50 more creates after the resume: %v", err)
	}
	waitCheckpoint(ctx, t, etcd, l.newestRevision())
	acknowledged, failed := l.halt()

	c := clients[0]
	waitExpired(ctx, t, c, namespace, 10*ttl)
	checkArchived(ctx, t, c, namespace, acknowledged, time.Minute)

	writes, backwards := checkpoints.result()
	t.Logf("%s; %d creates acknowledged, %d failed; checkpoint written %d times, moved backwards %d times",
		strings.Join(pauses, "; "), len(acknowledged), failed, writes, len(backwards))
	if len(backwards) > 0 {
		t.Errorf("the archive checkpoint moved backwards: %s", strings.Join(backwards, "; "))
	}
}

// checkpointWatch sees every write of the archive checkpoint.
type checkpointWatch struct {
	mu        sync.Mutex
	last      int64
	writes    int
	backwards []string
	err       error
	done      chan struct{}
}

// watchCheckpoints follows the archive checkpoint in etcd from now until
// ctx ends, through a watch, which sees every write (a poll could miss one
// overwritten in between).
func watchCheckpoints(ctx context.Context, t *testing.T, etcd *framework.Etcd) *checkpointWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	w := &checkpointWatch{done: make(chan struct{})}
	watch := etcd.Client.Watch(ctx, "/registry"+archiver.CheckpointKey)
	go func() {
		defer close(w.done)
		for resp := range watch {
			if err := resp.Err(); err != nil {
				w.fail(err)
				return
			}
			for _, e := range resp.Events {
				if e.Type != clientv3.EventTypePut {
					w.fail(fmt.Errorf("the checkpoint was deleted at revision %d", e.Kv.ModRevision))
					continue
				}
				var cp archiver.Checkpoint
				if err := json.Unmarshal(e.Kv.Value, &cp); err != nil {
					w.fail(err)
					continue
				}
				w.mu.Lock()
				w.writes++
				if cp.Revision < w.last {
					w.backwards = append(w.backwards, fmt.Sprintf("from %d to %d (written at revision %d)", w.last, cp.Revision, e.Kv.ModRevision))
				}
				w.last = max(w.last, cp.Revision)
				w.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-w.done
	})
	return w
}

func (w *checkpointWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// result is how often the checkpoint was written and each move backwards,
// or a failure to watch it, as a move.
func (w *checkpointWatch) result() (int, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	backwards := append([]string(nil), w.backwards...)
	if w.err != nil {
		backwards = append(backwards, "not watched: "+w.err.Error())
	}
	return w.writes, backwards
}

// fencedWrites is how many writes of the controllers' election the
// replica's fencing refused.
func fencedWrites(ctx context.Context, replica *harness.Server) (float64, error) {
	m, err := replica.Metrics(ctx)
	if err != nil {
		return 0, err
	}
	return m.Value("events_apiserver_leader_fenced_writes_total", map[string]string{"election": "controllers"}), nil
}
