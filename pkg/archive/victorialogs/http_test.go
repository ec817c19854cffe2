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

package victorialogs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/archive/archivetest"
	"github.com/kube-events/events-apiserver/test/freeport"
	"github.com/kube-events/events-apiserver/test/harness"
)

// The service tests run the victoria-logs binary hack/victorialogs-assets.sh
// builds; VICTORIALOGS_ASSETS names its directory.
func victoriaLogsBinary(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("VICTORIALOGS_ASSETS")
	if dir == "" {
		t.Fatal("VICTORIALOGS_ASSETS is not set: export VICTORIALOGS_ASSETS=$(hack/victorialogs-assets.sh), or run make test-unit")
	}
	bin := filepath.Join(dir, "victoria-logs")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("VICTORIALOGS_ASSETS: %v", err)
	}
	return bin
}

// serviceRetention and serviceFlush are the services' -retentionPeriod and
// -inmemoryDataFlushInterval.
const (
	serviceRetention = 48 * time.Hour
	serviceFlush     = time.Second
)

// vlNode is one victoria-logs process.
type vlNode struct {
	bin, addr, log string
	args           []string
	cmd            *exec.Cmd
	// roots verify the node's certificate when it serves https.
	roots *x509.CertPool
}

// startNode starts victoria-logs with args on a free port and waits until
// it is healthy; the test stops it.
func startNode(t *testing.T, bin string, args ...string) *vlNode {
	t.Helper()
	return startNodeWithRoots(t, bin, nil, args...)
}

// startNodeWithRoots starts victoria-logs as startNode does; with roots,
// it serves https (args hold -tls and its files) with a certificate roots
// verify.
func startNodeWithRoots(t *testing.T, bin string, roots *x509.CertPool, args ...string) *vlNode {
	t.Helper()
	n := &vlNode{
		bin:   bin,
		addr:  fmt.Sprintf("127.0.0.1:%d", freeport.Port(t)),
		log:   filepath.Join(t.TempDir(), "victoria-logs.log"),
		roots: roots,
	}
	n.args = append([]string{"-httpListenAddr=" + n.addr, "-loggerLevel=WARN"}, args...)
	n.start(t)
	t.Cleanup(func() {
		n.kill(syscall.SIGTERM)
		if t.Failed() {
			out, _ := os.ReadFile(n.log)
			t.Logf("victoria-logs %s:\n%s", strings.Join(n.args, " "), out)
		}
	})
	return n
}

func (n *vlNode) url() string {
	if n.roots != nil {
		return "https://" + n.addr
	}
	return "http://" + n.addr
}

// healthClient reaches the node's /health, which needs no credentials.
func (n *vlNode) healthClient() *http.Client {
	if n.roots == nil {
		return http.DefaultClient
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: n.roots, MinVersion: tls.VersionTLS12}}}
}

func (n *vlNode) start(t *testing.T) {
	t.Helper()
	out, err := os.OpenFile(n.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	n.cmd = exec.Command(n.bin, n.args...)
	n.cmd.Stdout, n.cmd.Stderr = out, out
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	client := n.healthClient()
	defer client.CloseIdleConnections()
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := client.Get(n.url() + "/health")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("victoria-logs on %s did not get healthy: %v", n.addr, err)
	}
}

// kill sends sig and waits for the process to exit.
func (n *vlNode) kill(sig syscall.Signal) {
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Signal(sig)
	_ = n.cmd.Wait()
	n.cmd = nil
}

// tenants gives each test of a shared service a tenant of its own.
var tenants atomic.Uint32

func openService(t *testing.T, insertURL, selectURL string) archivetest.Engine {
	return openSecuredService(t, insertURL, selectURL, TLSConfig{}, AuthConfig{})
}

