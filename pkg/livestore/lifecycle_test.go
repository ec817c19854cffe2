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

// The store's life: before its first list is loaded it is not Ready and
// its reads are served by etcd; Stop ends its watches.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"

	"github.com/kube-events/events-apiserver/pkg/livestore"
)

type passKey struct{}

// withPass marks a context whose lists and watches gatedStorage lets
// through while closed.
func withPass(ctx context.Context) context.Context {
	return context.WithValue(ctx, passKey{}, true)
}

// gatedStorage holds every list and watch but those of contexts marked
// withPass until open is closed: the store cannot load while it is held.
type gatedStorage struct {
	storage.Interface
	open chan struct{}
}

func (g *gatedStorage) wait(ctx context.Context) error {
	if ctx.Value(passKey{}) != nil {
		return nil
	}
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gatedStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if err := g.wait(ctx); err != nil {
		return err
	}
	return g.Interface.GetList(ctx, key, opts, listObj)
}

func (g *gatedStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	return g.Interface.Watch(ctx, key, opts)
}

func TestReadsBeforeReadyAreServedByEtcd(t *testing.T) {
	disableListFromCacheSnapshot(t)
	client := newEtcd(t, nil)
	etcdStorage := newEtcdStorage(t, client, identity.NewEncryptCheckTransformer())
	ctx := context.Background()
	var created []example.Pod
	for i := 0; i < 3; i++ {
		pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("pod-%d", i)}, Spec: example.PodSpec{NodeName: "node-1"}}
		out := &example.Pod{}
		if err := etcdStorage.Create(ctx, podKey(pod), pod, out, 0); err != nil {
			t.Fatal(err)
		}
		created = append(created, *out)
	}
	gated := &gatedStorage{Interface: etcdStorage, open: make(chan struct{})}
	store, err := livestore.New(storeConfig(gated, namespaceKeyFunc, 0))
	if err != nil {
		t.Fatalf("livestore.New: %v", err)
	}
	t.Cleanup(store.Stop)

	lists := []struct {
		name string
		opts storage.ListOptions
		// loaded is whether only a loaded store must answer: the
		// cacher's delegator sends an unloaded cache's lists to etcd
		// only when they have a limit and no selectors, and answers
		// others with an error until it is loaded.
		loaded bool
	}{
		{"limit", storage.ListOptions{Predicate: storage.SelectionPredicate{Label: labels.Everything(), Field: fields.Everything(), Limit: 2}, Recursive: true}, false},
		{"all", storage.ListOptions{Predicate: storage.Everything, Recursive: true}, true},
		{"by node", storage.ListOptions{Predicate: predicate(t, "", "spec.nodeName=node-1"), Recursive: true}, true},
	}

	reads := func(loaded bool) func(t *testing.T) {
		return func(t *testing.T) {
			for _, rv := range []string{"", "0"} {
				got := &example.Pod{}
				if err := store.Get(withPass(ctx), podKey(&created[1]), storage.GetOptions{ResourceVersion: rv}, got); err != nil {
					t.Fatalf("Get at %q: %v", rv, err)
				}
				if diff := cmp.Diff(&created[1], got); diff != "" {
					t.Errorf("Get at %q (-etcd +store):\n%s", rv, diff)
				}
			}
			for _, l := range lists {
				if loaded && !l.loaded {
					// A loaded store serves a limited list from
					// memory, as the cacher does; the differential
					// test compares those pages with the cacher's.
					continue
				}
				want := &example.PodList{}
				if err := etcdStorage.GetList(ctx, "/pods/ns", l.opts, want); err != nil {
					t.Fatal(err)
				}
				// Nothing is written meanwhile: a list at "0" holds
				// what etcd holds.
				for _, rv := range []string{"", "0"} {
					opts := l.opts
					opts.ResourceVersion = rv
					got := &example.PodList{}
					err := store.GetList(withPass(ctx), "/pods/ns", opts, got)
					if err != nil && (loaded || !l.loaded) {
						t.Fatalf("GetList %s at %q: %v", l.name, rv, err)
					}
					if err != nil {
						continue
					}
					if diff := cmp.Diff(want.Items, got.Items); diff != "" {
						t.Errorf("GetList %s at %q (-etcd +store):\n%s", l.name, rv, diff)
					}
					if rv == "" && got.Continue != want.Continue {
						t.Errorf("GetList %s at %q: continue %q, etcd's %q", l.name, rv, got.Continue, want.Continue)
					}
				}
			}
		}
	}

	t.Run("before ready", func(t *testing.T) {
		if store.Ready() {
			t.Fatal("Ready before the store could list")
		}
		reads(false)(t)
		if store.Ready() {
			t.Fatal("Ready before the store could list")
		}
	})
	close(gated.open)
	waitReady(t, store)
	t.Run("after ready", reads(true))
}

func TestStopEndsWatches(t *testing.T) {
	disableListFromCacheSnapshot(t)
	client := newEtcd(t, nil)
	store, err := livestore.New(storeConfig(newEtcdStorage(t, client, identity.NewEncryptCheckTransformer()), namespaceKeyFunc, 0))
	if err != nil {
		t.Fatalf("livestore.New: %v", err)
	}
	waitReady(t, store)
	env := &testEnv{store: store}
	ctx := context.Background()
	pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod"}}
	if err := env.store.Create(ctx, podKey(pod), pod, &example.Pod{}, 0); err != nil {
		t.Fatal(err)
	}
	watches := []struct {
		name string
		key  string
		opts storage.ListOptions
	}{
		{"all from 0", resourcePrefix, storage.ListOptions{ResourceVersion: "0", Predicate: storage.Everything, Recursive: true}},
		{"one object", podKey(pod), storage.ListOptions{ResourceVersion: "0", Predicate: storage.Everything}},
		{"by node", resourcePrefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: predicate(t, "", "spec.nodeName=node-1")}},
	}
	var opened []watch.Interface
	for _, w := range watches {
		wi, err := env.store.Watch(ctx, w.key, w.opts)
		if err != nil {
			t.Fatalf("Watch %s: %v", w.name, err)
		}
		defer wi.Stop()
		opened = append(opened, wi)
	}
	env.store.Stop()
	for i, w := range watches {
		t.Run(w.name, func(t *testing.T) {
			timeout := time.After(wait.ForeverTestTimeout)
			for {
				select {
				case _, ok := <-opened[i].ResultChan():
					if !ok {
						return
					}
				case <-timeout:
					t.Fatalf("watch still open %v after Stop", wait.ForeverTestTimeout)
				}
			}
		})
	}
}
