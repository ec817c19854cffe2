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

// Package archiver is the controller that copies every state of every
// event into the archive: it follows the events' keys in etcd from its
// checkpoint (the revision it has archived up to, kept in etcd under the
// storage prefix), appends each state in revision order, at least once
// (the archive's Append is idempotent per UID and resourceVersion), and
// archives every live event again when etcd has compacted past its
// checkpoint. It runs on the elected replica only.
package archiver

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/ancestry"
	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/controller/health"
	"github.com/kube-events/events-apiserver/pkg/storedevent"
)

// Defaults of Config.
const (
	// DefaultBatchSize is the most states one Append carries.
	DefaultBatchSize = 1000
	// DefaultBatchDelay is how long a state waits for others to share its
	// Append.
	DefaultBatchDelay = 50 * time.Millisecond
)

const (
	// checkpointEvery is how often a checkpoint starts: the archive's Sync
	// of what is appended by then, then the write of its revision. With
	// the appends' batch delay and a Sync of tens of milliseconds, it keeps
	// the checkpoint within a second of an acknowledged create.
	checkpointEvery = 200 * time.Millisecond
	// maxSyncs is the most Syncs in flight at once. A Sync is mostly a
	// wait, for tens of milliseconds where the archive writes to disk at
	// once, for one to two flush intervals where it cannot (a cluster's
	// storage nodes), so they overlap: the checkpoint trails the appends by
	// one Sync and at most one checkpointEvery, not by a Sync and the wait
	// for the one before.
	maxSyncs = 16
	// heartbeatEvery is the least often it is written, even idle, so that
	// its age tells a running archiver (see CompactionHold).
	heartbeatEvery = 30 * time.Second
	// progressEvery is how often an idle archiver asks etcd how far its
	// watch is, to move the checkpoint past writes to other keys.
	progressEvery = 5 * time.Second
	// statsEvery is how often the archive's size is read for the metrics.
	statsEvery = 30 * time.Second
	// relistPageSize is the number of keys read per page of a relist.
	relistPageSize = 500
	// requestTimeout bounds every etcd request but the watch.
	requestTimeout = 10 * time.Second
)

// Config configures an Archiver.
type Config struct {
	// Archive is where the states go.
	Archive archive.Archive
	// NewClient returns a client of the store's etcd whose keys are under
	// the storage prefix (the server's NewEtcdClient); the archiver closes
	// it when Run returns.
	NewClient func() (*clientv3.Client, error)
	// StoragePrefix is that prefix ("/registry"), and ResourcePrefix the
	// events' prefix under it ("events"): events are at
	// <StoragePrefix>/<ResourcePrefix>/<namespace>/<name>.
	StoragePrefix, ResourcePrefix string
	// Codec decodes what the store writes into the internal Event: the
	// store's own storage codec.
	Codec runtime.Codec
	// Transformer undoes the store's encryption at rest, if any; the
	// archive keeps the decrypted state.
	Transformer value.Transformer
	// Chains, if set, completes the chain of a state stored with a
	// pending chain or none, from what its cache knows (see
	// withCachedChain).
	Chains ChainLookup
	// Seals, where kube-apiserver writes events past the strategy, tells
	// the chains the server sealed from those others wrote, which are
	// never archived; nil otherwise.
	Seals *ancestry.Sealer
	// BatchSize and BatchDelay bound a batch; defaults if zero.
	BatchSize  int
	BatchDelay time.Duration
	// Clock is the real clock if nil.
	Clock clock.WithTicker
}

// Archiver is the archiving controller.
type Archiver struct {
	cfg       Config
	keyPrefix string // the events' prefix in a client under the storage prefix
	// health is its report: work is etcd revisions not yet checkpointed,
	// progress an append or a checkpoint, the dependencies the archive and
	// etcd.
	health *health.Tracker

	mu           sync.Mutex
	failingSince time.Time // zero while appends succeed

	// checkpoints counts the checkpoints written, so that Run can tell a
	// follow that made progress from one that failed at once.
	checkpoints atomic.Int64
}