// openSecuredService opens the service as openService does, with TLS and
// credentials.
func openSecuredService(t *testing.T, insertURL, selectURL string, tlsConfig TLSConfig, auth AuthConfig) archivetest.Engine {
	a, err := NewHTTP(HTTPConfig{
		URL: insertURL, SelectURL: selectURL,
		AccountID: tenants.Add(1), ProjectID: 7,
		Retention: serviceRetention, FlushInterval: serviceFlush,
		TLS: tlsConfig, Auth: auth,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return archivetest.Engine{Archive: a, Retention: serviceRetention}
}

func storageArgs(t *testing.T) []string {
	return []string{
		"-storageDataPath=" + t.TempDir(),
		fmt.Sprintf("-retentionPeriod=%dh", int(serviceRetention.Hours())),
		"-inmemoryDataFlushInterval=" + serviceFlush.String(),
	}
}

// TestSingleNode runs the suite against a single-node victoria-logs.
func TestSingleNode(t *testing.T) {
	bin := victoriaLogsBinary(t)
	node := startNode(t, bin, append(storageArgs(t), "-delete.enable")...)
	archivetest.Run(t, func(t *testing.T) archivetest.Engine {
		return openService(t, node.url(), "")
	}, archivetest.Options{Delete: func(t *testing.T, e archivetest.Engine, uid string) {
		deleteThroughService(t, node, e.Archive.(*HTTP).cfg, uid)
	}})
}

// deleteThroughService runs a delete task of uid's rows in the tenant of
// cfg through the node's /delete API, as an operator does, and waits
// until it is done.
func deleteThroughService(t *testing.T, node *vlNode, cfg HTTPConfig, uid string) {
	t.Helper()
	client := node.healthClient()
	defer client.CloseIdleConnections()
	tenant := http.Header{}
	tenant.Set("AccountID", strconv.FormatUint(uint64(cfg.AccountID), 10))
	tenant.Set("ProjectID", strconv.FormatUint(uint64(cfg.ProjectID), 10))
	if err := harness.DeleteFromVictoriaLogs(context.Background(), client, node.url(), tenant, colUID+":="+strconv.Quote(uid), 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestCluster runs the suite against a cluster secured as the manifests
// secure it: two storage nodes, a vlinsert and a vlselect, each serving
// https and asking for basic authentication, the front reaching the
// storage nodes over TLS with the same credentials. Its StorageDown test
// kills a storage node (SIGKILL), expects queries to fail, and restarts it
// on the same data.
func TestCluster(t *testing.T) {
	bin := victoriaLogsBinary(t)
	pki := newTestPKI(t)
	serving := pki.serverAuth(t)
	storage := []*vlNode{
		startNodeWithRoots(t, bin, pki.roots(), append(storageArgs(t), serving...)...),
		startNodeWithRoots(t, bin, pki.roots(), append(storageArgs(t), serving...)...),
	}
	front := append([]string{
		"-storageNode=" + storage[0].addr + "," + storage[1].addr,
		"-storageNode.tls", "-storageNode.tlsCAFile=" + pki.caFile,
		"-storageNode.username=" + pki.username, "-storageNode.passwordFile=" + pki.passwordFile,
	}, serving...)
	insert := startNodeWithRoots(t, bin, pki.roots(), append(front, "-select.disable")...)
	sel := startNodeWithRoots(t, bin, pki.roots(), append(front, "-insert.disable")...)
	for _, n := range append(storage, insert, sel) {
		expectUnauthorized(t, n, "/internal/select/query")
	}
	archivetest.Run(t, func(t *testing.T) archivetest.Engine {
		return openSecuredService(t, insert.url(), sel.url(), pki.clientTLS(), pki.clientAuth())
	}, archivetest.Options{
		StopStorage: func(t *testing.T) func() {
			storage[1].kill(syscall.SIGKILL)
			return func() { storage[1].start(t) }
		},
	})
}

// TestSyncSurvivesKill checks Sync's promise against victoria-logs killed
// with SIGKILL right after it: every state appended before a Sync that
// returned is there once the service is back; and a Sync after a kill
// that lost states does not return until they are there (here: it fails,
// since nobody appends them again).
//
// The service writes to disk on its own only every hour here: what a Sync
// made durable, its snapshot of the partition put on disk.
func TestSyncSurvivesKill(t *testing.T) {
	bin := victoriaLogsBinary(t)
	node := startNode(t, bin, append(storageArgs(t), "-inmemoryDataFlushInterval=1h")...)
	engine := openService(t, node.url(), "")
	now := time.Now().Add(-time.Minute)
	records := func(from, n int) []archive.Record {
		var out []archive.Record
		for i := from; i < from+n; i++ {
			out = append(out, archive.Record{
				UID: fmt.Sprintf("uid-%04d", i), Namespace: "ns", Name: fmt.Sprintf("e%d", i),
				ResourceVersion: strconv.Itoa(i + 1), Time: now.Add(time.Duration(i) * time.Millisecond),
				Fields: map[string]string{"metadata.name": fmt.Sprintf("e%d", i), "metadata.namespace": "ns"},
				Object: []byte{0x0a, byte(i)},
			})
		}
		return out
	}
	ctx := context.Background()
	count := func() int {
		page, err := engine.Archive.Query(ctx, archive.Query{Since: now.Add(-time.Hour), Until: now.Add(time.Hour), Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Records)
	}

	if err := engine.Archive.Append(ctx, records(0, 300)); err != nil {
		t.Fatal(err)
	}
	if err := engine.Archive.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	node.kill(syscall.SIGKILL)
	node.start(t)
	if got := count(); got != 300 {
		t.Errorf("%d states after a Sync and a SIGKILL, want 300", got)
	}

	if err := engine.Archive.Append(ctx, records(300, 300)); err != nil {
		t.Fatal(err)
	}
	node.kill(syscall.SIGKILL)
	node.start(t)
	// Not the connections to the killed process.
	_ = engine.Archive.Close()
	syncCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := engine.Archive.Sync(syncCtx); err == nil {
		if got := count(); got != 600 {
			t.Errorf("Sync returned after a SIGKILL with %d states of 600 there", got)
		}
	} else {
		t.Logf("Sync after a SIGKILL that lost states: %v", err)
	}
}

// TestPausedServiceIsUnavailable: a service that stops answering without
// closing its connections (SIGSTOP: the kernel still accepts them, as a
// vanished pod's address drops them) fails queries and appends with
// archive.ErrUnavailable once ResponseTimeout has passed, so that a
// history list answers 503 rather than waiting for the client's minute.
func TestPausedServiceIsUnavailable(t *testing.T) {
	bin := victoriaLogsBinary(t)
	node := startNode(t, bin, storageArgs(t)...)
	const responseTimeout = 500 * time.Millisecond
	a, err := NewHTTP(HTTPConfig{URL: node.url(), Retention: serviceRetention, FlushInterval: serviceFlush, ResponseTimeout: responseTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	ctx := context.Background()
	now := time.Now()
	query := archive.Query{Since: now.Add(-time.Hour), Until: now.Add(time.Hour), Limit: 10}
	if _, err := a.Query(ctx, query); err != nil {
		t.Fatalf("query before the pause: %v", err)
	}

	if err := harness.StopProcess(node.cmd.Process); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.cmd.Process.Signal(syscall.SIGCONT) })
	for _, op := range []struct {
		name string
		call func() error
	}{
		{"query", func() error { _, err := a.Query(ctx, query); return err }},
		{"append", func() error {
			return a.Append(ctx, []archive.Record{{
				UID: "uid-paused", Namespace: "ns", Name: "e", ResourceVersion: "1", Time: now,
				Fields: map[string]string{"metadata.name": "e", "metadata.namespace": "ns"}, Object: []byte{0x0a},
			}})
		}},
	} {
		t.Run(op.name, func(t *testing.T) {
			start := time.Now()
			err := op.call()
			took := time.Since(start)
			if !errors.Is(err, archive.ErrUnavailable) {
				t.Fatalf("%s against a paused service: got %v, want archive.ErrUnavailable", op.name, err)
			}
			// Well under the client's one-minute timeout.
			if took > 20*responseTimeout {
				t.Errorf("%s against a paused service failed after %v, want about %v", op.name, took, responseTimeout)
			}
		})
	}
}
