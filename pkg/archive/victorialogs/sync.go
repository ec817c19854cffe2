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

package victorialogs

import (
	"cmp"
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/pkg/archive"
)

// maxStatesPerProbe bounds the states one query of a Sync counts. The
// engine refuses a count_uniq whose set of values outgrows 40 % of its
// memory budget: at the embedded engine's 64 MiB, between 400,000 and
// 500,000 states of (uid, rv). A Sync therefore verifies its states by
// ranges of resourceVersions of at most this many states (more only when
// one resourceVersion holds more), whatever its backlog.
const maxStatesPerProbe = 100_000

// maxProbeNamespacesBytes bounds the list of namespaces a probe names: a
// service refuses a query longer than its -search.maxQueryLen (16 KiB by
// default). A probe of states in more namespaces selects by time and
// resourceVersion alone.
const maxProbeNamespacesBytes = 4 << 10

// uidSeed seeds the hashes of the UIDs of unsynced states.
var uidSeed = maphash.MakeSeed()

// state is an appended state as a Sync looks for it, in 32 bytes: a
// backlog of a million states costs 32 MB.
type state struct {
	rv uint64
	// uid is a hash of the UID: two states of one resourceVersion are
	// taken for one when their UIDs' hashes collide, with a probability
	// of one in 2^64.
	uid  uint64
	time int64  // Record.Time in Unix nanoseconds
	ns   uint32 // index in unsynced.namespaces
}

func compareStates(a, b state) int {
	return cmp.Or(cmp.Compare(a.rv, b.rv), cmp.Compare(a.uid, b.uid))
}

// unsynced is what a Sync must find visible and on disk: the states
// appended since the last Sync began, and those a failed Sync gave back.
// A state appended twice is held twice until a Sync takes them.
type unsynced struct {
	states     []state
	namespaces []string
	nsIndex    map[string]uint32
}

// namespace returns the index of ns in u.namespaces, adding it if needed.
func (u *unsynced) namespace(ns string) uint32 {
	i, ok := u.nsIndex[ns]
	if !ok {
		if u.nsIndex == nil {
			u.nsIndex = map[string]uint32{}
		}
		i = uint32(len(u.namespaces))
		u.namespaces = append(u.namespaces, ns)
		u.nsIndex[ns] = i
	}
	return i
}

func (u *unsynced) add(r *archive.Record) error {
	rv, err := strconv.ParseUint(r.ResourceVersion, 10, 64)
	if err != nil {
		return fmt.Errorf("record %s: resourceVersion %q: %w", r.UID, r.ResourceVersion, err)
	}
	u.states = append(u.states, state{
		rv:   rv,
		uid:  maphash.String(uidSeed, r.UID),
		time: r.Time.UnixNano(),
		ns:   u.namespace(r.Namespace),
	})
	return nil
}

