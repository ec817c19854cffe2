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

package server

import (
	"bytes"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// eventTTL is the short --event-ttl of TestEventTTL.
const eventTTL = 5 * time.Second

// protobufStorageMagic prefixes every protobuf-encoded object kube-apiserver
// (and this server) writes to etcd.
var protobufStorageMagic = []byte("k8s\x00")

// TestEventTTL runs a server with --event-ttl=5s on an etcd of its own and
// checks, in etcd, that each event's key is under a lease of at most 5s
// that every write renews, and through the API that the event goes away
// when the lease expires.
func TestEventTTL(t *testing.T) {
	t.Parallel()
	etcd := framework.StartEtcd(t)
	s := framework.StartServer(t, framework.WithEtcd(etcd), framework.WithEventTTL(eventTTL))
	c := clientsFor(t, s)[0]
	namespace := namespaceFor(t)
	ctx := ctxFor(t)

	// lease returns the lease of an event's key and its remaining TTL.
	lease := func(name string) (clientv3.LeaseID, *clientv3.LeaseTimeToLiveResponse) {
		t.Helper()
		key := "/registry/events/" + namespace + "/" + name
		resp, err := etcd.Client.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 {
			t.Fatalf("etcd has %d keys %s, want 1", len(resp.Kvs), key)
		}
		kv := resp.Kvs[0]
		if !bytes.HasPrefix(kv.Value, protobufStorageMagic) {
			t.Errorf("%s is not stored as protobuf: %q", key, kv.Value[:min(len(kv.Value), 32)])
		}
		if kv.Lease == 0 {
			t.Fatalf("%s has no lease", key)
		}
		ttl, err := etcd.Client.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
		if err != nil {
			t.Fatal(err)
		}
		if ttl.GrantedTTL <= 0 || ttl.GrantedTTL > int64(eventTTL/time.Second) || ttl.TTL <= 0 || ttl.TTL > int64(eventTTL/time.Second) {
			t.Fatalf("%s: lease %x granted %ds, %ds left; want at most %v", key, kv.Lease, ttl.GrantedTTL, ttl.TTL, eventTTL)
		}
		return clientv3.LeaseID(kv.Lease), ttl
	}

	created := createIn(t, coreV1, c, legacyEvent(namespace, "legacy"))
	createIn(t, eventsV1, c, newEvent(namespace, "new"))
	for _, name := range []string{"legacy", "new"} {
		lease(name)
	}

	// An update renews the lease: the patched key gets a new one with more
	// time left than the one it had.
	time.Sleep(2 * time.Second)
	before, beforeTTL := lease("legacy")
	if _, err := c.CoreV1().Events(namespace).Patch(ctx, "legacy", types.StrategicMergePatchType, []byte(`{"count":4}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	after, afterTTL := lease("legacy")
	if after == before || afterTTL.TTL <= beforeTTL.TTL {
		t.Errorf("patch did not renew the lease: before %x with %ds left, after %x with %ds left", before, beforeTTL.TTL, after, afterTTL.TTL)
	}

	// Both events expire: a watch sees them deleted, a get no longer finds them.
	w, err := c.EventsV1().Events(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	deleted := map[string]bool{}
	deadline := time.After(4 * eventTTL)
	for len(deleted) < 2 {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			if e.Type == watch.Deleted {
				deleted[e.Object.(metav1.Object).GetName()] = true
			}
		case <-deadline:
			t.Fatalf("expired events seen deleted by the watch: %v, want legacy and new within %v", deleted, 4*eventTTL)
		}
	}
	for _, version := range allVersions {
		for _, name := range []string{"legacy", "new"} {
			if _, err := version.get(ctx, c, namespace, name); !apierrors.IsNotFound(err) {
				t.Errorf("get %s through %s after expiry: %v, want 404", name, version.name, err)
			}
		}
	}
	resp, err := etcd.Client.Get(ctx, "/registry/events/"+namespace+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Errorf("%d keys left in etcd after expiry", resp.Count)
	}
}