// New returns an Archiver for cfg.
func New(cfg Config) (*Archiver, error) {
	if cfg.Archive == nil || cfg.NewClient == nil || cfg.Codec == nil {
		return nil, errors.New("archiver: Archive, NewClient and Codec are required")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.BatchDelay <= 0 {
		cfg.BatchDelay = DefaultBatchDelay
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	registerMetrics()
	a := &Archiver{cfg: cfg, keyPrefix: path.Join("/", cfg.ResourcePrefix) + "/"}
	a.health = health.New(a.Name(), cfg.Clock)
	return a, nil
}

// Name names the controller in logs.
func (a *Archiver) Name() string { return "archiver" }

// Health is the archiver's report (pkg/controller/health): an archive or
// an etcd that fails is a dependency outage, which it waits out retrying;
// only an archiver with revisions to archive that neither appends nor
// checkpoints while both answer is wedged. Neither concerns /readyz: a
// slow or absent archive must not take the API away.
func (a *Archiver) Health() *health.Tracker { return a.health }

// failing tells whether the last append failed.
func (a *Archiver) failing() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.failingSince.IsZero()
}

// Run archives until ctx is done: it connects, follows etcd from the
// checkpoint, and starts over after any error, with a backoff.
func (a *Archiver) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	// A replica that stops archiving (its term ended) has no lag: the
	// leader's gauges are the archive's.
	defer func() {
		lagSeconds.Set(0)
		lagRevisions.Set(0)
	}()
	client, err := a.connect(ctx)
	if err != nil {
		return // ctx ended
	}
	defer func() { _ = client.Close() }()

	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { a.recordStats(ctx) })

	newBackoff := func() wait.Backoff {
		return wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 10, Cap: 30 * time.Second}
	}
	backoff := newBackoff()
	relist := false
	for ctx.Err() == nil {
		checkpoints := a.checkpoints.Load()
		err := a.follow(ctx, client, relist)
		if a.checkpoints.Load() > checkpoints {
			// It made progress: the next interruption is a new one.
			backoff = newBackoff()
		}
		if ctx.Err() != nil {
			return
		}
		if relist = errors.Is(err, errCompacted); relist {
			logger.Info("Relisting", "reason", err.Error())
			continue
		}
		delay := backoff.Step()
		a.health.Failed(ctx, err, delay)
		logger.Error(err, "Archiving interrupted; resuming from the checkpoint", "retryIn", delay)
		select {
		case <-ctx.Done():
		case <-a.cfg.Clock.After(delay):
		}
	}
}

// connect makes the etcd client, retrying until it succeeds or ctx ends.
func (a *Archiver) connect(ctx context.Context) (*clientv3.Client, error) {
	var client *clientv3.Client
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		if client, err = a.cfg.NewClient(); err != nil {
			a.health.Failed(ctx, err, time.Second)
			klog.FromContext(ctx).Error(err, "Connecting to etcd for archiving")
			return false, nil
		}
		return true, nil
	})
	return client, err
}

// recordStats reads the archive's size into the metrics until ctx ends.
func (a *Archiver) recordStats(ctx context.Context) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		stats, err := a.cfg.Archive.Stats(ctx)
		if err != nil {
			if ctx.Err() == nil {
				klog.FromContext(ctx).V(2).Info("Reading the archive's size failed", "err", err)
			}
			return
		}
		rows.Set(float64(stats.Rows))
		diskBytes.Set(float64(stats.DiskBytes))
	}, statsEvery)
}

// pending is a state received and not yet appended.
type pending struct {
	record   archive.Record
	received time.Time
}

// errCompacted ends a follow whose checkpoint etcd has compacted past.
var errCompacted = errors.New("etcd has compacted past the archive checkpoint")

