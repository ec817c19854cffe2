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
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// Settings of TestNoSpace: a small etcd quota, filled by events carrying
// noSpacePadding bytes of annotations (archived hex-encoded, each well
// within a service's -insert.maxLineSizeBytes of 256 KiB).
const (
	noSpaceQuota   = 8 << 20
	noSpacePadding = 100 << 10
)

// TestNoSpace runs etcd out of space while the archive service is down
// and the server is under a create load, and checks that NOSPACE recovery
// keeps the archive's checkpoint: etcd still serves every revision after
// it, and once the service is back every acknowledged create is in the
// history exactly once, those that expired while etcd was full included.
//
// Events that expired before the checkpoint (archived) fill half the
// quota; events written with the archive down fill the rest. Compacting
// to the checkpoint frees the first half, which is enough to disarm the
// alarm, so the server must not compact further: the creates acknowledged
// between the checkpoint and the alarm exist nowhere else than in those
// revisions once they expire.
func TestNoSpace(t *testing.T) {
	const ttl = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	vlArgs := []string{"-storageDataPath=" + t.TempDir(), "-retentionPeriod=30d", "-inmemoryDataFlushInterval=1s"}
	url, kill := runVictoriaLogs(t, vlArgs...)
	etcd := harness.StartTestEtcd(t, fmt.Sprintf("--quota-backend-bytes=%d", noSpaceQuota))
	s := framework.StartServer(t, framework.WithEtcd(etcd), framework.WithEventTTL(ttl),
		framework.WithServerArgs("--archive=url", "--archive-url="+url, "--archive-service-flush-interval=1s",
			"--etcd-maintenance-interval=1s"))
	namespace := namespaceFor(t)
	c := clientset(t, s.RestConfig, runtime.ContentTypeJSON)
	lostBefore := metric(ctx, t, c, "events_apiserver_etcd_maintenance_history_lost_revisions_total")
	disarmedBefore := metric(ctx, t, c, "events_apiserver_etcd_maintenance_nospace_alarms_disarmed_total")

	l := startLoad(ctx, t, namespace, 2, 10, c)
	if err := waitPoll(ctx, time.Minute, func() bool { return l.count() >= 20 }); err != nil {
		t.Fatalf("load did not reach 20 creates: %v", err)
	}

	// Half the quota, archived and expired: garbage older than the
	// checkpoint, which a compaction to the checkpoint frees.
	archived := fill(ctx, t, c, namespace+"-archived", func(error) bool {
		size, err := dbSize(ctx, etcd)
		return err == nil && size >= noSpaceQuota/2
	})
	waitExpired(ctx, t, c, namespace+"-archived", 10*ttl)
	waitCheckpoint(ctx, t, etcd, currentRevision(ctx, t, etcd))

	kill()
	atKill := checkpoint(ctx, t, etcd).Revision
	unarchived := fill(ctx, t, c, namespace+"-unarchived", func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "database space exceeded")
	})
	full := time.Now()

	// The server's maintenance compacts, defragments and disarms the
	// alarm; the creates acknowledged since the kill then expire, archived
	// nowhere, with only etcd's revisions after the checkpoint to hold
	// them until the archive is back.
	if err := waitPoll(ctx, time.Minute, func() bool {
		alarmed, err := noSpace(ctx, etcd)
		return err == nil && !alarmed
	}); err != nil {
		t.Fatalf("the NOSPACE alarm was not disarmed within a minute: %v", err)
	}
	recovered := time.Since(full)
	unarchivedCreates := l.acknowledgedAfter(atKill)
	if len(unarchivedCreates) == 0 {
		t.Fatalf("no create acknowledged between the archive's kill and the alarm's disarm: nothing to lose")
	}
	if err := waitPoll(ctx, 10*ttl, func() bool { return len(live(ctx, t, c, namespace).Intersection(sets.New(unarchivedCreates...))) == 0 }); err != nil {
		t.Fatalf("the %d creates acknowledged with the archive down did not expire: %v", len(unarchivedCreates), err)
	}
	cp := checkpoint(ctx, t, etcd)
	current := currentRevision(ctx, t, etcd)
	if _, err := etcd.Client.Get(ctx, "/registry/events/"+namespace, clientv3.WithPrefix(), clientv3.WithCountOnly(),
		clientv3.WithRev(cp.Revision+1)); err != nil {
		t.Errorf("reading etcd at the revision after the checkpoint (%d) after NOSPACE: %v", cp.Revision+1, err)
	}
	lost := metric(ctx, t, c, "events_apiserver_etcd_maintenance_history_lost_revisions_total") - lostBefore
	if lost != 0 {
		t.Errorf("history_lost_revisions_total went up by %v, want 0: compacting to the checkpoint was enough", lost)
	}
	t.Logf("NOSPACE after %d events of %d KiB archived and expired and %d more with the archive down; "+
		"disarmed %v later (%v disarms); %d steady creates acknowledged with the archive down, all expired; "+
		"etcd at %d serves from the checkpoint %d on; %v revisions counted lost",
		archived, noSpacePadding>>10, unarchived, recovered.Round(100*time.Millisecond),
		metric(ctx, t, c, "events_apiserver_etcd_maintenance_nospace_alarms_disarmed_total")-disarmedBefore,
		len(unarchivedCreates), current, cp.Revision, lost)

	// Back on the same data: the archiver resumes from its checkpoint.
	// Once every event has expired, the history answers from the archive
	// alone.
	startVictoriaLogs(t, append(vlArgs, "-httpListenAddr="+strings.TrimPrefix(url, "http://"))...)
	acknowledged, failed := l.halt()
	t.Logf("archive back: %d creates acknowledged in all, %d failed (refused under NOSPACE, or timed out)", len(acknowledged), failed)
	waitExpired(ctx, t, c, namespace, 10*ttl)
	checkArchived(ctx, t, c, namespace, acknowledged, time.Minute)
	if !t.Failed() {
		t.Logf("the history holds each of the %d acknowledged creates once", len(acknowledged))
	}
}

