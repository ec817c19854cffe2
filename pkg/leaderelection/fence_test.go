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

package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.etcd.io/etcd/client/v3/namespace"
	"k8s.io/component-base/metrics/testutil"
)

// campaign makes client's replica the leader of election name, in
// client's key space, and returns the term's fence.
func campaign(t *testing.T, client *clientv3.Client, name string) Fence {
	t.Helper()
	session, err := concurrency.NewSession(client, concurrency.WithTTL(30))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = session.Close() })
	election := concurrency.NewElection(session, Key(name))
	if err := election.Campaign(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	return Fence{Election: name, Key: election.Key(), Revision: election.Rev()}
}

// TestFencedWritesApplyOnlyDuringTheTerm: every kind of write through a
// KV of NewKV, under a context with the fence, is applied while the
// campaign key stands; once the key is gone (the term ended without the
// leader knowing: paused past its lease, another replica elected), the same
// write is refused with ErrFenced, leaves etcd as it was, is counted, and
// ends the term (lost). For a client under the election's namespace and
// one at the root of etcd's key space alike.
func TestFencedWritesApplyOnlyDuringTheTerm(t *testing.T) {
	newClient := startEtcd(t)
	root := newClient()
	const ns = "/registry"

	writes := []struct {
		name  string
		write func(ctx context.Context, kv clientv3.KV, key string) error
	}{
		{"put", func(ctx context.Context, kv clientv3.KV, key string) error {
			_, err := kv.Put(ctx, key, "written")
			return err
		}},
		{"delete", func(ctx context.Context, kv clientv3.KV, key string) error {
			_, err := kv.Delete(ctx, key)
			return err
		}},
		{"txn then", func(ctx context.Context, kv clientv3.KV, key string) error {
			_, err := kv.Txn(ctx).If(clientv3.Compare(clientv3.Value(key), "=", "before")).
				Then(clientv3.OpPut(key, "written")).Commit()
			return err
		}},
		{"txn else", func(ctx context.Context, kv clientv3.KV, key string) error {
			_, err := kv.Txn(ctx).If(clientv3.Compare(clientv3.Value(key), "=", "other")).
				Then(clientv3.OpGet(key)).Else(clientv3.OpPut(key, "written")).Commit()
			return err
		}},
		{"do put", func(ctx context.Context, kv clientv3.KV, key string) error {
			_, err := kv.Do(ctx, clientv3.OpPut(key, "written"))
			return err
		}},
	}
	spaces := []struct {
		name string
		// kv is the KV the writes go through, for fences of a client
		// under ns.
		kv func(c *clientv3.Client) clientv3.KV
		// raw is the key a write to key lands on.
		raw func(key string) string
	}{
		{"client under the namespace", func(c *clientv3.Client) clientv3.KV { return NewKV(namespace.NewKV(c.KV, ns), "") },
			func(key string) string { return ns + key }},
		{"client at the root", func(c *clientv3.Client) clientv3.KV { return NewKV(c.KV, ns) },
			func(key string) string { return key }},
	}
	for _, space := range spaces {
		t.Run(space.name, func(t *testing.T) {
			leaderClient := newClient()
			leaderClient.KV = namespace.NewKV(leaderClient.KV, ns)
			leaderClient.Lease = namespace.NewLease(leaderClient.Lease, ns)
			name := "fenced-" + space.name
			fence := campaign(t, leaderClient, name)
			var lost atomic.Int32
			ctx := withFence(t.Context(), fence, func() { lost.Add(1) })
			kv := space.kv(newClient())

			read := func(key string) string {
				t.Helper()
				resp, err := root.Get(t.Context(), space.raw(key))
				if err != nil {
					t.Fatal(err)
				}
				if len(resp.Kvs) == 0 {
					return "<none>"
				}
				return string(resp.Kvs[0].Value)
			}
			want := map[string]string{"put": "written", "delete": "<none>", "txn then": "written", "txn else": "written", "do put": "written"}
			for _, w := range writes {
				key := "/during/" + w.name
				if _, err := root.Put(t.Context(), space.raw(key), "before"); err != nil {
					t.Fatal(err)
				}
				if err := w.write(ctx, kv, key); err != nil {
					t.Errorf("%s during the term: %v", w.name, err)
				}
				if got := read(key); got != want[w.name] {
					t.Errorf("%s during the term: the key holds %q, want %q", w.name, got, want[w.name])
				}
			}
			if n := lost.Load(); n != 0 {
				t.Fatalf("the term was ended %d times while it lasted", n)
			}

			// Another replica's view: the leader's key expired, or was
			// taken over.
			if _, err := leaderClient.Delete(t.Context(), fence.Key); err != nil {
				t.Fatal(err)
			}
			before := counter(t, name)
			for _, w := range writes {
				key := "/after/" + w.name
				if _, err := root.Put(t.Context(), space.raw(key), "before"); err != nil {
					t.Fatal(err)
				}
				if err := w.write(ctx, kv, key); !errors.Is(err, ErrFenced) {
					t.Errorf("%s after the term: error %v, want ErrFenced", w.name, err)
				}
				if got := read(key); got != "before" {
					t.Errorf("%s after the term: the key holds %q, want it unchanged", w.name, got)
				}
			}
			if got, want := counter(t, name)-before, float64(len(writes)); got != want {
				t.Errorf("events_apiserver_leader_fenced_writes_total{election=%q} grew by %v, want %v", name, got, want)
			}
			if got, want := lost.Load(), int32(len(writes)); got != want {
				t.Errorf("the term was ended %d times, want once per refused write (%d)", got, want)
			}

			// Reads and writes without a fence go through as they are.
			if _, err := kv.Put(t.Context(), "/unfenced", "written"); err != nil {
				t.Errorf("a write without a fence: %v", err)
			}
			if got := read("/unfenced"); got != "written" {
				t.Errorf("a write without a fence: the key holds %q", got)
			}
		})
	}
}

