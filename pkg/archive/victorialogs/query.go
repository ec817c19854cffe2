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
	"time"

	"k8s.io/apimachinery/pkg/selection"

	"github.com/kube-events/events-apiserver/pkg/archive"
	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
)

// runner runs LogsQL queries: in process (Embedded) or over HTTP.
type runner interface {
	// run runs query and calls fn with each row of its answer, a column
	// name to value map that fn must not keep. An answer the engine could
	// not complete is an error wrapping archive.ErrUnavailable.
	run(ctx context.Context, query string, fn func(row map[string]string) error) error
}

// Paging reads the window newest first in slices of time (firstSpan, then
// each one spanFactor times the one before) so that the engine sorts the
// rows of a slice, not of the whole window, to find the newest: the same
// idea as VictoriaLogs' own optimization of "last N" queries.
const (
	firstSpan  = time.Hour
	spanFactor = 4
	// minBatch and maxBatch bound the rows read per query: a page needs
	// more rows than records, since the older states of an event are
	// read and dropped.
	minBatch = 100
	maxBatch = 5000
	// maxPage bounds the records of a page (the last query names each),
	// whatever the limit; Page.Next continues.
	maxPage = 1000
	// maxQueryUIDs bounds the UIDs one query names: a VictoriaLogs service
	// refuses a query longer than its -search.maxQueryLen (16 KiB by
	// default), and a UID takes 39 bytes of it, its resourceVersion a
	// dozen more. The UIDs of a page are read in as many queries as it
	// takes.
	maxQueryUIDs = 200
)

// window is a query's time window after defaults and retention: [since, until).
type window struct {
	since, until time.Time
}

// queryWindow completes q's window: retention bounds Since (older
// partitions may be gone already, or not yet), and an open Until is the
// furthest future the engine stores (a day).
func queryWindow(q *archive.Query, retention time.Duration, now time.Time) window {
	w := window{since: q.Since, until: q.Until}
	if retention > 0 {
		if oldest := now.Add(-retention); w.since.Before(oldest) {
			w.since = oldest
		}
	}
	if w.until.IsZero() {
		w.until = now.Add(48 * time.Hour)
	}
	return w
}

// filter is the LogsQL filter of q's namespace and field terms.
func filter(q *archive.Query) (string, error) {
	var b strings.Builder
	if q.Namespace != "" {
		fmt.Fprintf(&b, "{%s=%s}", colNamespace, strconv.Quote(q.Namespace))
	}
	for _, r := range q.Fields {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		switch r.Operator {
		case selection.Equals, selection.DoubleEquals:
		case selection.NotEquals:
			b.WriteString("NOT ")
		default:
			return "", fmt.Errorf("%w: field %q: operator %q", archive.ErrInvalidQuery, r.Field, r.Operator)
		}
		if r.Field == eventconversion.FieldAncestor {
			b.WriteString(ancestorFilter(r.Value))
			continue
		}
		fmt.Fprintf(&b, "%s:=%s", strconv.Quote(column(r.Field)), strconv.Quote(r.Value))
	}
	if b.Len() == 0 {
		b.WriteByte('*')
	}
	return b.String(), nil
}

// ancestorFilter is the LogsQL filter of an ancestor term: the regarding
// object is the one value names (its Kind/name or UID), or value is in the
// chain of its ancestors, a JSON array of strings (pkg/ownerchain).
func ancestorFilter(value string) string {
	regarding := func(f string) string {
		return strconv.Quote(column(eventconversion.PrefixInvolvedObject + f))
	}
	self := fmt.Sprintf("%s:=%s", regarding("uid"), strconv.Quote(value))
	if kind, name, ok := strings.Cut(value, "/"); ok {
		self = fmt.Sprintf("%s:=%s %s:=%s", regarding("kind"), strconv.Quote(kind), regarding("name"), strconv.Quote(name))
	}
	return fmt.Sprintf("(%s OR %s:json_array_contains_any(%s))", self, strconv.Quote(column(eventconversion.FieldAncestor)), strconv.Quote(value))
}

// candidate is a row read by a page query: its order key and state.
type candidate struct {
	time time.Time
	uid  string
	rv   uint64
	ns   string
}

func (c *candidate) cursor() *archive.Cursor {
	return &archive.Cursor{Time: c.time, UID: c.uid}
}

