package apiserver

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/kube-events/events-apiserver/pkg/embedded/etcd"
	"github.com/kube-events/events-apiserver/pkg/leaderelection"
)

// countingController counts the replicas running it and waits, on stop,
// for a write in flight.
type countingController struct {
	running  *atomic.Int32
	ran      atomic.Bool
	finished atomic.Bool
}

func (*countingController) Name() string { return "counting" }

func (c *countingController) Run(ctx context.Context) {
	c.running.Add(1)
	c.ran.Store(true)
	<-ctx.Done()
	time.Sleep(10 * time.Millisecond) // work in flight finishing
	c.finished.Store(true)
	c.running.Add(-1)
}

func TestControllersRunOnOneReplicaAndFailOver(t *testing.T) {
	server, err := etcd.Start(t.Context(), etcd.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	storage := storagebackend.Config{Prefix: DefaultEtcdPathPrefix, Transport: storagebackend.TransportConfig{
		ServerList: []string{server.ClientURL}, CertFile: server.CertFile, KeyFile: server.KeyFile, TrustedCAFile: server.TrustedCAFile,
	}}

	var running atomic.Int32
	newReplica := func(identity string) (*controllerRunner, *countingController) {
		c := &countingController{running: &running}
		r, err := newControllerRunner(storage, LeaderElectionConfig{Identity: identity, TTL: 5 * time.Second}, []Controller{c})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.stop)
		r.start(t.Context())
		return r, c
	}
	runnerA, a := newReplica("a")
	runnerB, b := newReplica("b")

	raw, err := NewEtcdClient(storagebackend.Config{Transport: storage.Transport}) // no prefix: the raw keys
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	leaderKey := func(ctx context.Context) string {
		resp, err := raw.Get(ctx, DefaultEtcdPathPrefix+leaderelection.Key(ControllersElection)+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		if err != nil || len(resp.Kvs) == 0 {
			return ""
		}
		return string(resp.Kvs[0].Value)
	}

	var first, second *countingController
	var firstRunner *controllerRunner
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if n := running.Load(); n > 1 {
			t.Fatalf("%d replicas run the controllers at once", n)
		}
		switch {
		case a.ran.Load() && leaderKey(ctx) == "a":
			first, second, firstRunner = a, b, runnerA
		case b.ran.Load() && leaderKey(ctx) == "b":
			first, second, firstRunner = b, a, runnerB
		default:
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("no replica runs the controllers under the election key: %v", err)
	}
	if second.ran.Load() {
		t.Fatal("both replicas ran the controllers")
	}
	firstRunner.stop()
	if !first.finished.Load() {
		t.Fatal("stop returned before the controller's work in flight ended")
	}
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return second.ran.Load() && running.Load() == 1, nil
	})
	if err != nil {
		t.Fatalf("the other replica did not take over: %v", err)
	}
}

// TestControllersRunWithoutElection: with the election disabled, the
// controllers run at once, with no etcd to campaign in.
func TestControllersRunWithoutElection(t *testing.T) {
	var running atomic.Int32
	c := &countingController{running: &running}
	r, err := newControllerRunner(storagebackend.Config{}, LeaderElectionConfig{Disabled: true}, []Controller{c})
	if err != nil {
		t.Fatal(err)
	}
	r.start(t.Context())
	err = wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return c.ran.Load(), nil
	})
	if err != nil {
		t.Fatalf("the controller did not start: %v", err)
	}
	r.stop()
	if !c.finished.Load() {
		t.Fatal("stop returned before the controller's work in flight ended")
	}
}
