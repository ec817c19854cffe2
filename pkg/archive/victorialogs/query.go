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
		fmt.Fprintf(&b, "%s:=%s", strconv.Quote(column(r.Field)), strconv.Quote(r.Value))
	}
	if b.Len() == 0 {
		b.WriteByte('*')
	}
	return b.String(), nil
}

// candidate is a row read by a page query.
type candidate struct {
	record archive.Record
	rv     uint64
}

// queryPage answers q: newest first, one record per UID, the state with the
// greatest resourceVersion in the window, if it matches q.Fields.
//
// It reads rows matching q newest first in batches; a row is the answer
// for its UID if no row of that UID in the window (matching q or not) has
// a greater resourceVersion, which one more query per batch checks for
// the batch's UIDs (a filter on rv prunes the engine's blocks by their
// min and max).
func queryPage(ctx context.Context, r runner, q archive.Query, retention time.Duration, now time.Time) (archive.Page, error) {
	if q.Limit <= 0 {
		return archive.Page{}, fmt.Errorf("%w: limit %d", archive.ErrInvalidQuery, q.Limit)
	}
	base, err := filter(&q)
	if err != nil {
		return archive.Page{}, err
	}
	w := queryWindow(&q, retention, now)
	batch := min(max(2*q.Limit, minBatch), maxBatch)

	var page archive.Page
	emitted := map[string]bool{}
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
		rows, err := readBatch(ctx, r, base, lo, hi, pos, batch)
		if err != nil {
			return archive.Page{}, err
		}
		newest, err := newestStates(ctx, r, &q, w, rows)
		if err != nil {
			return archive.Page{}, err
		}
		for i := range rows {
			c := &rows[i]
			if emitted[c.record.UID] || newest[c.record.UID] != c.rv {
				continue
			}
			if len(page.Records) == q.Limit {
				// Another record follows: the page continues.
				last := page.Records[len(page.Records)-1]
				page.Next = &archive.Cursor{Time: last.Time, UID: last.UID}
				return page, nil
			}
			emitted[c.record.UID] = true
			page.Records = append(page.Records, c.record)
		}
		if len(rows) == batch {
			// The slice may hold more rows: continue after the last one.
			last := rows[len(rows)-1].record
			pos = &archive.Cursor{Time: last.Time, UID: last.UID}
			hi = last.Time.Add(1)
			continue
		}
		// The slice is read: move to the older one, wider.
		hi, pos = lo, nil
		span *= spanFactor
	}
	if len(page.Records) == q.Limit && hi.After(w.since) {
		last := page.Records[len(page.Records)-1]
		page.Next = &archive.Cursor{Time: last.Time, UID: last.UID}
	}
	return page, nil
}

// readBatch reads, newest first, at most n rows matching base in [lo, hi)
// and after pos.
func readBatch(ctx context.Context, r runner, base string, lo, hi time.Time, pos *archive.Cursor, n int) ([]candidate, error) {
	timeFilter := fmt.Sprintf("_time:[%s, %s)", formatTime(lo), formatTime(hi))
	if pos != nil {
		// Rows at pos.Time come after pos only with a greater UID.
		timeFilter += fmt.Sprintf(" (_time:[%s, %s) OR %s:>%s)", formatTime(lo), formatTime(pos.Time), colUID, strconv.Quote(pos.UID))
	}
	query := fmt.Sprintf("%s %s | sort by (_time desc, %s) limit %d", timeFilter, base, colUID, n)
	var rows []candidate
	err := r.run(ctx, query, func(row map[string]string) error {
		rec, err := decodeRecord(row)
		if err != nil {
			return err
		}
		rv, err := strconv.ParseUint(rec.ResourceVersion, 10, 64)
		if err != nil {
			return fmt.Errorf("row of %s: resourceVersion %q: %w", rec.UID, rec.ResourceVersion, err)
		}
		rows = append(rows, candidate{record: rec, rv: rv})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The engine sorts; sort again, since rows may reach fn out of order.
	slices.SortStableFunc(rows, func(a, b candidate) int {
		if c := b.record.Time.Compare(a.record.Time); c != 0 {
			return c
		}
		return strings.Compare(a.record.UID, b.record.UID)
	})
	if len(rows) > n {
		rows = rows[:n]
	}
	return rows, nil
}

// newestStates returns, for the UIDs of rows, the greatest resourceVersion
// of each in the window, among all its rows (matching the query's fields
// or not).
func newestStates(ctx context.Context, r runner, q *archive.Query, w window, rows []candidate) (map[string]uint64, error) {
	newest := map[string]uint64{}
	if len(rows) == 0 {
		return newest, nil
	}
	minRV := rows[0].rv
	uids := make([]string, 0, len(rows))
	for _, c := range rows {
		if _, ok := newest[c.record.UID]; !ok {
			newest[c.record.UID] = 0
			uids = append(uids, strconv.Quote(c.record.UID))
		}
		minRV = min(minRV, c.rv)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "_time:[%s, %s)", formatTime(w.since), formatTime(w.until))
	if q.Namespace != "" {
		fmt.Fprintf(&b, " {%s=%s}", colNamespace, strconv.Quote(q.Namespace))
	}
	fmt.Fprintf(&b, " %s:>=%d %s:in(%s) | stats by (%s) max(%s) as %s", colRV, minRV, colUID, strings.Join(uids, ","), colUID, colRV, colRV)
	err := r.run(ctx, b.String(), func(row map[string]string) error {
		rv, err := strconv.ParseUint(row[colRV], 10, 64)
		if err != nil {
			return fmt.Errorf("newest state of %s: %q: %w", row[colUID], row[colRV], err)
		}
		newest[row[colUID]] = rv
		return nil
	})
	return newest, err
}
