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

// The round trip: Pods with fuzzed labels, annotations and node names,
// written through the live store, read back by Get and by lists selecting
// them, equal what etcd itself returns.

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
)

// nameOf makes a fuzzed string a Pod name: lower-case letters, digits and
// dashes, at most 40 of them.
func nameOf(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if b.Len() == 40 {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

const roundTripNamespace = "roundtrip"

func FuzzLiveStoreRoundTrip(f *testing.F) {
	f.Add("web", "app", "web", "node-1", "", "", false)
	f.Add("Web Server!", "example.com/tier", "front end", "", "note", "a:b", true)
	f.Add("", "", "", "node-\u00e9", "\x00\xff", "k", true)
	f.Add("db-0", "app", "", "node-1", strings.Repeat("x", 4096), "app", true)
	f.Add("-", "a/b/c", "=,!()", "spec.nodeName=x", "{}", "", false)

	env := newTestEnv(f)
	var n atomic.Int64

	f.Fuzz(func(t *testing.T, name, labelKey, labelValue, nodeName, annotation, updatedLabelKey string, update bool) {
		ctx := context.Background()
		pod := &example.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:   roundTripNamespace,
				Name:        fmt.Sprintf("p%d-%s", n.Add(1), nameOf(name)),
				Labels:      map[string]string{labelKey: labelValue},
				Annotations: map[string]string{"note": annotation},
			},
			Spec: example.PodSpec{NodeName: nodeName},
		}
		key := podKey(pod)
		written := &example.Pod{}
		if err := env.store.Create(ctx, key, pod, written, 0); err != nil {
			t.Fatalf("Create %s: %v", key, err)
		}
		if update {
			err := env.store.GuaranteedUpdate(ctx, key, written, false, nil, storage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
				p := obj.(*example.Pod).DeepCopy()
				p.Labels[updatedLabelKey] = annotation
				p.Spec.NodeName = labelValue
				return p, nil
			}), nil)
			if err != nil {
				t.Fatalf("GuaranteedUpdate %s: %v", key, err)
			}
		}

		// The read not older than the write comes before the read at
		// "0": once it is served, the store holds the write, and reads at
		// "0" see it (a Get at "" may be served by etcd).
		gets := []struct {
			name string
			rv   string
		}{
			{"consistent", ""},
			{"not older than the write", written.ResourceVersion},
			{"any", "0"},
		}
		fromEtcd := &example.Pod{}
		if err := env.storage.Get(ctx, key, storage.GetOptions{}, fromEtcd); err != nil {
			t.Fatalf("Get %s from etcd: %v", key, err)
		}
		if diff := cmp.Diff(written, fromEtcd); diff != "" {
			t.Fatalf("etcd holds another object than the write returned (-written +etcd):\n%s", diff)
		}
		for _, g := range gets {
			t.Run("Get/"+g.name, func(t *testing.T) {
				got := &example.Pod{}
				if err := env.store.Get(ctx, key, storage.GetOptions{ResourceVersion: g.rv}, got); err != nil {
					t.Fatalf("Get %s at %q: %v", key, g.rv, err)
				}
				// An object not older than the write is the write
				// itself: nothing else changes it.
				if diff := cmp.Diff(fromEtcd, got); diff != "" {
					t.Errorf("Get %s at %q (-etcd +store):\n%s", key, g.rv, diff)
				}
			})
		}

		final := fromEtcd
		lists := []struct {
			name  string
			key   string
			pred  storage.SelectionPredicate
			index bool
		}{
			{"by name", "/pods/" + roundTripNamespace, storage.SelectionPredicate{
				Label: labels.Everything(),
				Field: fields.OneTermEqualSelector("metadata.name", final.Name),
			}, false},
			{"by labels", "/pods/" + roundTripNamespace, storage.SelectionPredicate{
				Label: labels.SelectorFromValidatedSet(labels.Set(final.Labels)),
				Field: fields.Everything(),
			}, false},
			{"by node", "/pods/", storage.SelectionPredicate{
				Label: labels.Everything(),
				Field: fields.OneTermEqualSelector("spec.nodeName", final.Spec.NodeName),
			}, true},
			{"the object's key", key, storage.SelectionPredicate{
				Label: labels.Everything(),
				Field: fields.Everything(),
			}, false},
		}
		for _, l := range lists {
			t.Run("List/"+l.name, func(t *testing.T) {
				l.pred.GetAttrs = getPodAttrs
				if l.index {
					l.pred.IndexFields = []string{"spec.nodeName"}
				}
				opts := storage.ListOptions{Predicate: l.pred, Recursive: l.key != key}
				want := &example.PodList{}
				if err := env.storage.GetList(ctx, l.key, opts, want); err != nil {
					t.Fatalf("List from etcd: %v", err)
				}
				found := false
				for i := range want.Items {
					found = found || want.Items[i].Name == final.Name
				}
				if !found {
					t.Fatalf("etcd's list does not hold %s: %v", final.Name, want.Items)
				}
				for _, rv := range []string{"", "0", final.ResourceVersion} {
					o := opts
					o.ResourceVersion = rv
					if rv != "" {
						o.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
					}
					got := &example.PodList{}
					if err := env.store.GetList(ctx, l.key, o, got); err != nil {
						t.Fatalf("List at %q: %v", rv, err)
					}
					// Lists at "0" and not older than the write may
					// be served at a later resourceVersion; the items
					// are the same, as nothing else is written.
					if diff := cmp.Diff(want.Items, got.Items); diff != "" {
						t.Errorf("List at %q (-etcd +store):\n%s", rv, diff)
					}
					if rv == "" && got.ResourceVersion != want.ResourceVersion {
						t.Errorf("consistent list at resourceVersion %s, etcd's at %s", got.ResourceVersion, want.ResourceVersion)
					}
				}
			})
		}
	})
}
