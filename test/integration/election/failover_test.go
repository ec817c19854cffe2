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
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/pkg/apiserver"
	"github.com/kube-events/events-apiserver/pkg/leaderelection"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// failoverTimeout is the longest a hand-over may take.
const failoverTimeout = 30 * time.Second

// leaderSample is the gauge each replica serves on /metrics.
const leaderSample = `events_apiserver_leader{election="controllers"}`

func TestControllersFailOver(t *testing.T) {
	binary, err := framework.BuildServer(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// stop ends the leader.
		stop func(*framework.ServerProcess) error
		// lease is --leader-elect-lease-duration: how long a leader that
		// did not resign keeps the controllers.
		lease time.Duration
		// resigns tells whether the leader hands over at once, well
		// before its lease would expire.
		resigns bool
	}{
		{name: "SIGTERM", stop: (*framework.ServerProcess).Stop, lease: 15 * time.Second, resigns: true},
		{name: "SIGKILL", stop: (*framework.ServerProcess).Kill, lease: 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			etcd := framework.StartEtcd(t)
			replicas := map[string]*framework.ServerProcess{}
			for _, name := range []string{"a", "b"} {
				replicas[name] = startReplica(t, binary, etcd, name, tt.lease)
			}

			lead := waitForLeader(t, etcd, replicas)
			follower := replicas[otherThan(lead)]
			t.Logf("%s leads", lead)

			// The leader stops in the background: a stopping server hands
			// over before it exits.
			stopping := replicas[lead]
			delete(replicas, lead)
			start := time.Now()
			stopped := make(chan error, 1)
			go func() { stopped <- tt.stop(stopping) }()
			if next := waitForLeader(t, etcd, replicas); next != otherThan(lead) {
				t.Fatalf("%s leads, want %s", next, otherThan(lead))
			}
			took := time.Since(start)
			t.Logf("%s took over %v after the leader's %s (lease %v)", otherThan(lead), took.Round(time.Millisecond), tt.name, tt.lease)
			if tt.resigns && took >= tt.lease {
				t.Errorf("hand-over took %v, want under the lease %v: the stopping leader did not resign", took, tt.lease)
			}
			if err := <-stopped; err != nil && tt.resigns {
				t.Errorf("the leader's %s: %v", tt.name, err)
			}
			if m, err := follower.Metrics(t.Context()); err != nil || m[leaderSample] != 1 {
				t.Errorf("the new leader reports %s = %v (%v), want 1", leaderSample, m[leaderSample], err)
			}
		})
	}
}

// startReplica runs the server as process name on etcd, its election
// identity name and its lease duration lease.
func startReplica(t *testing.T, binary string, etcd *framework.Etcd, name string, lease time.Duration) *framework.ServerProcess {
	t.Helper()
	p, err := framework.StartServerProcess(t.Context(), binary, filepath.Join(t.TempDir(), name),
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
// replicas reports leading on /metrics and the election key in etcd names
// it, and returns its name. Two replicas reporting leading at once fail
// the test.
func waitForLeader(t *testing.T, etcd *framework.Etcd, replicas map[string]*framework.ServerProcess) string {
	t.Helper()
	var lead string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, failoverTimeout, true, func(ctx context.Context) (bool, error) {
		var leading []string
		for name, p := range replicas {
			m, err := p.Metrics(ctx)
			if err != nil {
				return false, nil
			}
			if m[leaderSample] == 1 {
				leading = append(leading, name)
			}
		}
		if len(leading) > 1 {
			return false, fmt.Errorf("replicas %v lead at once", leading)
		}
		if len(leading) == 0 {
			return false, nil
		}
		owner, err := electionOwner(ctx, etcd)
		if err != nil || owner != leading[0] {
			return false, nil
		}
		lead = owner
		return true, nil
	})
	if err != nil {
		t.Fatalf("no single leader of the controllers election: %v", err)
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

func otherThan(name string) string {
	if name == "a" {
		return "b"
	}
	return "a"
}
