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
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-events/events-apiserver/test/freeport"
)

// quota is the test etcd's --quota-backend-bytes: small, so that a few
// hundred kilobyte-sized values fill it.
const quota = 8 << 20

// highWater is the default high-water mark in bytes of quota.
var highWater = func() int64 { q, h := float64(quota), DefaultHighWater; return int64(q * h) }()

// value is one filler value, well below etcd's request size limit.
var value = strings.Repeat("x", 256<<10)

// TestSync drives a real etcd out of space or into fragmentation and checks
// that rounds of Sync give it back a writable, small database.
func TestSync(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fill brings etcd into the state the maintainer must repair.
		fill func(t *testing.T, ctx context.Context, c *clientv3.Client)
	}{
		{
			name: "out of space: TTLs free the keys, the maintainer compacts, defragments and disarms",
			fill: func(t *testing.T, ctx context.Context, c *clientv3.Client) {
				// A lease that outlives the fill however slow the
				// machine, revoked under NOSPACE as its expiry would.
				lease, err := c.Grant(ctx, 600)
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; ; i++ {
					_, err := c.Put(ctx, fmt.Sprintf("/fill/%d", i), value, clientv3.WithLease(lease.ID))
					if errors.Is(err, rpctypes.ErrNoSpace) {
						break
					}
					if err != nil {
						t.Fatalf("put %d: %v", i, err)
					}
				}
				if _, err := c.Revoke(ctx, lease.ID); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "fragmented near the quota: defragmented before the alarm",
			fill: func(t *testing.T, ctx context.Context, c *clientv3.Client) {
				// Small values, and a look at the database after each, so
				// that the fill stops just above the high-water mark and
				// well below the quota, whatever etcd's own overhead. The
				// look is exact because startEtcd commits every write.
				small := value[:64<<10]
				var rev int64
				for i := 0; status(t, ctx, c).DbSize < highWater; i++ {
					resp, err := c.Put(ctx, fmt.Sprintf("/fill/%d", i), small)
					if err != nil {
						t.Fatalf("put %d: %v", i, err)
					}
					rev = resp.Header.Revision
				}
				if _, err := c.Delete(ctx, "/fill/", clientv3.WithPrefix()); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Compact(ctx, rev+1, clientv3.WithCompactPhysical()); err != nil {
					t.Fatal(err)
				}
				// bbolt frees the compacted pages once a later write
				// begins with no older read open (etcd closes its reads
				// in the background), and etcd counts them as free when
				// that write commits: a few writes after the compaction.
				var s *clientv3.StatusResponse
				err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
					if _, err := c.Put(ctx, "/commit", "x"); err != nil {
						return false, err
					}
					s = status(t, ctx, c)
					return s.DbSizeInUse <= s.DbSize/2, nil
				})
				if err != nil {
					t.Fatalf("waiting for the compacted pages to be free: %v (status %+v)", err, s)
				}
				if s.DbSize >= quota {
					t.Fatalf("the fill left the database at %d bytes, at or above the quota of %d", s.DbSize, quota)
				}
				alarms, err := c.AlarmList(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(alarms.Alarms) > 0 {
					t.Fatalf("the fill raised etcd's alarms %v", alarms.Alarms)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			c := startEtcd(t)
			tc.fill(t, ctx, c)
			before := status(t, ctx, c)
			if before.DbSize < highWater {
				t.Fatalf("the fill left the database at %d bytes, below the high-water mark of %d", before.DbSize, highWater)
			}

			m := New(Config{Client: c})
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				// Writes go on, as they do on a server's etcd; etcd updates the
				// space in use when it commits one. Refused under NOSPACE.
				_, _ = c.Put(ctx, "/tick", "x")
				if err := m.Sync(ctx); err != nil {
					return false, err
				}
				alarms, err := c.AlarmList(ctx)
				if err != nil {
					return false, err
				}
				return len(alarms.Alarms) == 0 && status(t, ctx, c).DbSize < highWater, nil
			})
			if err != nil {
				t.Fatalf("etcd not repaired: %v (status %+v)", err, status(t, ctx, c))
			}
			if _, err := c.Put(ctx, "/after", value); err != nil {
				t.Errorf("write after the repair: %v", err)
			}
		})
	}
}

