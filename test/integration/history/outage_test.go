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
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// outage is how long TestArchiveOutage keeps the archive service down:
// short enough for CI by default; the hour the archive must survive can be
// tried with -history.outage=10m -timeout=30m.
var outage = flag.Duration("history.outage", 20*time.Second, "how long TestArchiveOutage keeps the archive service down")

// TestArchiveOutage kills the victoria-logs service under a server that
// archives a steady load, keeps it down for -history.outage while events
// expire from the live store and the server compacts its etcd, and starts
// it again on the same data. Meanwhile the server stays ready, history
// lists fail with a clear 503 instead of a short answer, and compaction
// stops at the archive's checkpoint; afterwards every acknowledged create
// is in the history exactly once, those that expired during the outage
// included.
func TestArchiveOutage(t *testing.T) {
	const ttl = 5 * time.Second
	if *outage < 3*ttl {
		t.Fatalf("-history.outage=%v: at least %v, so that events expire during the outage", *outage, 3*ttl)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute+*outage)
	t.Cleanup(cancel)
	vlArgs := []string{"-storageDataPath=" + t.TempDir(), "-retentionPeriod=30d", "-inmemoryDataFlushInterval=1s"}
	url, kill := runVictoriaLogs(t, vlArgs...)
	etcd := framework.StartEtcd(t)
	s := framework.StartServer(t, framework.WithEtcd(etcd), framework.WithEventTTL(ttl),
		framework.WithServerArgs("--archive=url", "--archive-url="+url, "--archive-service-flush-interval=1s",
			"--etcd-compaction-interval=2s"))
	namespace := namespaceFor(t)
	c := clientset(t, s.RestConfig, runtime.ContentTypeJSON)

	// Two writers, 10 creates/s each, for the whole test; the kill lands
	// among them once the archiver has checkpointed some of their events.
	l := startLoad(ctx, t, namespace, 2, 10, c)
	if err := waitPoll(ctx, time.Minute, func() bool { return l.count() >= 30 }); err != nil {
		t.Fatalf("load did not reach 30 creates: %v", err)
	}
	waitCheckpoint(ctx, t, etcd, l.newestRevision())

	kill()
	down := time.Now()
	atKill, _ := compaction(ctx, t, etcd)
	heldBefore := metric(ctx, t, c, "events_apiserver_etcd_maintenance_held_compactions_total")
	var checks, expired int
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		checks++
		if body, err := c.CoreV1().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil || string(body) != "ok" {
			return false, fmt.Errorf("/readyz with the archive down: %q, %v; want ok", body, err)
		}
		if err := historyUnavailable(ctx, c, namespace); err != nil {
			return false, err
		}
		// Compaction stops at the checkpoint, which stays where the
		// archive last confirmed it: etcd keeps every revision the
		// archiver has yet to archive.
		cp := checkpoint(ctx, t, etcd)
		if cp.Revision > atKill {
			return false, fmt.Errorf("checkpoint at %d with the archive down since revision %d", cp.Revision, atKill)
		}
		if _, err := etcd.Client.Get(ctx, "/registry/events/"+namespace, clientv3.WithPrefix(), clientv3.WithCountOnly(),
			clientv3.WithRev(cp.Revision+1)); err != nil {
			return false, fmt.Errorf("reading etcd at the revision after the checkpoint (%d): %w", cp.Revision+1, err)
		}
		if time.Since(down) < *outage {
			return false, nil
		}
		// Some of what was written during the outage is gone from the
		// live store, and compactions were held back.
		live, err := c.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		names := sets.New[string]()
		for _, e := range live.Items {
			names.Insert(e.Name)
		}
		expired = 0
		for _, name := range l.acknowledgedAfter(atKill) {
			if !names.Has(name) {
				expired++
			}
		}
		return expired > 0 && metric(ctx, t, c, "events_apiserver_etcd_maintenance_held_compactions_total") > heldBefore, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cp := checkpoint(ctx, t, etcd)
	current, compacted := compaction(ctx, t, etcd)
	t.Logf("archive down %v: %d creates acknowledged meanwhile, %d of them expired; etcd at %d compacted to %d, held at the checkpoint %d by %v compactions; /readyz ok and history 503 at each of %d checks",
		time.Since(down).Round(time.Second), len(l.acknowledgedAfter(atKill)), expired, current, compacted, cp.Revision,
		metric(ctx, t, c, "events_apiserver_etcd_maintenance_held_compactions_total")-heldBefore, checks)

	// Back on the same data: the archiver, which kept retrying, archives
	// from its checkpoint what was written meanwhile.
	startVictoriaLogs(t, append(vlArgs, "-httpListenAddr="+strings.TrimPrefix(url, "http://"))...)
	back := time.Now()
	waitCheckpoint(ctx, t, etcd, l.newestRevision())
	caughtUp := time.Since(back)
	acknowledged, failed := l.halt()
	t.Logf("archive back: checkpoint past every create acknowledged until then after %v; %d creates acknowledged, %d failed",
		caughtUp.Round(time.Millisecond), len(acknowledged), failed)
	waitExpired(ctx, t, c, namespace, 10*ttl)
	checkArchived(ctx, t, c, namespace, acknowledged, time.Minute)
}

// historyUnavailable checks that a history list of namespace fails with a
// 503 saying the history is unavailable.
func historyUnavailable(ctx context.Context, c kubernetes.Interface, namespace string) error {
	list, err := c.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "history.since=1h", Limit: 500})
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Code != http.StatusServiceUnavailable || !strings.Contains(status.Status().Message, "history is unavailable") {
		n := 0
		if list != nil {
			n = len(list.Items)
		}
		return fmt.Errorf("history list with the archive down: %d items, %v; want a 503 saying the history is unavailable", n, err)
	}
	return nil
}

// compaction is etcd's current revision and the one last compacted to
// (compact_rev_key's value, that the server's compaction and
// kube-apiserver's write; 0 before the first).
func compaction(ctx context.Context, t testing.TB, etcd *framework.Etcd) (current, compacted int64) {
	t.Helper()
	resp, err := etcd.Client.Get(ctx, "compact_rev_key")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 1 {
		if compacted, err = strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	return resp.Header.Revision, compacted
}
