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

// Package leaderelection picks, among the replicas of the server that share
// one etcd, the one that runs a piece of work (the server's background
// controllers), through etcd's own election recipe
// (go.etcd.io/etcd/client/v3/concurrency). The server always owns an etcd,
// standalone and in a cluster alike, so no kube-apiserver is needed.
//
// A candidate holds a session: a lease it keeps alive while it runs. Its
// campaign key lives under that lease, so a replica that dies without
// resigning is replaced once its lease expires (Config.TTL), and one that
// stops cleanly resigns at once.
//
// A leader can outlive its term without knowing it: paused (a GC pause,
// SIGSTOP, a frozen node) or cut off past its lease, it resumes with its
// work still running while another replica leads. So the work's writes are
// fenced: each is an etcd transaction that applies it only if the term's
// campaign key still exists with its create revision (Fence, NewKV), and a
// refused write (ErrFenced) ends the term's work at once.
package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/klog/v2"
)

// KeyPrefix is where elections live: an election's key is KeyPrefix+Name.
// Callers that share an etcd with other users put the client under their
// storage prefix (go.etcd.io/etcd/client/v3/namespace), as the server does.
const KeyPrefix = "/events-apiserver/leader/"

// DefaultTTL is the session TTL when Config.TTL is zero: how long a leader
// that died without resigning keeps the work from the others.
const DefaultTTL = 15 * time.Second

// retryPeriod is the pause between attempts after etcd failed the
// candidate (no session, a campaign error).
const retryPeriod = 2 * time.Second

// Config names an election and who takes part.
type Config struct {
	// Client is the server's etcd.
	Client *clientv3.Client
	// Name is the election: its key is KeyPrefix+Name.
	Name string
	// Identity is this replica, stored as the value of its campaign key;
	// DefaultIdentity() when empty.
	Identity string
	// TTL is the session TTL, rounded down to whole seconds (at least one):
	// how fast a dead leader is replaced. DefaultTTL when zero.
	TTL time.Duration
}

// DefaultIdentity is this host's name and a UUID, as Kubernetes components
// name their leader election identity, so that two processes on one host
// are two candidates.
func DefaultIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "events-apiserver"
	}
	return host + "_" + string(uuid.NewUUID())
}

// Key is the etcd key (prefix) of the election named name; the leader's
// campaign key is the oldest key under it.
func Key(name string) string {
	return KeyPrefix + name
}

func (cfg Config) complete() (Config, error) {
	if cfg.Client == nil {
		return cfg, errors.New("leader election needs an etcd client")
	}
	if cfg.Name == "" {
		return cfg, errors.New("leader election needs a name")
	}
	if cfg.Identity == "" {
		cfg.Identity = DefaultIdentity()
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.TTL < time.Second {
		return cfg, fmt.Errorf("leader election TTL must be at least 1s, got %v", cfg.TTL)
	}
	return cfg, nil
}

// Run campaigns until ctx ends; while leader it runs lead(leaderCtx) and
// cancels leaderCtx when leadership is lost (then campaigns again). It
// returns after lead returned. If lead returns while this replica still
// leads and ctx goes on, it resigns and campaigns again.
//
// leaderCtx carries the term's Fence (FenceFrom): the writes lead makes
// under it through a KV of NewKV are applied only while the term lasts,
// and the first one refused cancels leaderCtx, as the session's expiry
// does, so that a leader paused past its lease stops at its first write.
func Run(ctx context.Context, cfg Config, lead func(ctx context.Context)) error {
	cfg, err := cfg.complete()
	if err != nil {
		return err
	}
	registerMetrics()
	logger := klog.FromContext(ctx).WithValues("election", cfg.Name, "identity", cfg.Identity)
	ctx = klog.NewContext(ctx, logger)
	leader.WithLabelValues(cfg.Name).Set(0)
	for ctx.Err() == nil {
		if err := runOnce(ctx, cfg, lead); err != nil && ctx.Err() == nil {
			logger.Error(err, "Leader election failed; trying again", "retryAfter", retryPeriod)
			select {
			case <-ctx.Done():
			case <-time.After(retryPeriod):
			}
		}
	}
	return nil
}

// runOnce opens a session, campaigns, and leads until leadership or ctx ends
// or lead returns; then it resigns and closes the session.
func runOnce(ctx context.Context, cfg Config, lead func(ctx context.Context)) error {
	logger := klog.FromContext(ctx)
	// The session outlives ctx by as long as it takes to revoke its lease
	// on the way out; only opening it is bound to ctx.
	sessionCtx, cancelSession := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSession()
	stopOpening := context.AfterFunc(ctx, cancelSession)
	session, err := concurrency.NewSession(cfg.Client,
		concurrency.WithTTL(int(cfg.TTL/time.Second)), concurrency.WithContext(sessionCtx))
	stopOpening()
	if err != nil {
		return fmt.Errorf("opening an etcd session: %w", err)
	}
	defer func() {
		// Revokes the lease, and with it the campaign key if still there.
		if err := session.Close(); err != nil {
			logger.V(2).Info("Closing the election session failed; its lease will expire", "err", err)
		}
	}()

	election := concurrency.NewElection(session, Key(cfg.Name))
	logger.V(2).Info("Campaigning")
	if err := election.Campaign(ctx, cfg.Identity); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("campaigning: %w", err)
	}

	leaderCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Every write the lead function makes under leaderCtx through a
	// client of NewKV is applied only while this term lasts.
	leaderCtx = withFence(leaderCtx, Fence{Election: cfg.Name, Key: election.Key(), Revision: election.Rev()}, cancel)
	go func() {
		select {
		case <-session.Done():
			if ctx.Err() == nil {
				logger.Info("Lost leadership: the election session expired")
			}
			cancel()
		case <-leaderCtx.Done():
		}
	}()

	logger.Info("Became leader", "key", election.Key())
	leader.WithLabelValues(cfg.Name).Set(1)
	lead(leaderCtx)
	leader.WithLabelValues(cfg.Name).Set(0)
	cancel()

	// Hand over at once rather than after the TTL. ctx may be over (the
	// server is stopping), so resign with a context of its own.
	resignCtx, cancelResign := context.WithTimeout(context.WithoutCancel(ctx), cfg.TTL)
	defer cancelResign()
	if err := election.Resign(resignCtx); err != nil {
		logger.V(2).Info("Resigning failed; the session's close or TTL ends the leadership", "err", err)
	}
	logger.Info("Stopped leading")
	return nil
}
