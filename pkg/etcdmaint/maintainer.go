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

// Package etcdmaint keeps the server's etcd writable without an operator:
// when etcd has raised its NOSPACE alarm (the backend reached
// --quota-backend-bytes), it compacts (where the Policy says: to the
// current revision, held back to the archive's checkpoint), defragments
// every member and disarms the alarm once the database is back below the
// high-water mark; it also defragments a member whose file is mostly free
// pages and close to the quota, before the alarm is raised. It also holds
// the periodic compaction that replaces the generic storage's when a
// reader (the archiver) needs every revision from its checkpoint on
// (Compactor).
//
// Space is freed by what the server already does: events expire with their
// TTL lease (lease revocations are allowed under NOSPACE) and the server
// compacts every --etcd-compaction-interval. Neither shrinks the
// database file: only defragmentation does, and etcd refuses writes until
// the alarm is disarmed even when the space is back. kube-apiserver leaves
// both steps to an operator; this loop does them.
//
// Defragmentation is per member and blocks that member's reads and writes
// while it runs, so it must be done one member at a time, followers first
// and the leader last, as etcd's operations guide recommends. Each round,
// the replica defragments every member itself, reaching each through the
// client URL the member advertises. The server runs the loop on every
// replica rather than under its election (a campaign is a write, which
// etcd refuses under NOSPACE, so a leader lost during the alarm would leave
// nobody to clear it); all replicas walk the members in the same order and
// skip a member whose file has next to no free pages, so a member
// defragmented by one replica is left alone by the others.
package etcdmaint

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/kube-events/events-apiserver/pkg/controller/health"
)

// Defaults of Config.
const (
	DefaultInterval  = 30 * time.Second
	DefaultHighWater = 0.8
	// defaultQuota is etcd's own default --quota-backend-bytes, used for
	// members that do not report theirs (before etcd 3.6).
	defaultQuota = 2 << 30
	// defragTimeout bounds the defragmentation of one member.
	defragTimeout = 5 * time.Minute
	// requestTimeout bounds every other call to etcd.
	requestTimeout = 10 * time.Second
)

// Config configures a Maintainer.
type Config struct {
	// Client reaches the cluster; its TLS configuration is used for every member.
	Client *clientv3.Client
	// Interval is how often the cluster is looked at; DefaultInterval if zero.
	Interval time.Duration
	// HighWater is the fraction of a member's quota above which its file is
	// too big: the NOSPACE alarm is disarmed only once every member is
	// below it (else the next writes would raise it again), and a member
	// above it whose file is at least half free pages is defragmented
	// before the alarm comes. DefaultHighWater if zero.
	HighWater float64
	// Policy holds the compaction under NOSPACE back (to the archive's
	// checkpoint), as it holds the periodic one.
	Policy Policy
}

// Maintainer is the etcd housekeeping loop.
type Maintainer struct {
	client    *clientv3.Client
	interval  time.Duration
	highWater float64
	policy    Policy
	// health is its report: a failed round is etcd unavailable, retried
	// next round, never a liveness failure; a dead loop is the manager's
	// to see.
	health *health.Tracker
}

// New returns a Maintainer for cfg.
func New(cfg Config) *Maintainer {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.HighWater <= 0 || cfg.HighWater > 1 {
		cfg.HighWater = DefaultHighWater
	}
	registerMetrics()
	m := &Maintainer{client: cfg.Client, interval: cfg.Interval, highWater: cfg.HighWater, policy: cfg.Policy}
	m.health = health.New(m.Name(), nil)
	return m
}

// Health is the maintenance loop's report (pkg/controller/health).
func (m *Maintainer) Health() *health.Tracker { return m.health }

// Name names the loop in logs and in its health check (pkg/controller).
func (m *Maintainer) Name() string { return "etcd-maintenance" }

// Run looks at the cluster every interval until ctx is done; a round in
// progress is cut short by ctx.
func (m *Maintainer) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("controller", m.Name())
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Starting etcd maintenance", "interval", m.interval, "highWater", m.highWater)
	wait.JitterUntilWithContext(ctx, func(ctx context.Context) {
		// Never reported busy: a round defragments member after member,
		// each for up to defragTimeout, so a long round is not a wedge.
		err := m.Sync(ctx)
		switch {
		case err == nil:
			m.health.Answered(ctx)
		case ctx.Err() == nil:
			m.health.Failed(ctx, err, m.interval)
			logger.Error(err, "etcd maintenance round failed; retrying next round")
		}
	}, m.interval, 0.1, true)
	logger.Info("Stopped etcd maintenance")
}

// member is what a round knows of one etcd member.
type member struct {
	id       uint64
	name     string
	endpoint string
	leader   bool
	dbSize   int64
	inUse    int64
	quota    int64
}