// TestFencedTxnAnswersAsTheInnerTxn: a transaction nested under the fence
// answers exactly what the same transaction answers unfenced (which branch
// ran, what each operation returned), with a header whose revision is the
// one the write made: the callers (k8s.io/apiserver's etcd3 store reads
// Succeeded, the Else branch's range and Header.Revision) cannot tell.
func TestFencedTxnAnswersAsTheInnerTxn(t *testing.T) {
	newClient := startEtcd(t)
	client := newClient()
	fence := campaign(t, client, "answers")
	ctx := withFence(t.Context(), fence, func() { t.Error("the term was ended while it lasted") })
	fenced := NewKV(client.KV, "")

	// answer is what a caller reads of a TxnResponse, keys relative to
	// the case's prefix.
	type op struct {
		Kind   string
		Values []string
		Count  int64
	}
	type answer struct {
		Succeeded bool
		Ops       []op
	}
	answerOf := func(prefix string, resp *clientv3.TxnResponse) answer {
		a := answer{Succeeded: resp.Succeeded}
		for _, r := range resp.Responses {
			switch {
			case r.GetResponseRange() != nil:
				o := op{Kind: "range", Count: r.GetResponseRange().Count}
				for _, kv := range r.GetResponseRange().Kvs {
					o.Values = append(o.Values, fmt.Sprintf("%s=%s", string(kv.Key)[len(prefix):], kv.Value))
				}
				a.Ops = append(a.Ops, o)
			case r.GetResponsePut() != nil:
				a.Ops = append(a.Ops, op{Kind: "put"})
			case r.GetResponseDeleteRange() != nil:
				a.Ops = append(a.Ops, op{Kind: "delete", Count: r.GetResponseDeleteRange().Deleted})
			}
		}
		return a
	}

	for _, tc := range []struct {
		name string
		txn  func(kv clientv3.KV, ctx context.Context, p string) clientv3.Txn
	}{
		{"then: put and read back", func(kv clientv3.KV, ctx context.Context, p string) clientv3.Txn {
			return kv.Txn(ctx).If(clientv3.Compare(clientv3.Value(p+"k"), "=", "v0")).
				Then(clientv3.OpPut(p+"k", "v1"), clientv3.OpGet(p, clientv3.WithPrefix())).Else(clientv3.OpGet(p + "k"))
		}},
		{"else: a conflict answered with the current value (OptimisticPut)", func(kv clientv3.KV, ctx context.Context, p string) clientv3.Txn {
			return kv.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(p+"k"), "=", 1)).
				Then(clientv3.OpPut(p+"k", "v1")).Else(clientv3.OpGet(p + "k"))
		}},
		{"then: delete (OptimisticDelete)", func(kv clientv3.KV, ctx context.Context, p string) clientv3.Txn {
			return kv.Txn(ctx).If(clientv3.Compare(clientv3.Version(p+"k"), ">", 0)).
				Then(clientv3.OpDelete(p + "k")).Else(clientv3.OpGet(p + "k"))
		}},
		{"no compare", func(kv clientv3.KV, ctx context.Context, p string) clientv3.Txn {
			return kv.Txn(ctx).Then(clientv3.OpPut(p+"other", "x"), clientv3.OpGet(p+"k"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(kv clientv3.KV, ctx context.Context, prefix string) (answer, *clientv3.TxnResponse) {
				t.Helper()
				if _, err := client.Put(t.Context(), prefix+"k", "v0"); err != nil {
					t.Fatal(err)
				}
				resp, err := tc.txn(kv, ctx, prefix).Commit()
				if err != nil {
					t.Fatal(err)
				}
				return answerOf(prefix, resp), resp
			}
			want, _ := run(client.KV, t.Context(), "/plain/"+tc.name+"/")
			got, resp := run(fenced, ctx, "/fenced/"+tc.name+"/")
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("fenced answer differs from the unfenced one (-unfenced +fenced):\n%s", diff)
			}
			current, err := client.Get(t.Context(), "/none")
			if err != nil {
				t.Fatal(err)
			}
			if resp.Header == nil || resp.Header.Revision != current.Header.Revision {
				t.Errorf("fenced answer's header %v, want the revision of the write, %d", resp.Header, current.Header.Revision)
			}
		})
	}
}