// queryPage answers q: newest first, one record per UID, the state with the
// greatest resourceVersion in the window, if it matches q.Fields.
//
// It reads the order keys and states of the rows matching q newest first,
// in batches; a row is the answer for its UID if no row of that UID in the
// window (matching q or not) has a greater resourceVersion, which one more
// query checks for the UIDs read (usually one per page). A last query reads the whole
// rows of the page's records: reading every column of every row the
// engine sorts costs a hundred times more than three.
func queryPage(ctx context.Context, r runner, q archive.Query, retention time.Duration, now time.Time) (archive.Page, error) {
	if q.Limit <= 0 {
		return archive.Page{}, fmt.Errorf("%w: limit %d", archive.ErrInvalidQuery, q.Limit)
	}
	base, err := filter(&q)
	if err != nil {
		return archive.Page{}, err
	}
	w := queryWindow(&q, retention, now)
	q.Limit = min(q.Limit, maxPage)
	batch := min(max(2*q.Limit, minBatch), maxBatch)

	b := pageBuilder{limit: q.Limit, emitted: map[string]bool{}, pendingUIDs: map[string]bool{}}
	// The scan position: rows strictly after pos (when set) and before hi.
	pos := q.After
	hi := w.until
	if pos != nil && pos.Time.Before(hi) {
		hi = pos.Time.Add(1) // pos.Time itself, for the UIDs after pos.UID
	} else {
		pos = nil
	}
	span := firstSpan
	for hi.After(w.since) {
		lo := w.since
		if l := hi.Add(-span); l.After(lo) {
			lo = l
		}
		rows, err := readBatch(withPhase(ctx, PhaseFind), r, base, lo, hi, pos, batch)
		if err != nil {
			return archive.Page{}, err
		}
		b.add(rows)
		if len(rows) == batch {
			// The slice may hold more rows: continue after the last one.
			pos = rows[len(rows)-1].cursor()
			hi = pos.Time.Add(1)
		} else {
			// The slice is read: move to the older one, wider.
			hi, pos = lo, nil
			span *= spanFactor
		}
		// Enough UIDs to fill the page and tell whether another follows,
		// unless some turn out to have their newest state elsewhere.
		if len(b.pendingUIDs) > q.Limit-len(b.page) {
			done, err := b.decide(ctx, r, w)
			if err != nil {
				return archive.Page{}, err
			}
			if done {
				break
			}
		}
	}
	if b.next == nil && len(b.pending) > 0 {
		if _, err := b.decide(ctx, r, w); err != nil {
			return archive.Page{}, err
		}
	}
	records, err := readRecords(withPhase(ctx, PhaseFetch), r, b.page)
	if err != nil {
		return archive.Page{}, err
	}
	return archive.Page{Records: records, Next: b.next}, nil
}

// pageBuilder gathers the records of a page from the rows queryPage reads.
type pageBuilder struct {
	limit int
	// page is the records taken, next the cursor of the page that follows
	// (nil: none), and emitted their UIDs.
	page    []candidate
	next    *archive.Cursor
	emitted map[string]bool
	// pending are the rows read and not yet decided, in order, and
	// pendingUIDs their distinct UIDs.
	pending     []candidate
	pendingUIDs map[string]bool
}

// add adds rows read to the pending ones.
func (b *pageBuilder) add(rows []candidate) {
	for _, c := range rows {
		b.pending = append(b.pending, c)
		b.pendingUIDs[c.uid] = true
	}
}

// decide checks the pending rows' UIDs in one query and takes the rows
// that are their UID's newest state in w; it reports whether the page is
// complete.
func (b *pageBuilder) decide(ctx context.Context, r runner, w window) (bool, error) {
	newest, err := newestStates(withPhase(ctx, PhaseCheck), r, w, b.pending)
	if err != nil {
		return false, err
	}
	for i := range b.pending {
		c := &b.pending[i]
		if b.emitted[c.uid] || newest[c.uid] != c.rv {
			continue
		}
		if len(b.page) == b.limit {
			// Another record follows: the page continues.
			b.next = b.page[len(b.page)-1].cursor()
			return true, nil
		}
		b.emitted[c.uid] = true
		b.page = append(b.page, *c)
	}
	b.pending = b.pending[:0]
	clear(b.pendingUIDs)
	return false, nil
}