// Sync runs one round: read every member's status and the alarms; under
// NOSPACE compact, defragment every member and disarm the alarm when the
// space is back; otherwise defragment members that need it.
//
// Under NOSPACE the compaction goes where the Policy says: to the current
// revision, held back to the hold. When compacting to the hold frees too
// little (a member is still above the high-water mark once defragmented),
// it compacts on to the current revision, the only way out: the hold
// cannot move meanwhile (the archiver's checkpoint is a write, which etcd
// refuses under NOSPACE), and the expired events it waits for were deleted
// after it. It logs that and counts the revisions it compacted past the
// hold (historyLostRevisions): the states written in them that the
// archiver had not archived yet are missing from the history.
func (m *Maintainer) Sync(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	members, err := m.members(ctx)
	if err != nil {
		return err
	}
	alarms, err := m.noSpaceAlarms(ctx)
	if err != nil {
		return err
	}
	recordSizes(members)
	if len(alarms) == 0 {
		var errs []error
		for _, mem := range members {
			if mem.fragmented(m.highWater) {
				logger.Info("Defragmenting an etcd member close to its quota", "member", mem.name,
					"dbSize", mem.dbSize, "dbSizeInUse", mem.inUse, "quota", mem.quota)
				errs = append(errs, m.defragment(ctx, mem))
			}
		}
		return errors.Join(errs...)
	}

	logger.Info("etcd is out of space: compacting and defragmenting", "alarms", len(alarms))
	current, err := m.revision(ctx)
	if err != nil {
		return err
	}
	target, err := m.policy.Target(ctx, current)
	if err != nil {
		compactions.WithLabelValues(resultError).Inc()
		return err
	}
	compacted, err := m.compact(ctx, target)
	if err != nil {
		return err
	}
	full, err := m.defragmentAll(ctx, members, compacted)
	if err != nil {
		return err
	}
	if full != nil && target.Held {
		oldest, err := m.oldestRevision(ctx, target.Revision, current)
		if err != nil {
			return err
		}
		lost := current - max(target.Revision, oldest)
		logger.Info("Compacting etcd past the archive's checkpoint: compacting to it freed too little to leave NOSPACE; "+
			"what was written after it and not archived yet is missing from the history",
			"hold", target.Revision, "revision", current, "revisions", lost,
			"member", full.name, "dbSize", full.dbSize, "quota", full.quota)
		compacted, err = m.compact(ctx, Target{Revision: current})
		if err != nil {
			return err
		}
		if compacted && lost > 0 {
			historyLostRevisions.Add(float64(lost))
		}
		if full, err = m.defragmentAll(ctx, members, compacted); err != nil {
			return err
		}
	}
	if full != nil {
		logger.Info("etcd still too full after defragmentation: keeping the NOSPACE alarm until TTLs free more",
			"member", full.name, "dbSize", full.dbSize, "dbSizeInUse", full.inUse, "quota", full.quota)
		return nil
	}
	for _, alarm := range alarms {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		_, err := m.client.AlarmDisarm(ctx, (*clientv3.AlarmMember)(alarm))
		cancel()
		if err != nil {
			return fmt.Errorf("disarming NOSPACE of member %x: %w", alarm.MemberID, err)
		}
		alarmsDisarmed.Inc()
		logger.Info("Disarmed etcd's NOSPACE alarm", "memberID", fmt.Sprintf("%x", alarm.MemberID))
	}
	return nil
}

// defragmentAll defragments members, one at a time in their order, and
// returns the first member still at or above the high-water mark
// afterwards, nil if none is. Unless compacted (this replica has just
// compacted: etcd counts the pages a compaction freed only after later
// writes, which it refuses under NOSPACE), it skips a member with next to
// no free pages.
func (m *Maintainer) defragmentAll(ctx context.Context, members []member, compacted bool) (*member, error) {
	for _, mem := range members {
		// Every replica runs this loop: a member another replica has just
		// compacted and defragmented has next to no free pages left, and
		// is skipped.
		if fresh, err := m.status(ctx, mem); !compacted && err == nil && fresh.dbSize-fresh.inUse < fresh.dbSize/10 {
			continue
		}
		if err := m.defragment(ctx, mem); err != nil {
			return nil, err
		}
	}
	after, err := m.members(ctx)
	if err != nil {
		return nil, err
	}
	recordSizes(after)
	for _, mem := range after {
		if float64(mem.dbSize) >= m.highWater*float64(mem.quota) {
			return &mem, nil
		}
	}
	return nil, nil
}

// fragmented tells whether the member's file is above the high-water mark
// of its quota with at least half of it free.
func (mem member) fragmented(highWater float64) bool {
	return float64(mem.dbSize) >= highWater*float64(mem.quota) && mem.inUse <= mem.dbSize/2
}