// errUnconfirmed ends a follow once the archive failed an Append or a
// Sync: it may have lost what it took since the last Sync (an engine that
// crashed before its flush keeps nothing of it), so no checkpoint goes
// past that, not even the final one, and the next follow appends it again
// from the checkpoint.
var errUnconfirmed = errors.New("the archive failed; appending again from the checkpoint what it took since")

// follower is the state of one follow: what is appended, what is waiting.
type follower struct {
	*Archiver
	client *clientv3.Client

	batch   []pending
	covered int64 // every state at or before it is appended or in batch
	seen    int64 // the newest revision etcd has reported

	// appended is the revision every state at or before which has been
	// appended; the checkpoint loop makes it durable and writes it.
	appended     atomic.Int64
	checkpointed atomic.Int64
	// unconfirmed receives the checkpoint loop's error when a checkpoint
	// failed (see errUnconfirmed).
	unconfirmed chan error
}

// follow archives from the checkpoint until ctx ends or an error; it first
// archives every live event if there is no checkpoint or relist is set
// (etcd compacted past the checkpoint).
func (a *Archiver) follow(ctx context.Context, client *clientv3.Client, relist bool) (err error) {
	logger := klog.FromContext(ctx)
	// Until its first checkpoint, a follow has work: the relist, or what
	// etcd holds past the checkpoint.
	a.health.Busy()
	f := &follower{Archiver: a, client: client, unconfirmed: make(chan error, 1)}
	start, err := f.start(ctx, relist)
	if err != nil {
		return err
	}

	checkpointCtx, stopCheckpoints := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { f.checkpointLoop(checkpointCtx) })
	defer func() {
		stopCheckpoints()
		wg.Wait()
		if !errors.Is(err, errUnconfirmed) {
			f.finalCheckpoint(ctx)
		}
	}()

	watchCtx, cancelWatch := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancelWatch()
	watch := client.Watch(watchCtx, f.keyPrefix, clientv3.WithPrefix(), clientv3.WithRev(start+1))

	ticker := a.cfg.Clock.NewTicker(time.Second)
	defer ticker.Stop()
	var progressAskedAt time.Time
	var flushTimer clock.Timer
	var flushC <-chan time.Time
	defer func() {
		if flushTimer != nil {
			flushTimer.Stop()
		}
	}()
	for {
		if len(f.batch) > 0 && flushC == nil {
			flushTimer = a.cfg.Clock.NewTimer(a.cfg.BatchDelay)
			flushC = flushTimer.C()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-f.unconfirmed:
			return fmt.Errorf("%w: %w", errUnconfirmed, err)
		case resp, open := <-watch:
			if !open {
				return errors.New("the etcd watch of events closed")
			}
			if resp.CompactRevision != 0 {
				// What changed between the checkpoint and the compaction
				// is gone from etcd; what is live now is archived next.
				return fmt.Errorf("%w (compacted to %d)", errCompacted, resp.CompactRevision)
			}
			if err := resp.Err(); err != nil {
				return fmt.Errorf("watching events in etcd: %w", err)
			}
			f.receive(ctx, resp)
			if len(f.batch) >= a.cfg.BatchSize {
				if err := f.flush(ctx); err != nil {
					return err
				}
			}
		case <-flushC:
			flushC = nil
			if err := f.flush(ctx); err != nil {
				return err
			}
		case <-ticker.C():
			if len(f.batch) == 0 && a.cfg.Clock.Since(progressAskedAt) >= progressEvery {
				progressAskedAt = a.cfg.Clock.Now()
				if err := client.RequestProgress(watchCtx); err != nil {
					logger.V(2).Info("Asking etcd for the watch's progress failed", "err", err)
				}
			}
			f.recordLag()
		}
	}
}