// fill creates events carrying noSpacePadding bytes of annotations in
// namespace, four at a time, until done returns true after a create (given
// its error, nil if acknowledged), and returns how many the server
// acknowledged. A create refused is not retried: client-go would wait for
// the server's Retry-After.
func fill(ctx context.Context, t *testing.T, c kubernetes.Interface, namespace string, done func(error) bool) int {
	t.Helper()
	padding := strings.Repeat("p", noSpacePadding)
	var next, acknowledged atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil && !stop.Load() {
				name := fmt.Sprintf("fill-%04d", next.Add(1))
				e := &eventsv1.Event{
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
						Annotations: map[string]string{"fill.example.com/padding": padding}},
					EventTime: metav1.NowMicro(), Reason: "Fill", Type: "Normal", Action: "Filling",
					ReportingController: "fill", ReportingInstance: "fill-0",
					Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: "pod-" + name, APIVersion: "v1"},
				}
				reqCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
				err := c.EventsV1().RESTClient().Post().Namespace(namespace).Resource("events").
					Body(e).MaxRetries(0).Do(reqCtx).Error()
				cancel()
				if err == nil {
					acknowledged.Add(1)
				}
				if done(err) {
					stop.Store(true)
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("filling %s: %v", namespace, ctx.Err())
	}
	return int(acknowledged.Load())
}

// dbSize is the size of etcd's database file.
func dbSize(ctx context.Context, etcd *harness.Etcd) (int64, error) {
	status, err := etcd.Client.Status(ctx, etcd.Endpoints[0])
	if err != nil {
		return 0, err
	}
	return status.DbSize, nil
}

// noSpace tells whether etcd has raised its NOSPACE alarm.
func noSpace(ctx context.Context, etcd *harness.Etcd) (bool, error) {
	alarms, err := etcd.Client.AlarmList(ctx)
	if err != nil {
		return false, err
	}
	for _, a := range alarms.Alarms {
		if a.Alarm == etcdserverpb.AlarmType_NOSPACE {
			return true, nil
		}
	}
	return false, nil
}

// currentRevision is etcd's revision.
func currentRevision(ctx context.Context, t *testing.T, etcd *harness.Etcd) int64 {
	t.Helper()
	current, _ := compaction(ctx, t, etcd)
	return current
}

// live is the names of namespace's live events.
func live(ctx context.Context, t *testing.T, c kubernetes.Interface, namespace string) sets.Set[string] {
	t.Helper()
	list, err := c.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := sets.New[string]()
	for _, e := range list.Items {
		names.Insert(e.Name)
	}
	return names
}