// readBatch reads the order keys and states of at most n rows matching
// base in [lo, hi) and after pos, newest first.
func readBatch(ctx context.Context, r runner, base string, lo, hi time.Time, pos *archive.Cursor, n int) ([]candidate, error) {
	timeFilter := fmt.Sprintf("_time:[%s, %s)", formatTime(lo), formatTime(hi))
	if pos != nil {
		// Rows at pos.Time come after pos only with a greater UID.
		timeFilter += fmt.Sprintf(" (_time:[%s, %s) OR %s:>%s)", formatTime(lo), formatTime(pos.Time), colUID, strconv.Quote(pos.UID))
	}
	query := fmt.Sprintf("%s %s %s | fields _time, %s, %s, %s | sort by (_time desc, %s) limit %d", timeFilter, base, stateRows, colUID, colRV, colNamespace, colUID, n)
	var rows []candidate
	err := r.run(ctx, query, func(row map[string]string) error {
		t, err := time.Parse(time.RFC3339Nano, row[colTime])
		if err != nil {
			return fmt.Errorf("row of %s: %w", row[colUID], err)
		}
		rv, err := strconv.ParseUint(row[colRV], 10, 64)
		if err != nil {
			return fmt.Errorf("row of %s: resourceVersion %q: %w", row[colUID], row[colRV], err)
		}
		rows = append(rows, candidate{time: t, uid: row[colUID], rv: rv, ns: row[colNamespace]})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The engine sorts; sort again, since rows may reach fn out of order.
	slices.SortStableFunc(rows, func(a, b candidate) int {
		if c := b.time.Compare(a.time); c != 0 {
			return c
		}
		return strings.Compare(a.uid, b.uid)
	})
	if len(rows) > n {
		rows = rows[:n]
	}
	return rows, nil
}

// readRecords reads the rows of page's states, in page's order, at most
// maxQueryUIDs a query.
func readRecords(ctx context.Context, r runner, page []candidate) ([]archive.Record, error) {
	if len(page) == 0 {
		return nil, nil
	}
	type key struct {
		uid string
		rv  string
	}
	found := make(map[key]archive.Record, len(page))
	for chunk := range slices.Chunk(page, maxQueryUIDs) {
		oldest, newest := chunk[0].time, chunk[0].time
		uids := make([]string, 0, len(chunk))
		rvs := make([]string, 0, len(chunk))
		for _, c := range chunk {
			oldest, newest = minTime(oldest, c.time), maxTime(newest, c.time)
			uids = append(uids, strconv.Quote(c.uid))
			rvs = append(rvs, strconv.Quote(strconv.FormatUint(c.rv, 10)))
		}
		var b strings.Builder
		fmt.Fprintf(&b, "_time:[%s, %s] %s", formatTime(oldest), formatTime(newest), streamFilter(chunk))
		fmt.Fprintf(&b, " %s:in(%s) %s:in(%s)", colUID, strings.Join(uids, ","), colRV, strings.Join(rvs, ","))
		err := r.run(ctx, b.String(), func(row map[string]string) error {
			rec, err := decodeRecord(row)
			if err != nil {
				return err
			}
			found[key{rec.UID, rec.ResourceVersion}] = rec
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	records := make([]archive.Record, 0, len(page))
	for _, c := range page {
		rec, ok := found[key{c.uid, strconv.FormatUint(c.rv, 10)}]
		if !ok || !rec.Time.Equal(c.time) {
			// Retention dropped the day between the two reads.
			return nil, archive.Unavailable("the archive's record %s@%d went away during the query", c.uid, c.rv)
		}
		records = append(records, rec)
	}
	return records, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// newestStates returns, for the UIDs of rows, the greatest resourceVersion
// of each in the window, among all its rows (matching the query's fields
// or not), at most maxQueryUIDs a query. The rows' namespaces narrow it
// to their streams.
func newestStates(ctx context.Context, r runner, w window, rows []candidate) (map[string]uint64, error) {
	newest := map[string]uint64{}
	// One row for each UID, for its namespace.
	var distinct []candidate
	for _, c := range rows {
		if _, ok := newest[c.uid]; !ok {
			newest[c.uid] = 0
			distinct = append(distinct, c)
		}
	}
	for chunk := range slices.Chunk(distinct, maxQueryUIDs) {
		uids := make([]string, len(chunk))
		for i, c := range chunk {
			uids[i] = strconv.Quote(c.uid)
		}
		// The UIDs' bloom filters find their blocks; a filter on rv (to
		// skip older states) would cost more than it saves: the engine
		// reads the column of every block in the window to apply it.
		var b strings.Builder
		fmt.Fprintf(&b, "_time:[%s, %s) %s", formatTime(w.since), formatTime(w.until), streamFilter(chunk))
		fmt.Fprintf(&b, " %s:in(%s) | stats by (%s) max(%s) as %s", colUID, strings.Join(uids, ","), colUID, colRV, colRV)
		err := r.run(ctx, b.String(), func(row map[string]string) error {
			rv, err := strconv.ParseUint(row[colRV], 10, 64)
			if err != nil {
				return fmt.Errorf("newest state of %s: %q: %w", row[colUID], row[colRV], err)
			}
			newest[row[colUID]] = rv
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return newest, nil
}

// streamFilter selects the streams (namespaces) of rows.
func streamFilter(rows []candidate) string {
	seen := map[string]bool{}
	var ns []string
	for _, c := range rows {
		if !seen[c.ns] {
			seen[c.ns] = true
			ns = append(ns, strconv.Quote(c.ns))
		}
	}
	return fmt.Sprintf("{%s in (%s)}", colNamespace, strings.Join(ns, ","))
}