// start returns the revision the follow watches from: the checkpoint's,
// or, without a checkpoint or when relist is set, that of a relist, which
// archives every live event first.
func (f *follower) start(ctx context.Context, relist bool) (int64, error) {
	readCtx, cancel := context.WithTimeout(ctx, requestTimeout)
	cp, ok, err := ReadCheckpoint(readCtx, f.client)
	cancel()
	if err != nil {
		return 0, err
	}
	start := cp.Revision
	switch {
	case !ok:
		if start, err = f.relist(ctx, "no checkpoint"); err != nil {
			return 0, err
		}
	case relist:
		if start, err = f.relist(ctx, errCompacted.Error()); err != nil {
			return 0, err
		}
	default:
		klog.FromContext(ctx).Info("Archiving from the checkpoint", "revision", cp.Revision)
		f.checkpointed.Store(cp.Revision)
	}
	f.covered, f.seen = start, start
	f.appended.Store(start)
	return start, nil
}

// receive adds a watch response's writes to the batch.
func (f *follower) receive(ctx context.Context, resp clientv3.WatchResponse) {
	f.seen = max(f.seen, resp.Header.Revision)
	if resp.IsProgressNotify() {
		// Every write up to the header's revision has been delivered.
		f.covered = max(f.covered, resp.Header.Revision)
		if len(f.batch) == 0 {
			f.appended.Store(f.covered)
		}
		return
	}
	now := f.cfg.Clock.Now()
	for _, ev := range resp.Events {
		f.covered = max(f.covered, ev.Kv.ModRevision)
		if ev.Type != mvccpb.PUT {
			continue // an expiry or a delete: the state before it is archived
		}
		record, err := f.record(ctx, ev.Kv)
		if err != nil {
			decodeErrors.Inc()
			klog.FromContext(ctx).Error(err, "Skipping an event the archiver cannot decode", "key", string(ev.Kv.Key), "revision", ev.Kv.ModRevision)
			continue
		}
		f.batch = append(f.batch, pending{record: record, received: now})
	}
	if len(f.batch) == 0 {
		f.appended.Store(f.covered)
	}
}

// record decodes one stored state into its archive record.
func (f *follower) record(ctx context.Context, kv *mvccpb.KeyValue) (archive.Record, error) {
	data, err := storedevent.PlainValue(ctx, f.cfg.Transformer, f.cfg.StoragePrefix, kv)
	if err != nil {
		return archive.Record{}, err
	}
	event, err := storedevent.Decode(f.cfg.Codec, data)
	if err != nil {
		return archive.Record{}, err
	}
	if (f.cfg.Chains != nil || f.cfg.Seals != nil) && withCachedChain(ctx, event, f.cfg.Chains, f.cfg.Seals) {
		chainsCompleted.Inc()
	}
	return NewRecord(event, f.cfg.Codec, kv.ModRevision)
}

// flush appends the batch, retrying until the archive takes it or ctx
// ends, and moves the appended revision to what the batch covered.
func (f *follower) flush(ctx context.Context) error {
	if len(f.batch) == 0 {
		f.appended.Store(f.covered)
		return nil
	}
	records := make([]archive.Record, len(f.batch))
	for i, p := range f.batch {
		records[i] = p.record
	}
	if err := f.appendRecords(ctx, records); err != nil {
		return err
	}
	appendDelay.Observe(f.cfg.Clock.Since(f.batch[0].received).Seconds())
	f.batch = f.batch[:0]
	f.appended.Store(f.covered)
	f.recordLag()
	return nil
}

