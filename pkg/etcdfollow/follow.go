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

// Package etcdfollow follows a key prefix of etcd: it lists the prefix a
// page at a time at one revision, then watches it from the next revision
// with progress notifications; when the watch ends (closed, etcd
// unavailable, no leader) it watches again from the last revision it saw,
// and it lists again only when etcd compacted past that revision. What a
// follower receives is its handler's to use.
package etcdfollow

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultPageSize is the keys of one page of a list.
const DefaultPageSize = 500

// Handler is what a follower's user does with what it receives. An error
// it returns from Listed ends the list, which is tried again; from Watched,
// the watch, which is started again from the revision before the
// response's (the response comes again). An error wrapping ErrRelist from
// either makes the follower list again.
type Handler interface {
	// Listed receives one page of a list at revision rev; first says it
	// is the first page of a new list, which replaces whatever the
	// handler had.
	Listed(ctx context.Context, rev int64, kvs []*mvccpb.KeyValue, first bool) error
	// Watched receives the changes of one watch response, all of them
	// after the revision of the list or of the last response, and the
	// revision h has once it applied them (the last change's, or a
	// progress notification's, which has no changes).
	Watched(ctx context.Context, rev int64, events []*clientv3.Event) error
}

// ErrRelist asks the follower to list again: the handler cannot go on from
// what it has.
var ErrRelist = errors.New("etcdfollow: relist")

// Config configures a Follower.
type Config struct {
	// Name names the follower in metrics and logs.
	Name string
	// KV lists and Watcher watches etcd (a *clientv3.Client is both);
	// Prefix is the key prefix followed, as they see it.
	KV      clientv3.KV
	Watcher clientv3.Watcher
	Prefix  string
	// PageSize is the keys of one page of a list; 0 means DefaultPageSize.
	PageSize int64
	// PrevKV makes watched changes carry the state before them.
	PrevKV bool
	// Clock is the clock of the backoff; nil means the real one.
	Clock clock.WithTicker
}

// Follower follows a key prefix of etcd for a Handler.
type Follower struct {
	cfg Config
}

// New returns a follower; Name, KV, Watcher and Prefix are required.
func New(cfg Config) (*Follower, error) {
	if cfg.Name == "" || cfg.KV == nil || cfg.Watcher == nil || cfg.Prefix == "" {
		return nil, errors.New("etcdfollow: Name, KV, Watcher and Prefix are required")
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	registerMetrics()
	return &Follower{cfg: cfg}, nil
}

// Run lists and watches for h until ctx ends. Between two attempts that
// failed it waits a backoff: from 100 ms, doubling to 30 s, back to 100 ms
// after two minutes without a failure.
func (f *Follower) Run(ctx context.Context, h Handler) {
	logger := klog.FromContext(ctx).WithValues("follower", f.cfg.Name)
	delay := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 30 * time.Second}.
		DelayWithReset(f.cfg.Clock, 2*time.Minute)
	var rev int64 // the last revision h has; 0 until it listed
	for ctx.Err() == nil {
		var err error
		if rev == 0 {
			if rev, err = f.list(ctx, h); err != nil {
				rev = 0
				logger.Info("Listing failed", "err", err)
			} else {
				continue
			}
		} else {
			rev, err = f.watch(ctx, h, rev)
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, ErrRelist) || errors.Is(err, rpctypes.ErrCompacted) {
				relistsTotal.WithLabelValues(f.cfg.Name).Inc()
				logger.Info("Listing again", "err", err)
				rev = 0
				continue
			}
			rewatchesTotal.WithLabelValues(f.cfg.Name).Inc()
			logger.V(2).Info("Watching again", "revision", rev, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-f.cfg.Clock.After(delay()):
		}
	}
}

// list hands h every key of the prefix, a page at a time, at one revision,
// which it returns.
func (f *Follower) list(ctx context.Context, h Handler) (int64, error) {
	key, end := f.cfg.Prefix, clientv3.GetPrefixRangeEnd(f.cfg.Prefix)
	var rev int64
	for first := true; ; first = false {
		options := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(f.cfg.PageSize)}
		if rev != 0 {
			options = append(options, clientv3.WithRev(rev))
		}
		response, err := f.cfg.KV.Get(ctx, key, options...)
		if err != nil {
			return 0, fmt.Errorf("listing %s: %w", f.cfg.Prefix, err)
		}
		if rev == 0 {
			rev = response.Header.Revision
		}
		if err := h.Listed(ctx, rev, response.Kvs, first); err != nil {
			return 0, err
		}
		if !response.More || len(response.Kvs) == 0 {
			return rev, nil
		}
		key = string(response.Kvs[len(response.Kvs)-1].Key) + "\x00"
	}
}

// watch hands h the changes after rev until the watch ends, and returns the
// last revision h has and why the watch ended: ErrCompacted when etcd
// compacted past rev.
func (f *Follower) watch(ctx context.Context, h Handler, rev int64) (int64, error) {
	watchCtx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	options := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithRev(rev + 1), clientv3.WithProgressNotify()}
	if f.cfg.PrevKV {
		options = append(options, clientv3.WithPrevKV())
	}
	for response := range f.cfg.Watcher.Watch(watchCtx, f.cfg.Prefix, options...) {
		if response.CompactRevision != 0 {
			return rev, fmt.Errorf("watching %s from %d: %w", f.cfg.Prefix, rev+1, rpctypes.ErrCompacted)
		}
		if err := response.Err(); err != nil {
			return rev, fmt.Errorf("watching %s: %w", f.cfg.Prefix, err)
		}
		// A response's changes are all those up to its last one's
		// revision; a progress notification says every change up to its
		// header's was sent.
		next := response.Header.Revision
		if n := len(response.Events); n > 0 {
			next = response.Events[n-1].Kv.ModRevision
		}
		if err := h.Watched(ctx, next, response.Events); err != nil {
			return rev, err
		}
		rev = max(rev, next)
	}
	return rev, errors.New("watch closed")
}
