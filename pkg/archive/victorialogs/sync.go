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
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/pkg/archive"
)

// unsynced is what a Sync must find visible and on disk: the states
// appended since the last Sync began.
type unsynced struct {
	states         map[string]bool // uid@resourceVersion
	since, until   time.Time       // their times
	oldest, newest uint64          // their resourceVersions
	namespaces     map[string]bool
}

func (u *unsynced) add(r *archive.Record) error {
	rv, err := strconv.ParseUint(r.ResourceVersion, 10, 64)
	if err != nil {
		return fmt.Errorf("record %s: resourceVersion %q: %w", r.UID, r.ResourceVersion, err)
	}
	if u.states == nil {
		u.states, u.namespaces = map[string]bool{}, map[string]bool{}
		u.since, u.until, u.oldest, u.newest = r.Time, r.Time, rv, rv
	}
	u.states[r.UID+"@"+r.ResourceVersion] = true
	u.namespaces[r.Namespace] = true
	u.since, u.until = minTime(u.since, r.Time), maxTime(u.until, r.Time)
	u.oldest, u.newest = min(u.oldest, rv), max(u.newest, rv)
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

// merge adds what v holds to u.
func (u *unsynced) merge(v unsynced) {
	if v.states == nil {
		return
	}
	if u.states == nil {
		*u = v
		return
	}
	for k := range v.states {
		u.states[k] = true
	}
	for ns := range v.namespaces {
		u.namespaces[ns] = true
	}
	u.since, u.until = minTime(u.since, v.since), maxTime(u.until, v.until)
	u.oldest, u.newest = min(u.oldest, v.oldest), max(u.newest, v.newest)
}

// filter selects the rows of u's states, and perhaps a few more (other
// states of the same namespaces, times and resourceVersions).
func (u *unsynced) filter() string {
	ns := make([]string, 0, len(u.namespaces))
	for n := range u.namespaces {
		ns = append(ns, strconv.Quote(n))
	}
	slices.Sort(ns)
	return fmt.Sprintf("_time:[%s, %s] {%s in (%s)} %s:range[%d, %d]", formatTime(u.since), formatTime(u.until),
		colNamespace, strings.Join(ns, ","), colRV, u.oldest, u.newest)
}

// appendLog is what was appended since the last Sync began, for the Syncs
// of both archives: Append records what the engine keeps; Sync takes it,
// flushes, waits until it is on disk, and gives it back to the next Sync
// when that failed.
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

// sync makes what was recorded before it searchable (flush) and waits, at
// most within, until it is visible in r and on disk (waitOnDisk).
func (l *appendLog) sync(ctx context.Context, r runner, flush func(context.Context) error, within time.Duration) (err error) {
	l.mu.Lock()
	u := l.u
	l.u = unsynced{}
	l.mu.Unlock()
	if u.states == nil {
		return nil
	}
	defer func() {
		if err != nil {
			// The next Sync waits for them again.
			l.mu.Lock()
			l.u.merge(u)
			l.mu.Unlock()
		}
	}()
	if err := flush(ctx); err != nil {
		return err
	}
	return waitOnDisk(ctx, r, u, within)
}

// waitOnDisk waits, within the given time, until every state of u is
// visible in r and none of their blocks is in memory only: the engine
// writes in-memory parts to files on a timer of its flush interval, and a
// state still in memory is lost if the engine stops. There is no call to
// write them at once, so Sync polls for it.
func waitOnDisk(ctx context.Context, r runner, u unsynced, within time.Duration) error {
	filter := u.filter()
	visible := fmt.Sprintf("%s | stats count_uniq(%s, %s) as n", filter, colUID, colRV)
	inMemory := fmt.Sprintf("%s | block_stats | filter part_path:=\"\" | stats count() as n", filter)
	var seen, unflushed int
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		for _, probe := range []struct {
			query string
			n     *int
		}{{visible, &seen}, {inMemory, &unflushed}} {
			*probe.n = -1 // no answer row is no answer
			err := r.run(ctx, probe.query, func(row map[string]string) error {
				n, err := strconv.Atoi(row["n"])
				*probe.n = n
				return err
			})
			if err != nil {
				return false, err
			}
		}
		return seen >= len(u.states) && unflushed == 0, nil
	})
	if err != nil {
		return archive.Unavailable("waiting for the archive to show the %d states appended since the last sync on disk (%d visible, blocks of %d columns in memory): %w",
			len(u.states), seen, unflushed, err)
	}
	return nil
}