// appendRecords appends records, retrying with a backoff until the
// archive takes them or ctx ends: states are never skipped. If the archive
// failed an attempt, it then returns errUnconfirmed: what it took before
// may be lost.
func (a *Archiver) appendRecords(ctx context.Context, records []archive.Record) error {
	logger := klog.FromContext(ctx)
	backoff := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 20, Cap: 10 * time.Second}
	failed := false
	for {
		err := a.cfg.Archive.Append(ctx, records)
		a.mu.Lock()
		if err == nil {
			a.failingSince = time.Time{}
		} else if a.failingSince.IsZero() {
			a.failingSince = a.cfg.Clock.Now()
		}
		a.mu.Unlock()
		if err == nil {
			a.health.Progress(ctx)
			appendsTotal.WithLabelValues(resultSuccess).Inc()
			appendedRecords.Add(float64(len(records)))
			if failed {
				return fmt.Errorf("%w: appends failed until now", errUnconfirmed)
			}
			return nil
		}
		failed = true
		appendsTotal.WithLabelValues(resultError).Inc()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		delay := backoff.Step()
		a.health.Failed(ctx, fmt.Errorf("appending to the archive: %w", err), delay)
		logger.Error(err, "Appending to the archive failed; retrying", "records", len(records), "retryIn", delay)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-a.cfg.Clock.After(delay):
		}
	}
}

// relist archives every live event, page by page at one revision, and
// checkpoints that revision.
func (f *follower) relist(ctx context.Context, why string) (int64, error) {
	logger := klog.FromContext(ctx)
	logger.Info("Archiving every live event", "reason", why)
	relists.Inc()
	key, end := f.keyPrefix, clientv3.GetPrefixRangeEnd(f.keyPrefix)
	var revision int64
	count := 0
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(relistPageSize)}
		if revision != 0 {
			opts = append(opts, clientv3.WithRev(revision))
		}
		getCtx, cancel := context.WithTimeout(ctx, requestTimeout)
		resp, err := f.client.Get(getCtx, key, opts...)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("listing events in etcd: %w", err)
		}
		if revision == 0 {
			revision = resp.Header.Revision
		}
		records := make([]archive.Record, 0, len(resp.Kvs))
		for _, kv := range resp.Kvs {
			record, err := f.record(ctx, kv)
			if err != nil {
				decodeErrors.Inc()
				logger.Error(err, "Skipping an event the archiver cannot decode", "key", string(kv.Key), "revision", kv.ModRevision)
				continue
			}
			records = append(records, record)
		}
		if len(records) > 0 {
			if err := f.appendRecords(ctx, records); err != nil {
				return 0, err
			}
		}
		count += len(records)
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	if err := f.checkpoint(ctx, revision); err != nil {
		return 0, err
	}
	logger.Info("Archived every live event", "events", count, "revision", revision)
	return revision, nil
}

// checkpointLoop moves the checkpoint until ctx ends: every
// checkpointEvery it starts a Sync of what is appended by then (at most
// maxSyncs at once), and writes each Sync's revision once it returns, in
// the order they started, so that the checkpoint never moves back. Even
// idle, it rewrites the checkpoint at least every heartbeatEvery. Once a
// Sync or a checkpoint write fails it writes no more: it hands the error
// to the follow, through f.unconfirmed, which appends again from the last
// checkpoint.
func (f *follower) checkpointLoop(ctx context.Context) {
	var (
		wg    sync.WaitGroup
		state checkpointState
	)
	queue := make(chan syncing, maxSyncs)
	defer wg.Wait()
	defer close(queue)
	wg.Go(func() { f.writeCheckpoints(ctx, queue, &state) })

	ticker := f.cfg.Clock.NewTicker(checkpointEvery)
	defer ticker.Stop()
	started := f.checkpointed.Load() // the revision of the last Sync started
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		if state.failed.Load() {
			return
		}
		if state.inFlight.Load() >= maxSyncs {
			continue
		}
		revision := f.appended.Load()
		idle := state.inFlight.Load() == 0
		switch {
		case revision > started:
			// New appends to make durable.
		case idle && state.since(f.cfg.Clock) >= heartbeatEvery && !f.failing():
			// Unmoved, the checkpoint is rewritten only as a heartbeat,
			// and not while appends fail: its age is then how long the
			// archive has been failing, which bounds how long it holds
			// compaction back.
		default:
			continue
		}
		started = revision
		s := syncing{revision: revision, done: make(chan error, 1)}
		state.inFlight.Add(1)
		wg.Go(func() {
			began := f.cfg.Clock.Now()
			err := f.cfg.Archive.Sync(ctx)
			if err == nil {
				syncDuration.Observe(f.cfg.Clock.Since(began).Seconds())
			}
			s.done <- err
		})
		queue <- s
	}
}

