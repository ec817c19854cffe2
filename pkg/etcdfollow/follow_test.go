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

package etcdfollow

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	testingclock "k8s.io/utils/clock/testing"
)

const prefix = "/events/"

// recorder is a handler that keeps the keys it was given and counts the
// lists.
type recorder struct {
	mu    sync.Mutex
	keys  map[string]bool
	lists int
	rev   int64
}

func (r *recorder) Listed(_ context.Context, rev int64, kvs []*mvccpb.KeyValue, first bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if first {
		r.keys = map[string]bool{}
		r.lists++
	}
	for _, kv := range kvs {
		r.keys[string(kv.Key)] = true
	}
	r.rev = rev
	return nil
}

func (r *recorder) Watched(_ context.Context, rev int64, events []*clientv3.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range events {
		if e.Kv.ModRevision <= r.rev {
			return fmt.Errorf("change of %s at %d, not after %d", e.Kv.Key, e.Kv.ModRevision, r.rev)
		}
		if e.Type == clientv3.EventTypeDelete {
			delete(r.keys, string(e.Kv.Key))
		} else {
			r.keys[string(e.Kv.Key)] = true
		}
	}
	r.rev = rev
	return nil
}

func (r *recorder) state() (keys []string, lists int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, r.lists
}

// gatedWatcher is etcd's watcher, whose watches the test can end and whose
// new watches it can hold.
type gatedWatcher struct {
	clientv3.Watcher
	mu      sync.Mutex
	cancels []context.CancelFunc
	gate    chan struct{}
	waiting chan struct{}
}

func (g *gatedWatcher) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	g.mu.Lock()
	gate, waiting := g.gate, g.waiting
	g.mu.Unlock()
	if gate != nil {
		waiting <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	g.mu.Lock()
	g.cancels = append(g.cancels, cancel)
	g.mu.Unlock()
	return g.Watcher.Watch(ctx, key, opts...)
}

// closeWatches ends the open watches and holds the next until release;
// waiting receives when the follower watches again.
func (g *gatedWatcher) closeWatches() (waiting <-chan struct{}, release func()) {
	g.mu.Lock()
	g.gate, g.waiting = make(chan struct{}), make(chan struct{}, 1)
	gate := g.gate
	cancels := g.cancels
	g.cancels = nil
	g.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
	return g.waiting, func() {
		g.mu.Lock()
		g.gate = nil
		g.mu.Unlock()
		close(gate)
	}
}

func put(ctx context.Context, t *testing.T, kv clientv3.KV, keys ...string) int64 {
	t.Helper()
	var rev int64
	for _, key := range keys {
		response, err := kv.Put(ctx, prefix+key, "v")
		if err != nil {
			t.Fatal(err)
		}
		rev = response.Header.Revision
	}
	return rev
}

// TestFollower: the follower lists in pages, then watches; a watch that
// ends is started again from the last revision, without a list, and
// loses nothing written meanwhile; a compaction past that revision makes
// it list again. Each is counted for the follower's name.
func TestFollower(t *testing.T) {
	tests := []struct {
		name string
		// meanwhile writes while the follower's watch is down.
		meanwhile func(ctx context.Context, t *testing.T, client *clientv3.Client)
		wantLists int
		wantKeys  []string
		relists   float64
		rewatches float64
	}{{
		name: "closed watch resumes without a list",
		meanwhile: func(ctx context.Context, t *testing.T, client *clientv3.Client) {
			put(ctx, t, client, "during")
			if _, err := client.Delete(ctx, prefix+"a"); err != nil {
				t.Fatal(err)
			}
		},
		wantLists: 1, wantKeys: []string{prefix + "b", prefix + "c", prefix + "during"}, rewatches: 1,
	}, {
		name: "compaction past the revision lists again",
		meanwhile: func(ctx context.Context, t *testing.T, client *clientv3.Client) {
			// Two revisions: the watch from the next would miss one.
			rev := put(ctx, t, client, "during", "during")
			if _, err := client.Compact(ctx, rev); err != nil {
				t.Fatal(err)
			}
		},
		// The closed watch is watched again, from a compacted revision.
		wantLists: 2, wantKeys: []string{prefix + "a", prefix + "b", prefix + "c", prefix + "during"}, relists: 1, rewatches: 1,
	}}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), wait.ForeverTestTimeout)
			defer cancel()
			client := testserver.RunEtcd(t, nil)
			put(ctx, t, client.Client, "a", "b", "c")
			watcher := &gatedWatcher{Watcher: client.Watcher}
			name := fmt.Sprintf("test-%d", i)
			clk := testingclock.NewFakeClock(time.Now())
			f, err := New(Config{Name: name, KV: client.KV, Watcher: watcher, Prefix: prefix, PageSize: 2, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			relists, rewatches := counted(t, relistsTotal.WithLabelValues(name)), counted(t, rewatchesTotal.WithLabelValues(name))
			h := &recorder{}
			done := make(chan struct{})
			go func() {
				defer close(done)
				f.Run(ctx, h)
			}()
			defer func() {
				cancel()
				<-done
			}()
			// Listed, then watching: a write reaches it.
			put(ctx, t, client.Client, "watched")
			waitKeys(ctx, t, h, []string{prefix + "a", prefix + "b", prefix + "c", prefix + "watched"})
			if _, err := client.Delete(ctx, prefix+"watched"); err != nil {
				t.Fatal(err)
			}
			waitKeys(ctx, t, h, []string{prefix + "a", prefix + "b", prefix + "c"})

			waiting, release := watcher.closeWatches()
			// The follower waits out its backoff on the fake clock.
			for watching := false; !watching; {
				select {
				case <-waiting:
					watching = true
				case <-ctx.Done():
					t.Fatal("the follower did not watch again")
				case <-time.After(10 * time.Millisecond):
					clk.Step(time.Minute)
				}
			}
			tt.meanwhile(ctx, t, client.Client)
			release()
			waitKeys(ctx, t, h, tt.wantKeys)
			if _, lists := h.state(); lists != tt.wantLists {
				t.Errorf("%d lists, want %d", lists, tt.wantLists)
			}
			if got := counted(t, relistsTotal.WithLabelValues(name)) - relists; got != tt.relists {
				t.Errorf("relists_total grew by %v, want %v", got, tt.relists)
			}
			if got := counted(t, rewatchesTotal.WithLabelValues(name)) - rewatches; got != tt.rewatches {
				t.Errorf("rewatches_total grew by %v, want %v", got, tt.rewatches)
			}
		})
	}
}

// counted is c's value.
func counted(t *testing.T, c metrics.CounterMetric) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// waitKeys waits until h holds want.
func waitKeys(ctx context.Context, t *testing.T, h *recorder, want []string) {
	t.Helper()
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		keys, _ := h.state()
		return cmp.Equal(want, keys), nil
	})
	if err != nil {
		keys, _ := h.state()
		t.Fatalf("the follower holds %v (-want +got):\n%s", keys, cmp.Diff(want, keys))
	}
}
