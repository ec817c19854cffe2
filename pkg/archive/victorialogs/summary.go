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
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/fields"

	"github.com/kube-events/events-apiserver/pkg/archive"
	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
)

// The columns of a summary row: the key's fields, the regarded object, and
// the names the query gives its results.
var (
	colType       = column(eventconversion.FieldType)
	colReason     = column(eventconversion.FieldReason)
	colKind       = column(eventconversion.PrefixInvolvedObject + "kind")
	colController = column(eventconversion.FieldReportingComponent)
	colObjectNS   = column(eventconversion.PrefixInvolvedObject + "namespace")
	colObjectName = column(eventconversion.PrefixInvolvedObject + "name")
	summaryKey    = []string{colNamespace, colType, colReason, colKind, colController}
)

const (
	colState     = "state"
	colObjectKey = "object"
	colLast      = "last"
	colRows      = "rows"
	colEvents    = "events"
	colSingles   = "singles"
	colObjects   = "objects"
	colFirstTime = "first_time"
	colKnown     = "known"
)

// summarize answers q: each UID's newest state in the window (the page's
// rule), kept if it matches q.Fields, counted by the summary's key.
// Occurrences are colOccurrences, or 1 where it is left out; the first
// observation is colFirst, or the time where it is left out.
//
// The newest states are found by their (UID, resourceVersion), which a
// subquery reads (stats by uid, max of rv): the counts then read the
// stored columns of those rows alone, in parallel. A state appended twice
// is two rows; a row of the answer that counts more rows than UIDs says
// so, and the summary is counted again by the exact query, which keeps one
// state per UID (row_max) at three times the cost.
func summarize(ctx context.Context, r runner, q archive.SummaryQuery, retention time.Duration, now time.Time) ([]archive.SummaryRow, error) {
	if len(q.Except) > archive.MaxExcept || len(q.Objects) > archive.MaxObjects {
		return nil, fmt.Errorf("%w: %d UIDs and %d objects left out, at most %d and %d", archive.ErrInvalidQuery,
			len(q.Except), len(q.Objects), archive.MaxExcept, archive.MaxObjects)
	}
	s, err := newSummaryQuery(&q, retention, now)
	if err != nil {
		return nil, err
	}
	rows, duplicates, err := runSummary(ctx, r, s.newest())
	if err != nil || !duplicates {
		return rows, err
	}
	rows, _, err = runSummary(ctx, r, s.exact())
	return rows, err
}