func status(t *testing.T, ctx context.Context, c *clientv3.Client) *clientv3.StatusResponse {
	t.Helper()
	s, err := c.Status(ctx, c.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startEtcd runs a one-member etcd in this process with the small quota.
//
// The status's DbSize, which the quota is checked against, is the size of
// bbolt's pages as of the backend's last commit; etcd commits puts every
// 100 ms, so a fill reading it between puts would run on, for as many puts
// as the machine does in 100 ms, past the high-water mark and into the
// quota. Committing every write makes the status follow each put.
func startEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.QuotaBackendBytes = quota
	cfg.UnsafeNoFsync = true
	cfg.BackendBatchLimit = 1
	cfg.ListenMetricsUrls = nil
	// Ports found free may be taken by another test's server before etcd
	// binds them; pick new ones then.
	var e *embed.Etcd
	var client url.URL
	for attempt := 0; ; attempt++ {
		ports, err := freeport.Ports(2)
		if err != nil {
			t.Fatal(err)
		}
		client = url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
		peer := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
		e, err = embed.StartEtcd(cfg)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EADDRINUSE) || attempt == 4 {
			t.Fatal(err)
		}
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		t.Fatal("etcd not ready in 1m")
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{client.String()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestSyncHoldsNoSpaceCompaction drives a real etcd out of space with an
// archive's hold on compaction and checks where the maintainer compacts:
// to the hold when that frees enough to leave NOSPACE, past it to the
// current revision only when it does not, and then the revisions past the
// hold are counted as lost to the history.
func TestSyncHoldsNoSpaceCompaction(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fill brings etcd out of space and returns the hold (the first
		// revision the archive has not archived) and the high-water mark
		// that tells whether compacting to the hold freed enough.
		fill func(t *testing.T, ctx context.Context, c *clientv3.Client) (hold int64, highWater float64)
		// past: compacting to the hold frees too little, so the maintainer
		// must compact to the current revision.
		past bool
	}{
		{
			name: "what expired before the hold frees enough: compacted to the hold",
			fill: func(t *testing.T, ctx context.Context, c *clientv3.Client) (int64, float64) {
				// A quarter of the quota written and deleted before the
				// hold (archived, then expired), the rest after it. Leaf
				// pages bbolt rewrites on every put are reused only once
				// etcd's reads close, so how much fits before NOSPACE
				// varies; a quarter always does.
				for i := range quota / 4 / len(value) {
					if _, err := c.Put(ctx, fmt.Sprintf("/archived/%d", i), value); err != nil {
						t.Fatal(err)
					}
				}
				resp, err := c.Delete(ctx, "/archived/", clientv3.WithPrefix())
				if err != nil {
					t.Fatal(err)
				}
				unarchived := fillUntilNoSpace(t, ctx, c, "/unarchived/")
				// Compacted to the hold, what is left is below the mark,
				// which is above it by half of what expired.
				return resp.Header.Revision + 1, float64(unarchived+quota/8) / quota
			},
		},
		{
			name: "what expired is after the hold: compacted past it, counted",
			fill: func(t *testing.T, ctx context.Context, c *clientv3.Client) (int64, float64) {
				resp, err := c.Get(ctx, "/any")
				if err != nil {
					t.Fatal(err)
				}
				unarchived := fillUntilNoSpace(t, ctx, c, "/unarchived/")
				// Expired under NOSPACE (deletes are allowed): freed only
				// by a compaction past the hold.
				if _, err := c.Delete(ctx, "/unarchived/", clientv3.WithPrefix()); err != nil {
					t.Fatal(err)
				}
				return resp.Header.Revision + 1, float64(unarchived/2) / quota
			},
			past: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			c := startEtcd(t)
			hold, highWater := tc.fill(t, ctx, c)
			current := status(t, ctx, c).Header.Revision
			lostBefore := counterValue(t, historyLostRevisions)
			heldBefore := counterValue(t, heldCompactions)

			m := New(Config{Client: c, HighWater: highWater,
				Policy: Policy{Hold: func(context.Context) (int64, bool, error) { return hold, true, nil }}})
			if err := m.Sync(ctx); err != nil {
				t.Fatalf("Sync: %v", err)
			}

			want, wantLost := hold, 0.0
			if tc.past {
				want, wantLost = current, float64(current-hold)
			}
			if got := compactedTo(t, ctx, c, current); got != want {
				t.Errorf("compacted to %d, want %d (hold %d, current %d)", got, want, hold, current)
			}
			if got := counterValue(t, historyLostRevisions) - lostBefore; got != wantLost {
				t.Errorf("history_lost_revisions_total went up by %v, want %v (hold %d, current %d)", got, wantLost, hold, current)
			}
			if got := counterValue(t, heldCompactions) - heldBefore; got != 1 {
				t.Errorf("held_compactions_total went up by %v, want 1", got)
			}
			alarms, err := c.AlarmList(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(alarms.Alarms) != 0 {
				t.Errorf("alarms %v after the round, want none (status %+v)", alarms.Alarms, status(t, ctx, c))
			}
		})
	}

	t.Run("a hold that cannot be read: nothing compacted, the alarm kept", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		c := startEtcd(t)
		fillUntilNoSpace(t, ctx, c, "/unarchived/")
		if _, err := c.Delete(ctx, "/unarchived/", clientv3.WithPrefix()); err != nil {
			t.Fatal(err)
		}
		current := status(t, ctx, c).Header.Revision
		m := New(Config{Client: c, Policy: Policy{Hold: func(context.Context) (int64, bool, error) { return 0, false, errors.New("etcd away") }}})
		if err := m.Sync(ctx); err == nil {
			t.Errorf("Sync: no error, want one")
		}
		if got := compactedTo(t, ctx, c, current); got != 0 {
			t.Errorf("compacted to %d, want no compaction", got)
		}
		alarms, err := c.AlarmList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(alarms.Alarms) == 0 {
			t.Errorf("the alarm was disarmed without a compaction")
		}
	})
}

// fillUntilNoSpace puts values under prefix until etcd refuses one for
// NOSPACE and returns the bytes of the values it took.
func fillUntilNoSpace(t *testing.T, ctx context.Context, c *clientv3.Client, prefix string) int {
	t.Helper()
	for i := 0; ; i++ {
		_, err := c.Put(ctx, fmt.Sprintf("%s%d", prefix, i), value)
		if errors.Is(err, rpctypes.ErrNoSpace) {
			return i * len(value)
		}
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
}

func counterValue(t *testing.T, c metrics.CounterMetric) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
