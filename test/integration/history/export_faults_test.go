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
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/namespace"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-events/events-apiserver/pkg/archive/export"
	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// exportOutage is how long TestExportReceiverOutage keeps the receiver away:
// short in CI, 10 minutes by hand (make test-export-faults).
var exportOutage = flag.Duration("export.outage", 10*time.Second, "how long the receiver is down in TestExportReceiverOutage")

// exportBatch is the fault tests' batch size: the bound on what one fault
// may send again.
const exportBatch = 50

// readCursor is the export's cursor kept in etcd (under the servers'
// storage prefix, /registry), 0 if none.
func readCursor(ctx context.Context, etcd *framework.Etcd) int64 {
	c, _, err := export.ReadCursor(ctx, namespace.NewKV(etcd.Client.KV, "/registry"))
	if err != nil {
		return 0
	}
	return c.Revision
}

// tally counts what the receiver got of namespace's acknowledged creates:
// the records, the distinct states among them, the duplicates (records
// beyond one per state) and the creates never received.
type tally struct {
	records, states, duplicates, missing int
}

// tallyReceived tallies records against acknowledged (name →
// resourceVersion).
func tallyReceived(records []harness.Record, namespace string, acknowledged map[string]int64) tally {
	received := map[string]int{}
	var n tally
	for _, r := range records {
		if r[export.AttrNamespace] != namespace {
			continue
		}
		n.records++
		received[r[export.AttrEventName]+"/"+r[export.AttrEventRV]]++
	}
	n.states = len(received)
	n.duplicates = n.records - n.states
	for name, rv := range acknowledged {
		if received[name+"/"+strconv.FormatInt(rv, 10)] == 0 {
			n.missing++
		}
	}
	return n
}

// waitReceived waits until the collector received every acknowledged
// create, and returns the tally.
func waitReceived(ctx context.Context, t *testing.T, collector *harness.Collector, namespace string, acknowledged map[string]int64) tally {
	t.Helper()
	var n tally
	if err := waitPoll(ctx, 2*time.Minute, func() bool {
		records, err := collector.Records()
		if err != nil {
			return false
		}
		n = tallyReceived(records, namespace, acknowledged)
		return n.missing == 0
	}); err != nil {
		t.Errorf("%d of %d acknowledged creates never received: %v", n.missing, len(acknowledged), err)
	}
	return n
}