// runSummary runs a summary query; it reports whether a row counted more
// rows than UIDs.
func runSummary(ctx context.Context, r runner, query string) ([]archive.SummaryRow, bool, error) {
	var rows []archive.SummaryRow
	duplicates := false
	err := r.run(withPhase(ctx, PhaseSummary), query, func(row map[string]string) error {
		s, err := summaryRow(row)
		if err != nil {
			return err
		}
		duplicates = duplicates || row[colRows] != row[colEvents]
		rows = append(rows, s)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return rows, duplicates, nil
}

// summaryQuery makes the LogsQL queries of a SummaryQuery.
type summaryQuery struct {
	q *archive.SummaryQuery
	// window selects the state rows of the window and namespace; terms is the
	// filter of q.Fields, "" for none.
	window, terms string
}

func newSummaryQuery(q *archive.SummaryQuery, retention time.Duration, now time.Time) (summaryQuery, error) {
	terms, err := filter(&archive.Query{Fields: q.Fields})
	if err != nil {
		return summaryQuery{}, err
	}
	if terms == "*" {
		terms = ""
	}
	w := queryWindow(&archive.Query{Since: q.Since, Until: q.Until}, retention, now)
	window := fmt.Sprintf("_time:[%s, %s)", formatTime(w.since), formatTime(w.until))
	if q.Namespace != "" {
		window += fmt.Sprintf(" {%s=%s}", colNamespace, strconv.Quote(q.Namespace))
	}
	window += " " + stateRows
	return summaryQuery{q: q, window: window, terms: terms}, nil
}

// left selects the rows of the window less those of q.Except.
func (s summaryQuery) left() string {
	if len(s.q.Except) == 0 {
		return s.window
	}
	return fmt.Sprintf("%s NOT %s:in(%s)", s.window, colUID, quoteAll(s.q.Except))
}

// candidates selects the rows of the UIDs that may count: those with a
// state that matches the terms (the newest state of an event that counts
// does), so that a term that picks one object reads that object's events.
func (s summaryQuery) candidates() string {
	if s.terms == "" {
		return s.window
	}
	return fmt.Sprintf("%s %s:in(%s %s | fields %s)", s.window, colUID, s.window, s.terms, colUID)
}

// newest is the query that counts the rows that match and are their
// UID's newest state, found by (UID, resourceVersion), not by the
// resourceVersion alone: it is the etcd revision of a state, which a new
// etcd may give again. The subquery leaves q.Except in: it removes whole
// UIDs, which the outer filter does.
func (s summaryQuery) newest() string {
	var b strings.Builder
	b.WriteString(s.left())
	if s.terms != "" {
		fmt.Fprintf(&b, " %s", s.terms)
	}
	state := fmt.Sprintf(`format "<%s>@<%s>" as %s`, colUID, colRV, colState)
	fmt.Fprintf(&b, " | %s | filter %s:in(%s | stats by (%s) max(%s) as %s | %s | fields %s)",
		state, colState, s.candidates(), colUID, colRV, colRV, state, colState)
	s.count(&b, "_time")
	return b.String()
}

// exact is the query that keeps the newest state of each candidate
// (row_max of rv) before it counts: one state per UID, however many rows
// hold it.
func (s summaryQuery) exact() string {
	var b strings.Builder
	b.WriteString(s.left())
	if s.terms != "" {
		fmt.Fprintf(&b, " %s:in(%s %s | fields %s)", colUID, s.window, s.terms, colUID)
	}
	kept := append([]string{colNamespace, "_time", colOccurrences, colFirst, colObjectNS, colObjectName}, summaryKey[1:]...)
	kept = append(kept, termColumns(s.q.Fields)...)
	fmt.Fprintf(&b, " | stats by (%s) row_max(%s, %s) as %s", colUID, colRV, quoteAll(dedup(kept)), colState)
	fmt.Fprintf(&b, " | unpack_json from %s | rename _time as %s", colState, colLast)
	if s.terms != "" {
		fmt.Fprintf(&b, " | filter %s", s.terms)
	}
	s.count(&b, colLast)
	return b.String()
}

// count appends the pipes that count the states by the summary's key;
// last is the column of their time.
func (s summaryQuery) count(b *strings.Builder, last string) {
	fmt.Fprintf(b, ` | format "<%s>/<%s>" as %s`, colObjectNS, colObjectName, colObjectKey)
	fmt.Fprintf(b, " | stats by (%s) count() as %s, count_uniq(%s) as %s, sum(%s) as %s, count() if (%s:\"\") as %s,"+
		" count_uniq(%s) as %s, min(%s) if (%s:*) as %s, min(%s) if (%s:\"\") as %s, max(%s) as %s",
		quoteAll(summaryKey), colRows, colUID, colEvents, colOccurrences, colOccurrences, colOccurrences, colSingles,
		colObjectKey, colObjects, colFirst, colFirst, colFirst, last, colFirst, colFirstTime, last, colLast)
	if len(s.q.Objects) > 0 {
		keys := make([]string, len(s.q.Objects))
		for i, o := range s.q.Objects {
			keys[i] = o.Namespace + "/" + o.Name
		}
		fmt.Fprintf(b, ", uniq_values(%s) if (%s:in(%s)) as %s", colObjectKey, colObjectKey, quoteAll(keys), colKnown)
	}
}

// termColumns are the columns q's terms read.
func termColumns(terms fields.Requirements) []string {
	var cols []string
	for _, r := range terms {
		if r.Field == eventconversion.FieldAncestor {
			for _, f := range []string{"uid", "kind", "name"} {
				cols = append(cols, column(eventconversion.PrefixInvolvedObject+f))
			}
		}
		cols = append(cols, column(r.Field))
	}
	return cols
}

// summaryRow reads a row of a summary query's answer.
func summaryRow(row map[string]string) (archive.SummaryRow, error) {
	s := archive.SummaryRow{
		Namespace: row[colNamespace], Type: row[colType], Reason: row[colReason],
		RegardingKind: row[colKind], ReportingController: row[colController],
	}
	var err error
	integer := func(col string) int64 {
		v := row[col]
		if err != nil || v == "" || v == "NaN" {
			return 0
		}
		f, perr := strconv.ParseFloat(v, 64)
		if perr != nil || math.IsNaN(f) {
			err = fmt.Errorf("summary row: %s %q", col, v)
			return 0
		}
		return int64(f)
	}
	s.Events = integer(colEvents)
	s.Occurrences = integer(colOccurrences) + integer(colSingles)
	s.Objects = integer(colObjects)
	if err != nil {
		return s, err
	}
	if v := row[colFirst]; v != "" {
		// Nanoseconds: more digits than a float holds.
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return s, fmt.Errorf("summary row: first observation %q: %w", v, err)
		}
		s.FirstObserved = time.Unix(0, n).UTC()
	}
	timestamp := func(col string) (time.Time, error) {
		if row[col] == "" {
			return time.Time{}, nil
		}
		return time.Parse(time.RFC3339Nano, row[col])
	}
	if s.LastObserved, err = timestamp(colLast); err != nil {
		return s, fmt.Errorf("summary row: last observation: %w", err)
	}
	first, err := timestamp(colFirstTime)
	if err != nil {
		return s, fmt.Errorf("summary row: first observation: %w", err)
	}
	if !first.IsZero() && (s.FirstObserved.IsZero() || first.Before(s.FirstObserved)) {
		s.FirstObserved = first
	}
	if v := row[colKnown]; v != "" {
		var known []string
		if err := json.Unmarshal([]byte(v), &known); err != nil {
			return s, fmt.Errorf("summary row: known objects %q: %w", v, err)
		}
		for _, k := range known {
			ns, name, _ := strings.Cut(k, "/")
			s.Known = append(s.Known, archive.Object{Namespace: ns, Name: name})
		}
	}
	return s, nil
}

// quoteAll quotes each of values and joins them with commas.
func quoteAll(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = strconv.Quote(v)
	}
	return strings.Join(quoted, ", ")
}

// dedup is values without repeats, in order.
func dedup(values []string) []string {
	seen := map[string]bool{}
	out := values[:0]
	for _, v := range values {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
