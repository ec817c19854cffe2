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

// Package election runs two events-apiserver processes on one etcd and
// checks that exactly one runs the controllers at a time, and that
// stopping it (SIGTERM) or killing it (SIGKILL) hands them to the other.
//
// Run with the envtest assets of hack/envtest-assets.sh:
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test ./test/integration/election/
package election

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kube-events/events-apiserver/pkg/apiserver"
	"github.com/kube-events/events-apiserver/pkg/leaderelection"
	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// failoverTimeout is the longest a hand-over may take.
const failoverTimeout = 30 * time.Second

func TestControllersFailOver(t *testing.T) {
	binary, err := harness.BuildServer(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// stop ends the leader.
		stop func(*harness.Server) error
		// lease is --leader-elect-lease-duration: how long a leader that
		// did not resign keeps the controllers.
		lease time.Duration
		// resigns tells whether the leader hands over at once, well
		// before its lease would expire.
		resigns bool
	}{
		{name: "SIGTERM", stop: (*harness.Server).Stop, lease: 15 * time.Second, resigns: true},
		{name: "SIGKILL", stop: (*harness.Server).Kill, lease: 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			etcd := framework.StartEtcd(t)
			names := []string{"a", "b"}
			replicas := []*harness.Server{
				startReplica(t, binary, etcd, names[0], tt.lease),
				startReplica(t, binary, etcd, names[1], tt.lease),
			}
			lead := waitForLeader(t, etcd, names, replicas)
			follower := 1 - lead
			t.Logf("%s leads", names[lead])

			// The leader stops in the background, and is left out of the
			// count: a stopping server hands over before it exits.
			stopping := replicas[lead]
			replicas[lead] = nil
			start := time.Now()
			stopped := make(chan error, 1)
			go func() { stopped <- tt.stop(stopping) }()
			if next := waitForLeader(t, etcd, names, replicas); next != follower {
				t.Fatalf("%s leads, want %s", names[next], names[follower])
			}
			took := time.Since(start)
			t.Logf("%s took over %v after the leader's %s (lease %v)", names[follower], took.Round(time.Millisecond), tt.name, tt.lease)
			if tt.resigns && took >= tt.lease {
				t.Errorf("hand-over took %v, want under the lease %v: the stopping leader did not resign", took, tt.lease)
			}
			if err := <-stopped; err != nil && tt.resigns {
				t.Errorf("the leader's %s: %v", tt.name, err)
			}
		})
	}
}

// startReplica runs the server as process name on etcd, its election
// identity name and its lease duration lease.
func startReplica(t *testing.T, binary string, etcd *framework.Etcd, name string, lease time.Duration) *harness.Server {
	t.Helper()
	p, err := harness.StartServer(t.Context(), binary, filepath.Join(t.TempDir(), name),
		"--etcd-servers="+etcd.Endpoints[0],
		"--leader-elect-identity="+name,
		fmt.Sprintf("--leader-elect-lease-duration=%v", lease))
	if err != nil {
		t.Fatalf("starting replica %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = p.Kill()
		if t.Failed() {
			t.Logf("replica %s log:\n%s", name, p.Log())
		}
	})
	return p
}

// waitForLeader waits, at most failoverTimeout, until exactly one of
// replicas (nil ones skipped) reports leading on /metrics, and checks that
// the election key in etcd names it; it returns its index.
func waitForLeader(t *testing.T, etcd *framework.Etcd, names []string, replicas []*harness.Server) int {
	t.Helper()
	lead, err := harness.Leader(t.Context(), failoverTimeout, replicas...)
	if err != nil {
		t.Fatal(err)
	}
	// The gauge is set once the campaign is won, so the key is in place.
	owner, err := electionOwner(t.Context(), etcd)
	if err != nil {
		t.Fatal(err)
	}
	if owner != names[lead] {
		t.Fatalf("%s reports leading, the election key names %q", names[lead], owner)
	}
	return lead
}

// electionOwner is the value of the oldest campaign key of the controllers
// election: the leader's --leader-elect-identity.
func electionOwner(ctx context.Context, etcd *framework.Etcd) (string, error) {
	key := apiserver.DefaultEtcdPathPrefix + leaderelection.Key(apiserver.ControllersElection) + "/"
	resp, err := etcd.Client.Get(ctx, key, clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		return "", err
	}
	return string(resp.Kvs[0].Value), nil
}