// TestExportLeaderChange: two replicas export to the Collector; the leader
// is paused while it sends, the other takes the election and goes on from
// the cursor, and the paused one resumes past its lease, fenced. Every
// acknowledged create is received at least once, duplicates at most one
// batch.
func TestExportLeaderChange(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and pauses the server")
	}
	const lease = 2 * time.Second
	ctx := ctxFor(t)
	binary, err := harness.BuildServer(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	collector := startCollector(t)
	etcd := framework.StartEtcd(t)
	vl := startVictoriaLogs(t, "-storageDataPath="+t.TempDir(), "-retentionPeriod=30d", "-inmemoryDataFlushInterval=1s")
	names, replicas, clients := startReplicas(ctx, t, binary, etcd.Endpoints, vl, time.Hour, lease,
		"--export-otlp-endpoint="+collector.HTTPEndpoint+"/v1/logs", "--export-batch-size="+strconv.Itoa(exportBatch))
	namespace := namespaceFor(t)
	l := startLoad(ctx, t, namespace, 2, 50, clients...)

	lead, err := harness.Leader(ctx, 30*time.Second, replicas...)
	if err != nil {
		t.Fatal(err)
	}
	other := 1 - lead
	if err := waitPoll(ctx, time.Minute, func() bool { return readCursor(ctx, etcd) > 0 && l.count() >= 200 }); err != nil {
		t.Fatalf("nothing exported: %v", err)
	}
	l.use(clients[other])
	atPause := readCursor(ctx, etcd)
	if err := replicas[lead].Pause(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	only := make([]*harness.Server, len(replicas))
	only[other] = replicas[other]
	if _, err := harness.Leader(ctx, 30*time.Second, only...); err != nil {
		t.Fatalf("replica %s did not take the election: %v", names[other], err)
	}
	elected := time.Since(paused)
	if err := waitPoll(ctx, time.Minute, func() bool { return readCursor(ctx, etcd) > atPause+exportBatch }); err != nil {
		t.Fatalf("replica %s did not move the cursor: %v", names[other], err)
	}
	if err := replicas[lead].Resume(); err != nil {
		t.Fatal(err)
	}
	if err := waitPoll(ctx, time.Minute, func() bool {
		m, err := replicas[lead].Metrics(ctx)
		return err == nil && !harness.Leads(m)
	}); err != nil {
		t.Fatalf("replica %s, resumed past its lease, still leads: %v", names[lead], err)
	}
	l.use(clients...)
	if err := waitPoll(ctx, time.Minute, func() bool { return l.count() >= 600 }); err != nil {
		t.Fatalf("load did not reach 600 creates: %v", err)
	}
	acknowledged, failed := l.halt()
	n := waitReceived(ctx, t, collector, namespace, acknowledged)
	t.Logf("leader %s paused with the cursor at %d, %s elected after %v; %d creates acknowledged (%d failed); %d records received, %d states, %d duplicates, %d missing",
		names[lead], atPause, names[other], elected.Round(time.Millisecond), len(acknowledged), failed, n.records, n.states, n.duplicates, n.missing)
	if n.duplicates > exportBatch {
		t.Errorf("%d duplicates, more than one batch (%d)", n.duplicates, exportBatch)
	}
}

// TestExportReceiverOutage: the Collector unreachable for -export.outage
// under a paced create load, etcd compacted past every revision at its
// end, then the Collector back. The export reads the archive, not etcd:
// every acknowledged create is received at least once, duplicates at most
// one batch (the one in flight when the link was cut).
func TestExportReceiverOutage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), *exportOutage+5*time.Minute)
	defer cancel()
	collector := startCollector(t)
	link, err := framework.StartLink(strings.TrimPrefix(collector.HTTPEndpoint, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = link.Close() })
	s, etcd := historyServer(t, "embedded", time.Hour, "--export-otlp-endpoint=http://"+link.Addr()+"/v1/logs",
		"--export-batch-size="+strconv.Itoa(exportBatch), "--export-otlp-timeout=2s")
	namespace := namespaceFor(t)
	c := clientset(t, s.RestConfig, runtime.ContentTypeProtobuf)
	l := startLoad(ctx, t, namespace, 2, 25, c)
	if err := waitPoll(ctx, time.Minute, func() bool { return readCursor(ctx, etcd) > 0 }); err != nil {
		t.Fatalf("nothing exported: %v", err)
	}

	link.Cut()
	cut, atCut := time.Now(), l.count()
	<-time.After(*exportOutage)
	during := l.count() - atCut
	resp, err := etcd.Client.Get(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	head := resp.Header.Revision
	if _, err := etcd.Client.Compact(ctx, head); err != nil {
		t.Fatalf("compacting etcd at %d: %v", head, err)
	}
	stalled := readCursor(ctx, etcd)
	link.Restore()
	down := time.Since(cut)
	acknowledged, failed := l.halt()
	n := waitReceived(ctx, t, collector, namespace, acknowledged)
	t.Logf("receiver down %v with %d creates (%.0f/s), etcd compacted at %d with the cursor at %d; %d creates acknowledged (%d failed); %d records received, %d states, %d duplicates, %d missing",
		down.Round(time.Second), during, float64(during)/down.Seconds(), head, stalled, len(acknowledged), failed, n.records, n.states, n.duplicates, n.missing)
	if n.duplicates > exportBatch {
		t.Errorf("%d duplicates, more than one batch (%d)", n.duplicates, exportBatch)
	}
}
