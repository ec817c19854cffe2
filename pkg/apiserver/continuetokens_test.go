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

package apiserver

import (
	"bytes"
	"context"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"

	"github.com/kube-events/events-apiserver/pkg/continuetoken"
)

// TestContinueTokenKeyIsSharedAndKept checks the key of the continue
// tokens against a real etcd: replicas starting together agree on one
// key, a replica started later (or restarted) reads the same one, so that
// a token one issued continues on another, and a key that is not one is
// an error rather than a weak key.
func TestContinueTokenKeyIsSharedAndKept(t *testing.T) {
	client := testserver.RunEtcd(t, nil)
	replica := func() *etcdTokenKey {
		return &etcdTokenKey{newClient: func() (*clientv3.Client, error) {
			return clientv3.New(clientv3.Config{Endpoints: client.Endpoints()})
		}}
	}
	const replicas = 4
	keys := make([][]byte, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			var err error
			if keys[i], err = replica().get(t.Context()); err != nil {
				t.Errorf("replica %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	for i := range keys {
		if len(keys[i]) != continuetoken.KeySize || !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("replica %d has key %x, replica 0 %x: want one key of %d bytes", i, keys[i], keys[0], continuetoken.KeySize)
		}
	}

	binding := []string{"shop", "", "7d", ""}
	issued, err := continuetoken.New(replica().get).Encode(t.Context(), "history", binding, 42)
	if err != nil {
		t.Fatal(err)
	}
	var got int
	if err := continuetoken.New(replica().get).Decode(t.Context(), "history", binding, issued, &got); err != nil || got != 42 {
		t.Errorf("a token decoded by a replica started later: %d, %v; want 42", got, err)
	}

	if _, err := client.Put(context.Background(), ContinueTokenKey, "short"); err != nil {
		t.Fatal(err)
	}
	if _, err := replica().get(t.Context()); err == nil {
		t.Error("a key of 5 bytes was accepted")
	}
}