// TestRunFencesItsTerm: the lead function's context carries the fence of
// the campaign key that made it leader; a write refused under it (the key
// gone while the session lives: a deposed leader that has not noticed)
// returns ErrFenced and ends the term at once, and Run campaigns again,
// under a new fence.
func TestRunFencesItsTerm(t *testing.T) {
	newClient := startEtcd(t)
	observer := newClient()
	client := newClient()
	kv := NewKV(client.KV, "")
	const name = "run-fenced"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	var fences []Fence
	var refused error
	err := Run(ctx, Config{Client: client, Name: name, Identity: "a", TTL: 30 * time.Second}, func(ctx context.Context) {
		fence, ok := FenceFrom(ctx)
		if !ok {
			t.Fatal("the lead function's context has no fence")
		}
		fences = append(fences, fence)
		resp, err := observer.Get(ctx, fence.Key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 || resp.Kvs[0].CreateRevision != fence.Revision || string(resp.Kvs[0].Value) != "a" {
			t.Fatalf("fence %+v, but the campaign key in etcd is %v", fence, resp.Kvs)
		}
		if len(fences) == 2 {
			cancel()
			return
		}
		if _, err := kv.Put(ctx, "/work", "first term"); err != nil {
			t.Fatalf("a write during the term: %v", err)
		}
		if _, err := observer.Delete(t.Context(), fence.Key); err != nil {
			t.Fatal(err)
		}
		_, refused = kv.Put(ctx, "/work", "after the term")
		select {
		case <-ctx.Done():
		case <-time.After(30 * time.Second):
			t.Error("the refused write did not end the term")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(refused, ErrFenced) {
		t.Errorf("write after the term: %v, want ErrFenced", refused)
	}
	if len(fences) != 2 || fences[1].Revision <= fences[0].Revision {
		t.Errorf("fences of the terms %+v, want two, the second newer", fences)
	}
	resp, err := observer.Get(t.Context(), "/work")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "first term" {
		t.Errorf("/work holds %v, want the first term's write alone", resp.Kvs)
	}
}

// counter reads events_apiserver_leader_fenced_writes_total{election=name}.
func counter(t *testing.T, name string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(fencedWrites.WithLabelValues(name))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
