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
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestStorageNodeDown runs the server on a VictoriaLogs cluster (two
// storage nodes, a vlinsert and a vlselect) under a steady load, kills
// (SIGKILL) the storage node that holds the test namespace's events, and
// starts it again on the same data. While it is down, history lists fail
// with a clear 503, never a short page; vlinsert sends the appends to the
// other node, and the checkpoint stays (its Sync cannot see every node),
// holding compaction back. Once the node is back, every acknowledged create
// is in the history exactly once.
func TestStorageNodeDown(t *testing.T) {
	const (
		ttl = 5 * time.Second
		// down is how long the node stays down: longer than the TTL, so
		// that events written meanwhile expire before it is back.
		down = 2 * ttl
	)
	ctx := ctxFor(t)
	type node struct {
		args []string
		url  string
		kill func()
	}
	var nodes []node
	var addrs []string
	for range 2 {
		args := []string{"-storageDataPath=" + t.TempDir(), "-retentionPeriod=30d", "-inmemoryDataFlushInterval=1s"}
		url, kill := runVictoriaLogs(t, args...)
		nodes = append(nodes, node{args: args, url: url, kill: kill})
		addrs = append(addrs, strings.TrimPrefix(url, "http://"))
	}
	storage := "-storageNode=" + strings.Join(addrs, ",")
	insert := startVictoriaLogs(t, storage, "-select.disable")
	sel := startVictoriaLogs(t, storage, "-insert.disable")
	etcd := framework.StartEtcd(t)
	s := framework.StartServer(t, framework.WithEtcd(etcd), framework.WithEventTTL(ttl),
		framework.WithServerArgs("--archive=url", "--archive-url="+insert, "--archive-select-url="+sel,
			"--archive-service-flush-interval=1s"))
	namespace := namespaceFor(t)
	c := clientset(t, s.RestConfig, runtime.ContentTypeProtobuf)

	l := startLoad(ctx, t, namespace, 2, 10, c)
	if err := waitPoll(ctx, time.Minute, func() bool { return l.count() >= 30 }); err != nil {
		t.Fatalf("load did not reach 30 creates: %v", err)
	}
	waitCheckpoint(ctx, t, etcd, l.newestRevision())
	// vlinsert sends a namespace's first rows (its stream's) to one node:
	// kill that one, with the states it took and has not flushed yet.
	victim := -1
	for i, n := range nodes {
		if rows(ctx, t, n.url, namespace, 0) > 0 {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatalf("no storage node holds the events of %s", namespace)
	}
	other := nodes[1-victim]
	nodes[victim].kill()
	killed := time.Now()
	atKill, _ := compaction(ctx, t, etcd)

	var checks int
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		checks++
		if err := historyUnavailable(ctx, c, namespace); err != nil {
			return false, err
		}
		if cp := checkpoint(ctx, t, etcd); cp.Revision > atKill {
			return false, fmt.Errorf("checkpoint at %d with a storage node down since revision %d", cp.Revision, atKill)
		}
		// The appends go on: vlinsert sends them to the other node.
		return time.Since(killed) >= down && rows(ctx, t, other.url, namespace, atKill) > 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("storage node down %v: %d creates acknowledged meanwhile, %d states of them on the other node; history 503 at each of %d checks",
		time.Since(killed).Round(time.Second), len(l.acknowledgedAfter(atKill)), rows(ctx, t, other.url, namespace, atKill), checks)

	startVictoriaLogs(t, append(nodes[victim].args, "-httpListenAddr="+addrs[victim])...)
	back := time.Now()
	waitCheckpoint(ctx, t, etcd, l.newestRevision())
	caughtUp := time.Since(back)
	acknowledged, failed := l.halt()
	t.Logf("storage node back: checkpoint past every create acknowledged until then after %v; %d creates acknowledged, %d failed",
		caughtUp.Round(time.Millisecond), len(acknowledged), failed)
	waitExpired(ctx, t, c, namespace, 10*ttl)
	checkArchived(ctx, t, c, namespace, acknowledged, time.Minute)
}

// rows counts the states of namespace's events after resourceVersion
// after that one storage node (a victoria-logs) holds, asking it directly
// in the server's tenant (0:0).
func rows(ctx context.Context, t *testing.T, node, namespace string, after int64) int {
	t.Helper()
	query := fmt.Sprintf("{ns=%s} rv:>%d | stats count() as n", strconv.Quote(namespace), after)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, node+"/select/logsql/query",
		strings.NewReader(url.Values{"query": {query}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("querying %s: %s", node, resp.Status)
	}
	var row map[string]string
	scanner := bufio.NewScanner(resp.Body)
	if !scanner.Scan() {
		t.Fatalf("querying %s: no answer: %v", node, scanner.Err())
	}
	if err := json.Unmarshal(scanner.Bytes(), &row); err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(row["n"])
	if err != nil {
		t.Fatal(err)
	}
	return n
}