// members returns every started member with its status, followers first
// and the leader last: the order to defragment them in.
func (m *Maintainer) members(ctx context.Context) ([]member, error) {
	listCtx, cancel := context.WithTimeout(ctx, requestTimeout)
	list, err := m.client.MemberList(listCtx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("listing etcd members: %w", err)
	}
	var members []member
	var errs []error
	for _, mm := range list.Members {
		if len(mm.ClientURLs) == 0 || mm.IsLearner {
			continue // not started yet, or not voting: nothing to keep
		}
		statusCtx, cancel := context.WithTimeout(ctx, requestTimeout)
		status, err := m.client.Status(statusCtx, mm.ClientURLs[0])
		cancel()
		if err != nil {
			// An unreachable member is left alone this round.
			errs = append(errs, fmt.Errorf("status of etcd member %s: %w", mm.Name, err))
			continue
		}
		quota := status.DbSizeQuota
		if quota <= 0 {
			quota = defaultQuota
		}
		members = append(members, member{
			id: mm.ID, name: mm.Name, endpoint: mm.ClientURLs[0], leader: status.Leader == mm.ID,
			dbSize: status.DbSize, inUse: status.DbSizeInUse, quota: quota,
		})
	}
	if len(members) == 0 {
		return nil, errors.Join(append(errs, errors.New("no etcd member answered"))...)
	}
	sort.SliceStable(members, func(i, j int) bool { return !members[i].leader && members[j].leader })
	return members, nil
}

// status reads one member's status again.
func (m *Maintainer) status(ctx context.Context, mem member) (member, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	status, err := m.client.Status(ctx, mem.endpoint)
	if err != nil {
		return mem, err
	}
	mem.dbSize, mem.inUse = status.DbSize, status.DbSizeInUse
	return mem, nil
}

// noSpaceAlarms returns the members' NOSPACE alarms.
func (m *Maintainer) noSpaceAlarms(ctx context.Context) ([]*etcdserverpb.AlarmMember, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := m.client.AlarmList(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing etcd alarms: %w", err)
	}
	var alarms []*etcdserverpb.AlarmMember
	for _, a := range resp.Alarms {
		if a.Alarm == etcdserverpb.AlarmType_NOSPACE {
			alarms = append(alarms, a)
		}
	}
	return alarms, nil
}

// revision reads etcd's current revision (a read, allowed under NOSPACE).
func (m *Maintainer) revision(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := m.client.Get(ctx, compactRevKey, clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("reading etcd's revision: %w", err)
	}
	return resp.Header.Revision, nil
}

// compact discards every revision older than target's, so that the keys
// deleted by expired leases before it free their pages now rather than
// after the periodic compaction's next two intervals. Watchers further
// behind get 410 Gone and list again, as after any compaction. It tells
// whether it compacted: false if etcd was compacted to target already.
func (m *Maintainer) compact(ctx context.Context, target Target) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	_, err := m.client.Compact(ctx, target.Revision, clientv3.WithCompactPhysical())
	if errors.Is(err, rpctypes.ErrCompacted) {
		return false, nil
	}
	if err != nil {
		compactions.WithLabelValues(resultError).Inc()
		return false, fmt.Errorf("compacting etcd to revision %d: %w", target.Revision, err)
	}
	compactions.WithLabelValues(resultSuccess).Inc()
	if target.Held {
		heldCompactions.Inc()
	}
	klog.FromContext(ctx).Info("Compacted etcd", "revision", target.Revision, "held", target.Held)
	return true, nil
}

// oldestRevision returns the oldest revision in [from, to] that etcd still
// serves (the one it is compacted to, when in the range): the revisions
// from there on are those a compaction to to would discard. It reads at
// most log2(to-from) revisions (reads are allowed under NOSPACE).
func (m *Maintainer) oldestRevision(ctx context.Context, from, to int64) (int64, error) {
	var readErr error
	i := sort.Search(int(to-from), func(i int) bool {
		if readErr != nil {
			return true
		}
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		_, err := m.client.Get(ctx, compactRevKey, clientv3.WithCountOnly(), clientv3.WithRev(from+int64(i)))
		if errors.Is(err, rpctypes.ErrCompacted) {
			return false
		}
		readErr = err
		return true
	})
	if readErr != nil {
		return 0, fmt.Errorf("reading how far etcd is compacted: %w", readErr)
	}
	return from + int64(i), nil
}

// defragment defragments one member, through its own client URL.
func (m *Maintainer) defragment(ctx context.Context, mem member) error {
	ctx, cancel := context.WithTimeout(ctx, defragTimeout)
	defer cancel()
	start := time.Now()
	if _, err := m.client.Defragment(ctx, mem.endpoint); err != nil {
		defragmentations.WithLabelValues(resultError).Inc()
		return fmt.Errorf("defragmenting etcd member %s (%s): %w", mem.name, mem.endpoint, err)
	}
	defragmentations.WithLabelValues(resultSuccess).Inc()
	klog.FromContext(ctx).Info("Defragmented etcd member", "member", mem.name, "leader", mem.leader,
		"dbSizeBefore", mem.dbSize, "dbSizeInUse", mem.inUse, "duration", time.Since(start))
	return nil
}
