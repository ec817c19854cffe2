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
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/controller/health"
)

// compactRevKey is the key k8s.io/apiserver's compactor coordinates its
// replicas through (at the root of etcd's key space, outside any storage
// prefix): its version is the compactions' logical clock and its value the
// revision last compacted to. The Compactor takes part in the same
// protocol, so that it, other replicas and a kube-apiserver sharing the
// etcd compact once an interval between them.
const compactRevKey = "compact_rev_key"

// CompactorConfig configures a Compactor.
type CompactorConfig struct {
	// Client reaches the etcd; a client under a storage prefix does too
	// (the Compactor reads compactRevKey at the root through its
	// connection).
	Client *clientv3.Client
	// Interval is how often the etcd is compacted, to the revision it was
	// at one interval earlier, as the generic server's
	// --etcd-compaction-interval.
	Interval time.Duration
	// Policy holds compaction back (to the archive's checkpoint).
	Policy Policy
	// Clock is the real clock if nil.
	Clock clock.Clock
}

// Compactor compacts etcd every interval, as k8s.io/apiserver's storage
// does when the server owns its etcd, but never past its Policy's hold:
// the server turns the generic compaction off (CompactionInterval 0) and
// runs this one instead when a reader, the archiver, must see every
// revision from its checkpoint on. Every replica runs it; the compare-and-swap
// on compactRevKey lets one of them compact each interval.
type Compactor struct {
	cfg CompactorConfig
	kv  clientv3.KV // at the root of the key space

	version  int64 // compactRevKey's version last seen: the logical clock
	revision int64 // etcd's revision one interval ago

	// health is its report: a round is its work, a failed round etcd
	// unavailable (retried next interval), never a liveness failure.
	health *health.Tracker
}

// Health is the compactor's report (pkg/controller/health).
func (c *Compactor) Health() *health.Tracker { return c.health }

// NewCompactor returns a Compactor for cfg.
func NewCompactor(cfg CompactorConfig) *Compactor {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	registerMetrics()
	kv := clientv3.NewKVFromKVClient(etcdserverpb.NewKVClient(cfg.Client.ActiveConnection()), cfg.Client)
	c := &Compactor{cfg: cfg, kv: kv}
	c.health = health.New(c.Name(), cfg.Clock)
	return c
}

// Name names the loop in logs.
func (c *Compactor) Name() string { return "etcd-compactor" }

// Run compacts every interval until ctx is done.
func (c *Compactor) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("controller", c.Name())
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Starting etcd compaction", "interval", c.cfg.Interval, "held", c.cfg.Policy.Hold != nil)
	for {
		select {
		case <-ctx.Done():
			logger.Info("Stopped etcd compaction")
			return
		case <-c.cfg.Clock.After(c.cfg.Interval):
		}
		c.health.Busy()
		err := c.Sync(ctx)
		switch {
		case err == nil:
			c.health.Progress(ctx)
		case ctx.Err() == nil:
			c.health.Failed(ctx, err, c.cfg.Interval)
		}
		c.health.Idle()
		if err != nil && ctx.Err() == nil {
			logger.Error(err, "etcd compaction failed; retrying next interval")
		}
	}
}

// Sync runs one round of the protocol: if no other replica compacted
// since this one last looked, it compacts to the revision of the previous
// round, where the Policy says (held back to the hold), and remembers the
// current revision for the next round.
func (c *Compactor) Sync(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	to := Target{Revision: c.revision}
	if c.revision != 0 {
		var err error
		if to, err = c.cfg.Policy.Target(ctx, c.revision); err != nil {
			compactions.WithLabelValues(resultError).Inc()
			return err
		}
	}
	target, held := to.Revision, to.Held
	resp, err := c.kv.Txn(ctx).If(
		clientv3.Compare(clientv3.Version(compactRevKey), "=", c.version),
	).Then(
		clientv3.OpPut(compactRevKey, strconv.FormatInt(target, 10)),
	).Else(
		clientv3.OpGet(compactRevKey),
	).Commit()
	if err != nil {
		return fmt.Errorf("taking the compaction turn: %w", err)
	}
	current := resp.Header.Revision
	if !resp.Succeeded {
		// Another replica (or kube-apiserver) compacted: wait a round.
		c.version = resp.Responses[0].GetResponseRange().Kvs[0].Version
		c.revision = current
		return nil
	}
	c.version++
	c.revision = current
	if target <= 0 {
		return nil // the first round only learns the revision
	}
	if _, err := c.kv.Compact(ctx, target); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		compactions.WithLabelValues(resultError).Inc()
		return fmt.Errorf("compacting etcd to revision %d: %w", target, err)
	}
	compactions.WithLabelValues(resultSuccess).Inc()
	if held {
		heldCompactions.Inc()
	}
	klog.FromContext(ctx).V(2).Info("Compacted etcd", "revision", target, "held", held)
	return nil
}
