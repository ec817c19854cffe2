package faults

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-events/events-apiserver/test/harness"
)

// startEtcd starts an etcd cluster of n members with extra flags (for
// example --quota-backend-bytes), waits until it serves, stops it when the
// test ends and shows each member's output if the test failed.
func startEtcd(t *testing.T, n int, extra ...string) *harness.Etcd {
	t.Helper()
	e, err := harness.StartEtcd(etcdBinary, t.TempDir(), n, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.Stop()
		if t.Failed() {
			for _, m := range e.Members {
				t.Logf("%s output (end):\n%s", m.Name, m.Tail())
			}
		}
	})
	return e
}

// endpoints are the members' client URLs, for --etcd-servers.
func endpoints(e *harness.Etcd) string {
	return strings.Join(e.Endpoints, ",")
}

// startServer runs the server binary standalone with extra flags, on a
// fixed port and data directory so that a restart is the same server,
// waits until /readyz is ok, stops it when the test ends and shows its
// output if the test failed.
func startServer(t *testing.T, extra ...string) *harness.Server {
	t.Helper()
	s, err := harness.StartServer(t.Context(), serverBinary, filepath.Join(t.TempDir(), "data"),
		append([]string{"--embedded-etcd-log-level=error", "-v=1"}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Stop()
		if t.Failed() {
			t.Logf("%s output (end):\n%s", s.Name, s.Tail())
		}
	})
	return s
}
