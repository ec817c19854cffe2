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

package livestore_test

// Encryption at rest: under the live store, an etcd storage whose values
// are sealed with AES-GCM, as an apiserver's EncryptionConfiguration seals
// them. The store returns the plaintext objects; etcd holds none.

import (
	"bytes"
	"context"
	"crypto/aes"
	"path"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
	"k8s.io/apiserver/pkg/storage/value"
	aestransformer "k8s.io/apiserver/pkg/storage/value/encrypt/aes"
)

// encryptionPrefix is the prefix of sealed values, as the apiserver's
// aesgcm provider named key1 writes.
const encryptionPrefix = "k8s:enc:aesgcm:v1:key1:"

// plaintextMarker is in every object written; a sealed value never shows
// it.
const plaintextMarker = "plaintext-marker-7f3a9c"

func newAESGCMTransformer(t *testing.T) value.Transformer {
	key := []byte("0123456789abcdef0123456789abcdef")
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := aestransformer.NewGCMTransformer(block)
	if err != nil {
		t.Fatal(err)
	}
	return value.NewPrefixTransformers(nil, value.PrefixTransformer{Prefix: []byte(encryptionPrefix), Transformer: gcm})
}

func TestEncryptionAtRest(t *testing.T) {
	transformer := newAESGCMTransformer(t)
	env := newTestEnv(t, withTransformer(transformer))
	ctx := context.Background()
	const ns = "sealed"
	scope := "/pods/" + ns

	start := &example.PodList{}
	if err := env.store.GetList(ctx, resourcePrefix, storage.ListOptions{Predicate: storage.Everything, Recursive: true}, start); err != nil {
		t.Fatal(err)
	}
	w, err := env.store.Watch(ctx, scope, storage.ListOptions{ResourceVersion: start.ResourceVersion, Predicate: storage.Everything, Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// Writes: two creates, an update of the first, a delete of the second.
	var want []watch.Event
	pods := map[string]*example.Pod{}
	for _, name := range []string{"a", "b"} {
		pod := &example.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"secret": plaintextMarker}},
			Spec:       example.PodSpec{NodeName: "node-" + plaintextMarker, Hostname: plaintextMarker},
		}
		out := &example.Pod{}
		if err := env.store.Create(ctx, podKey(pod), pod, out, 0); err != nil {
			t.Fatalf("Create %s: %v", name, err)
		}
		pods[name] = out
		want = append(want, watch.Event{Type: watch.Added, Object: out})
	}
	updated := &example.Pod{}
	err = env.store.GuaranteedUpdate(ctx, podKey(pods["a"]), updated, false, nil, storage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
		p := obj.(*example.Pod).DeepCopy()
		p.Annotations = map[string]string{"note": plaintextMarker}
		return p, nil
	}), nil)
	if err != nil {
		t.Fatalf("GuaranteedUpdate: %v", err)
	}
	pods["a"] = updated
	want = append(want, watch.Event{Type: watch.Modified, Object: updated})
	deleted := &example.Pod{}
	if err := env.store.Delete(ctx, podKey(pods["b"]), deleted, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	delete(pods, "b")
	want = append(want, watch.Event{Type: watch.Deleted, Object: deleted})

	t.Run("etcd holds sealed values", func(t *testing.T) {
		resp, err := env.etcd.KV.Get(ctx, path.Join(etcd3testing.PathPrefix(), podKey(updated)))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 {
			t.Fatalf("%d values at %s, want 1", len(resp.Kvs), podKey(updated))
		}
		raw := resp.Kvs[0].Value
		if !bytes.HasPrefix(raw, []byte(encryptionPrefix)) {
			t.Errorf("the stored value does not start with %q: %q", encryptionPrefix, raw[:min(len(raw), 40)])
		}
		if bytes.Contains(raw, []byte(plaintextMarker)) {
			t.Errorf("the stored value holds the plaintext %q", plaintextMarker)
		}
		plain, _, err := transformer.TransformFromStorage(ctx, raw, value.DefaultContext([]byte(path.Join(etcd3testing.PathPrefix(), podKey(updated)))))
		if err != nil {
			t.Fatalf("unsealing the stored value: %v", err)
		}
		if !bytes.Contains(plain, []byte(plaintextMarker)) {
			t.Errorf("the unsealed value does not hold %q", plaintextMarker)
		}
	})

	t.Run("Get", func(t *testing.T) {
		for _, rv := range []string{"", updated.ResourceVersion, "0"} {
			got := &example.Pod{}
			if err := env.store.Get(ctx, podKey(updated), storage.GetOptions{ResourceVersion: rv}, got); err != nil {
				t.Fatalf("Get at %q: %v", rv, err)
			}
			if diff := cmp.Diff(updated, got); diff != "" {
				t.Errorf("Get at %q (-want +got):\n%s", rv, diff)
			}
		}
	})

	t.Run("GetList", func(t *testing.T) {
		for _, rv := range []string{"", "0", deleted.ResourceVersion} {
			opts := storage.ListOptions{ResourceVersion: rv, Predicate: storage.Everything, Recursive: true}
			if rv == deleted.ResourceVersion {
				opts.ResourceVersionMatch = metav1.ResourceVersionMatchExact
			}
			got := &example.PodList{}
			if err := env.store.GetList(ctx, scope, opts, got); err != nil {
				t.Fatalf("GetList at %q: %v", rv, err)
			}
			var wantItems []example.Pod
			for _, p := range pods {
				wantItems = append(wantItems, *p)
			}
			sort.Slice(wantItems, func(i, j int) bool { return wantItems[i].Name < wantItems[j].Name })
			if diff := cmp.Diff(wantItems, got.Items); diff != "" {
				t.Errorf("GetList at %q (-want +got):\n%s", rv, diff)
			}
		}
	})

	t.Run("Watch", func(t *testing.T) {
		var got []watch.Event
		timeout := time.After(wait.ForeverTestTimeout)
		for len(got) < len(want) {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("watch closed after %v", got)
				}
				got = append(got, watch.Event{Type: ev.Type, Object: unwrap(ev.Object)})
			case <-timeout:
				t.Fatalf("%d events after %v, want %d: %v", len(got), wait.ForeverTestTimeout, len(want), got)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})

	t.Run("Watch from 0", func(t *testing.T) {
		w0, err := env.store.Watch(ctx, scope, storage.ListOptions{ResourceVersion: "0", Predicate: storage.Everything, Recursive: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w0.Stop()
		select {
		case ev := <-w0.ResultChan():
			if diff := cmp.Diff(watch.Event{Type: watch.Added, Object: updated}, watch.Event{Type: ev.Type, Object: unwrap(ev.Object)}); diff != "" {
				t.Errorf("initial event (-want +got):\n%s", diff)
			}
		case <-time.After(wait.ForeverTestTimeout):
			t.Fatalf("no initial event after %v", wait.ForeverTestTimeout)
		}
	})
}
