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
