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

package etcdmaint

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/namespace"
	"k8s.io/klog/v2/ktesting"
)

// TestCompactorSync runs rounds of the compactor against a real etcd and
// checks where each compaction lands: at the revision of the previous
// round, held back to the hold when the hold is older, and not at all
// while another participant of the protocol holds the turn.
func TestCompactorSync(t *testing.T) {
	for _, tc := range []struct {
		name string
		// hold returns the hold, given the revision the round is due to
		// compact to; nil: no Hold.
		hold func(due int64) (int64, bool, error)
		// want is where the second round compacts to, given the due one;
		// 0: no compaction.
		want func(due int64) int64
	}{
		{
			name: "no hold: the previous round's revision",
			want: func(due int64) int64 { return due },
		},
		{
			name: "an older hold holds compaction back",
			hold: func(due int64) (int64, bool, error) { return due - 5, true, nil },
			want: func(due int64) int64 { return due - 5 },
		},
		{
			name: "a newer hold does not move compaction forward",
			hold: func(due int64) (int64, bool, error) { return due + 5, true, nil },
			want: func(due int64) int64 { return due },
		},
		{
			name: "no hold to keep (a dead or absent archive)",
			hold: func(int64) (int64, bool, error) { return 1, false, nil },
			want: func(due int64) int64 { return due },
		},
		{
			name: "a hold that cannot be read skips the round",
			hold: func(int64) (int64, bool, error) { return 0, false, errors.New("etcd away") },
			want: func(int64) int64 { return 0 },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			client := startEtcd(t)
			// A client under a storage prefix, as the server's; root
			// reads the whole key space.
			root := clientv3.NewKVFromKVClient(etcdserverpb.NewKVClient(client.ActiveConnection()), client)
			client.KV = namespace.NewKV(client.KV, "/registry")
			put := func(n int) int64 {
				t.Helper()
				var rev int64
				for i := range n {
					resp, err := client.Put(ctx, fmt.Sprintf("/events/ns/e%d", i), "x")
					if err != nil {
						t.Fatal(err)
					}
					rev = resp.Header.Revision
				}
				return rev
			}
			put(10)
			var due int64
			cfg := CompactorConfig{Client: client}
			if tc.hold != nil {
				cfg.Policy.Hold = func(context.Context) (int64, bool, error) { return tc.hold(due) }
			}
			c := NewCompactor(cfg)
			if err := c.Sync(ctx); err != nil {
				t.Fatalf("first round: %v", err)
			}
			due = c.revision
			if got := compactedTo(t, ctx, client, due); got != 0 {
				t.Fatalf("the first round compacted to %d; it should only learn the revision", got)
			}
			put(10)
			err := c.Sync(ctx)
			want := tc.want(due)
			if want == 0 && err == nil {
				t.Errorf("second round: no error, want one")
			}
			if want != 0 && err != nil {
				t.Fatalf("second round: %v", err)
			}
			if got := compactedTo(t, ctx, client, due+5); got != want {
				t.Errorf("compacted to %d, want %d (due %d)", got, want, due)
			}
			// The protocol's key is at the root, where kube-apiserver's
			// compactor looks for it.
			resp, err := root.Get(ctx, compactRevKey)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Kvs) != 1 {
				t.Errorf("%s not at the root of etcd's key space", compactRevKey)
			}
		})
	}

	t.Run("another participant's turn", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		client := startEtcd(t)
		a, b := NewCompactor(CompactorConfig{Client: client}), NewCompactor(CompactorConfig{Client: client})
		for _, c := range []*Compactor{a, b} {
			if err := c.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := client.Put(ctx, "k", "v"); err != nil {
			t.Fatal(err)
		}
		// a took the first turn; b lost it and learned the clock: now b
		// is behind again after a's next round, and compacts nothing.
		if err := a.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		due := a.revision
		if err := b.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if a.version != b.version {
			t.Errorf("after b lost the turn: versions %d and %d, want the same", a.version, b.version)
		}
		if got := compactedTo(t, ctx, client, due); got > due {
			t.Errorf("compacted to %d, past %d", got, due)
		}
	})
}

// compactedTo returns the revision etcd is compacted to (the oldest it
// still serves), looking at revisions up to limit; 0 if none is compacted.
func compactedTo(t *testing.T, ctx context.Context, c *clientv3.Client, limit int64) int64 {
	t.Helper()
	var compacted int64
	for rev := int64(1); rev <= limit; rev++ {
		_, err := c.Get(ctx, "any", clientv3.WithRev(rev))
		switch {
		case errors.Is(err, rpctypes.ErrCompacted):
			compacted = rev + 1
		case err != nil:
			t.Fatal(err)
		}
	}
	return compacted
}