// syncing is a Sync the checkpoint loop started: the revision it makes
// durable, and its result once it returns.
type syncing struct {
	revision int64
	done     chan error
}

// checkpointState is what the checkpoint loop shares with the writer of
// its checkpoints (writeCheckpoints).
type checkpointState struct {
	inFlight atomic.Int32 // Syncs started whose checkpoint is not written
	failed   atomic.Bool  // a Sync or a write failed: nothing more is written
	mu       sync.Mutex
	// writtenAt is when the checkpoint was last written.
	writtenAt time.Time
}

// since is how long ago the checkpoint was last written.
func (s *checkpointState) since(c clock.PassiveClock) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.Since(s.writtenAt)
}

// writeCheckpoints writes the revision of each Sync in queue, in the order
// they started, once it returned. Past the first failure it writes no
// more, and hands the error to the follow through f.unconfirmed.
func (f *follower) writeCheckpoints(ctx context.Context, queue <-chan syncing, state *checkpointState) {
	logger := klog.FromContext(ctx)
	for s := range queue {
		err := <-s.done
		if err != nil {
			err = fmt.Errorf("syncing the archive: %w", err)
		} else if !state.failed.Load() {
			err = f.writeCheckpoint(ctx, s.revision)
		}
		switch {
		case state.failed.Load():
			// Past a failure nothing is written.
		case err != nil:
			state.failed.Store(true)
			if ctx.Err() == nil {
				logger.Error(err, "Moving the archive checkpoint failed; archiving again from the last one", "revision", s.revision)
				f.unconfirmed <- err
			}
		default:
			state.mu.Lock()
			state.writtenAt = f.cfg.Clock.Now()
			state.mu.Unlock()
		}
		state.inFlight.Add(-1)
	}
}

// checkpoint waits until what is appended up to revision is durable in
// the archive, then writes revision as the checkpoint.
func (f *follower) checkpoint(ctx context.Context, revision int64) error {
	if err := f.cfg.Archive.Sync(ctx); err != nil {
		return fmt.Errorf("syncing the archive: %w", err)
	}
	return f.writeCheckpoint(ctx, revision)
}

// writeCheckpoint writes revision, durable in the archive, as the
// checkpoint.
func (f *follower) writeCheckpoint(ctx context.Context, revision int64) error {
	writeCtx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if err := writeCheckpoint(writeCtx, f.client, Checkpoint{Revision: revision, Time: f.cfg.Clock.Now()}); err != nil {
		return err
	}
	f.checkpointed.Store(revision)
	f.checkpoints.Add(1)
	f.health.Progress(ctx)
	checkpointRevision.Set(float64(revision))
	return nil
}

// finalCheckpoint checkpoints what is appended when a follow ends, so that
// a restart repeats as little as possible.
func (f *follower) finalCheckpoint(ctx context.Context) {
	revision := f.appended.Load()
	if revision == f.checkpointed.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	defer cancel()
	if err := f.checkpoint(ctx, revision); err != nil {
		klog.FromContext(ctx).Error(err, "Writing the archive checkpoint at stop failed", "revision", revision)
	}
}

// recordLag sets the lag gauges, and reports work while etcd holds
// revisions past the checkpoint.
func (f *follower) recordLag() {
	if len(f.batch) > 0 || f.seen > f.checkpointed.Load() {
		f.health.Busy()
	} else {
		f.health.Idle()
	}
	lagRevisions.Set(float64(max(f.seen-f.appended.Load(), 0)))
	if len(f.batch) == 0 {
		lagSeconds.Set(0)
		return
	}
	lagSeconds.Set(f.cfg.Clock.Since(f.batch[0].received).Seconds())
}