// addKept adds the records the engine keeps: it drops what is older than
// its retention, and Sync cannot wait for that; nor for what is close to
// either end of what it keeps.
func (u *unsynced) addKept(records []archive.Record, retention time.Duration, now time.Time) error {
	oldest, newest := now.Add(-retention+time.Hour), now.Add(24*time.Hour)
	for i := range records {
		if r := &records[i]; r.Time.After(oldest) && r.Time.Before(newest) {
			if err := u.add(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// merge adds states, whose namespaces index namespaces, to u.
func (u *unsynced) merge(namespaces []string, states []state) {
	const unmapped = ^uint32(0)
	index := make([]uint32, len(namespaces))
	for i := range index {
		index[i] = unmapped
	}
	u.states = slices.Grow(u.states, len(states))
	for _, s := range states {
		if index[s.ns] == unmapped {
			index[s.ns] = u.namespace(namespaces[s.ns])
		}
		s.ns = index[s.ns]
		u.states = append(u.states, s)
	}
}

// probes sorts u's states by resourceVersion, drops the repeats, and
// cuts them into probes of disjoint resourceVersion ranges of at most
// perProbe states each (more only when one resourceVersion holds more).
func (u *unsynced) probes(perProbe int) []*probe {
	slices.SortFunc(u.states, compareStates)
	u.states = slices.CompactFunc(u.states, func(a, b state) bool { return compareStates(a, b) == 0 })
	var probes []*probe
	for rest := u.states; len(rest) > 0; {
		n := min(perProbe, len(rest))
		for n < len(rest) && rest[n].rv == rest[n-1].rv {
			n++
		}
		probes = append(probes, newProbe(rest[:n:n], u.namespaces))
		rest = rest[n:]
	}
	return probes
}

// probe verifies one range of states: the rows of its filter hold them
// all, and none of those rows is in a block held in memory only.
type probe struct {
	states []state // sorted by resourceVersion
	filter string
	// visible is the number of distinct states the filter's rows held at
	// the last count; inMemory the number of in-memory blocks' columns
	// among them at the last look; -1 before the first.
	visible, inMemory int
	durable           bool
}

// newProbe returns the probe of states, sorted by resourceVersion, whose
// namespaces index namespaces. Its filter selects their rows, and perhaps
// a few more: other states of the same times and resourceVersions (and
// namespaces).
func newProbe(states []state, namespaces []string) *probe {
	since, until := states[0].time, states[0].time
	in := map[uint32]bool{}
	for _, s := range states {
		since, until = min(since, s.time), max(until, s.time)
		in[s.ns] = true
	}
	quoted := make([]string, 0, len(in))
	for i := range in {
		quoted = append(quoted, strconv.Quote(namespaces[i]))
	}
	slices.Sort(quoted)
	var filter strings.Builder
	fmt.Fprintf(&filter, "_time:[%s, %s] ", formatTime(time.Unix(0, since)), formatTime(time.Unix(0, until)))
	if list := strings.Join(quoted, ","); len(list) <= maxProbeNamespacesBytes {
		fmt.Fprintf(&filter, "{%s in (%s)} ", colNamespace, list)
	}
	fmt.Fprintf(&filter, "%s:range[%d, %d]", colRV, states[0].rv, states[len(states)-1].rv)
	return &probe{states: states, filter: filter.String(), visible: -1, inMemory: -1}
}

// check asks r whether p's states are durable. It first looks for blocks
// in memory, which is cheap, and counts the states (count_uniq, the cost
// bounded by maxStatesPerProbe) only when there is none; it then looks
// for blocks in memory again, as rows that were not visible yet were in
// no block at the first look.
func (p *probe) check(ctx context.Context, r runner) error {
	inMemory := p.filter + ` | block_stats | filter part_path:="" | stats count() as n`
	if err := p.count(ctx, r, inMemory, &p.inMemory); err != nil || p.inMemory != 0 {
		return err
	}
	if err := p.count(ctx, r, fmt.Sprintf("%s | stats count_uniq(%s, %s) as n", p.filter, colUID, colRV), &p.visible); err != nil || p.visible < len(p.states) {
		return err
	}
	if err := p.count(ctx, r, inMemory, &p.inMemory); err != nil {
		return err
	}
	p.durable = p.inMemory == 0
	return nil
}

// status describes what p last found.
func (p *probe) status() string {
	span := fmt.Sprintf("resourceVersions %d to %d", p.states[0].rv, p.states[len(p.states)-1].rv)
	switch {
	case p.inMemory > 0:
		return fmt.Sprintf("%s: blocks of %d columns in memory", span, p.inMemory)
	case p.visible >= 0:
		return fmt.Sprintf("%s: %d of %d states visible", span, p.visible, len(p.states))
	}
	return span + ": no answer"
}

// count runs query, which answers one row with a number n, into *n; a
// query that fails leaves *n as it was.
func (p *probe) count(ctx context.Context, r runner, query string, n *int) error {
	answer := -1 // no answer row is no answer
	err := r.run(ctx, query, func(row map[string]string) (err error) {
		answer, err = strconv.Atoi(row["n"])
		return err
	})
	if err != nil {
		return err
	}
	*n = answer
	return nil
}

// appendLog is what was appended since the last Sync began, for the Syncs
// of both archives: Append records what the engine keeps; Sync takes it,
// flushes, waits until it is on disk, and gives what it did not find on
// disk back to the next Sync when it failed.
type appendLog struct {
	mu sync.Mutex
	u  unsynced
}

// record adds the records an Append sent.
func (l *appendLog) record(records []archive.Record, retention time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.u.addKept(records, retention, time.Now())
}

// backlog is the number of states the next Sync waits for, counting a
// state appended twice twice.
func (l *appendLog) backlog() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.u.states)
}

// flushFunc makes what was appended searchable, and on disk if it can: days
// are the engine's partitions (UTC days, YYYYMMDD) the appended states are
// in.
type flushFunc func(ctx context.Context, days []string) error

// days returns the UTC days (YYYYMMDD) of u's states, in order.
func (u *unsynced) days() []string {
	var days []string
	for _, s := range u.states {
		day := time.Unix(0, s.time).UTC().Format("20060102")
		if !slices.Contains(days, day) {
			days = append(days, day)
		}
	}
	slices.Sort(days)
	return days
}

// sync makes what was recorded before it searchable (flush) and waits, at
// most within, until it is visible in r and on disk (waitOnDisk).
func (l *appendLog) sync(ctx context.Context, r runner, flush flushFunc, within time.Duration) (err error) {
	l.mu.Lock()
	u := l.u
	l.u = unsynced{}
	l.mu.Unlock()
	if len(u.states) == 0 {
		return nil
	}
	probes := u.probes(maxStatesPerProbe)
	defer func() {
		if err != nil {
			// The next Sync waits for what this one did not find on disk.
			l.mu.Lock()
			for _, p := range probes {
				if !p.durable {
					l.u.merge(u.namespaces, p.states)
				}
			}
			l.mu.Unlock()
		}
	}()
	if err := flush(ctx, u.days()); err != nil {
		return err
	}
	return waitOnDisk(ctx, r, probes, within)
}

// waitOnDisk waits, within the given time, until every probe found its
// states visible in r and none of their blocks in memory only: a state
// still in memory is lost if the engine stops. The flush before it wrote
// them to disk if the engine can (a partition snapshot); a cluster's
// storage nodes write them on a timer of their flush interval, which
// waitOnDisk then waits for. Each probe's queries are bounded by
// maxStatesPerProbe, and a probe that found its states on disk is not
// asked again.
func waitOnDisk(ctx context.Context, r runner, probes []*probe, within time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		done := true
		for _, p := range probes {
			if p.durable {
				continue
			}
			if err := p.check(ctx, r); err != nil {
				return false, err
			}
			done = done && p.durable
		}
		return done, nil
	})
	if err != nil {
		var states, durable int
		var waiting []string
		for _, p := range probes {
			states += len(p.states)
			if p.durable {
				durable += len(p.states)
			} else if len(waiting) < 3 {
				waiting = append(waiting, p.status())
			}
		}
		return archive.Unavailable("waiting for the archive to show the %d states appended since the last sync on disk (%d are; %s): %w",
			states, durable, strings.Join(waiting, "; "), err)
	}
	return nil
}
