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

package controller_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/kube-events/events-apiserver/pkg/apiserver"
	"github.com/kube-events/events-apiserver/pkg/controller"
	"github.com/kube-events/events-apiserver/pkg/embedded/etcd"
	"github.com/kube-events/events-apiserver/pkg/leaderelection"
)

// TestElectedControllersRunOnOneReplicaAndFailOver: of two replicas, one
// runs the elected controllers, the one whose key leads the election; both
// report healthy; once the leader stops, after its work in flight, the
// other takes over. The every-replica loops run on both all along.
func TestElectedControllersRunOnOneReplicaAndFailOver(t *testing.T) {
	server, err := etcd.Start(t.Context(), etcd.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	storage := storagebackend.Config{Prefix: apiserver.DefaultEtcdPathPrefix, Transport: storagebackend.TransportConfig{
		ServerList: []string{server.ClientURL}, CertFile: server.CertFile, KeyFile: server.KeyFile, TrustedCAFile: server.TrustedCAFile,
	}}

	var running atomic.Int32
	type replica struct {
		manager     *controller.Manager
		elected     *fake
		everywhere  *fake
		livez       func() (int, string)
		finished    atomic.Bool
		clientClose atomic.Bool
	}
	newReplica := func(identity string) *replica {
		r := &replica{everywhere: &fake{name: "everywhere"}}
		r.elected = &fake{name: "elected", run: func(ctx context.Context) {
			running.Add(1)
			<-ctx.Done()
			time.Sleep(10 * time.Millisecond) // work in flight finishing
			r.finished.Store(true)
			running.Add(-1)
		}}
		client, err := apiserver.NewEtcdClient(storage)
		if err != nil {
			t.Fatal(err)
		}
		r.manager, err = controller.NewManager(controller.Config{
			Name:         "test",
			Election:     &leaderelection.Config{Client: client, Name: apiserver.ControllersElection, Identity: identity, TTL: 5 * time.Second},
			Elected:      []controller.Controller{r.elected},
			EveryReplica: []controller.Controller{r.everywhere},
			Stopped: func() error {
				r.clientClose.Store(true)
				return client.Close()
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		r.livez = livez(t, r.manager)
		r.manager.Start(t.Context())
		t.Cleanup(func() { _ = r.manager.Stop() })
		return r
	}
	a, b := newReplica("a"), newReplica("b")

	raw, err := apiserver.NewEtcdClient(storagebackend.Config{Transport: storage.Transport}) // no prefix: the raw keys
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	leaderKey := func() string {
		resp, err := raw.Get(t.Context(), apiserver.DefaultEtcdPathPrefix+leaderelection.Key(apiserver.ControllersElection)+"/",
			clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		if err != nil || len(resp.Kvs) == 0 {
			return ""
		}
		return string(resp.Kvs[0].Value)
	}

	var first, second *replica
	waitFor(t, "a replica runs the elected controllers under the election key", func() bool {
		if n := running.Load(); n > 1 {
			t.Fatalf("%d replicas run the elected controllers at once", n)
		}
		switch {
		case a.elected.started.Load() && leaderKey() == "a":
			first, second = a, b
		case b.elected.started.Load() && leaderKey() == "b":
			first, second = b, a
		default:
			return false
		}
		return true
	})
	if second.elected.started.Load() {
		t.Fatal("both replicas ran the elected controllers")
	}
	waitFor(t, "every replica runs the every-replica controllers", func() bool {
		return a.everywhere.started.Load() && b.everywhere.started.Load()
	})
	for _, r := range []*replica{first, second} {
		if code, body := r.livez(); code != http.StatusOK {
			t.Errorf("/livez of a replica (leader: %v): %d\n%s", r == first, code, body)
		}
	}

	if err := first.manager.Stop(); err != nil {
		t.Fatal(err)
	}
	if !first.finished.Load() || !first.everywhere.finished.Load() || !first.clientClose.Load() {
		t.Fatal("Stop returned before the controllers' work in flight ended or without releasing the client")
	}
	waitFor(t, "the other replica takes over", func() bool {
		return second.elected.started.Load() && running.Load() == 1
	})
}

// TestElectedControllersRunWithoutElection: with no election, the elected
// controllers run at once, with no etcd to campaign in.
func TestElectedControllersRunWithoutElection(t *testing.T) {
	c := &fake{name: "elected"}
	m, err := controller.NewManager(controller.Config{Name: "test", Elected: []controller.Controller{c}})
	if err != nil {
		t.Fatal(err)
	}
	m.Start(t.Context())
	waitFor(t, "the controller starts", c.started.Load)
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	if !c.finished.Load() {
		t.Fatal("Stop returned before the controller's Run did")
	}
}
