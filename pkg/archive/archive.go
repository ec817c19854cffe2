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

package archive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/fields"
)

// Record is one stored state of an event.
type Record struct {
	// UID is the event's metadata.uid: a record per UID is one event.
	UID string
	// Namespace and Name are the event's metadata.namespace and name.
	Namespace, Name string
	// ResourceVersion is the etcd revision of this state, a decimal
	// number: the greatest is the event's newest state.
	ResourceVersion string
	// Time is the newest-first order key: the event's last observation
	// (core.LastObserved: series.lastObservedTime, else lastTimestamp, else
	// eventTime, else creationTimestamp). Engines keep it to the nanosecond.
	Time time.Time
	// Fields are the store's selectable fields for this state, under the
	// internal field names the store's GetAttrs produces; every field
	// selector of every version is translated to these before it reaches
	// the archive.
	Fields map[string]string
	// Object is the event as the store encodes it (protobuf), decoded into
	// the internal type on read, less what the record holds beside it: its
	// metadata's name, namespace, UID and resourceVersion are empty (in
	// states archived before they were left out, they are there and the
	// same), and the reader sets them from the record's.
	Object []byte
	// Occurrences is how many occurrences this state stands for
	// (core.Occurrences); 0 stands for 1. FirstObserved is its first
	// observation (core.FirstObserved); zero stands for Time. Summaries
	// count them without decoding Object.
	Occurrences   int32
	FirstObserved time.Time
}

// Cursor is a position in the newest-first order: a page continues with
// the records after it, those with an older Time, or the same Time and a
// greater UID.
type Cursor struct {
	Time time.Time
	UID  string
}

// Before reports whether the record at (t, uid) comes before c in the
// newest-first order, that is, on a page that ends at c or earlier.
func (c Cursor) Before(t time.Time, uid string) bool {
	if !t.Equal(c.Time) {
		return t.After(c.Time)
	}
	return uid <= c.UID
}

// Query selects the newest state of each event in a window.
type Query struct {
	// Namespace scopes the query; "" is all namespaces.
	Namespace string
	// Fields are = (==) and != terms on Record.Fields, ANDed; a field a
	// record does not have is the empty string, as in the live store.
	// The history.* terms are removed before a query reaches the archive.
	Fields fields.Requirements
	// Since and Until bound Record.Time: [Since, Until). A zero Since or
	// Until leaves that side open.
	Since, Until time.Time
	// Limit is the most records a page holds; it must be positive, and an
	// engine may answer with fewer (see Page.Next).
	Limit int
	// After continues a previous page: only records after it in the
	// newest-first order.
	After *Cursor
}

// Page is one answer to a Query.
type Page struct {
	// Records are newest first by (Time desc, UID asc), one per UID: the
	// newest state of that event (greatest ResourceVersion) among its
	// states with a Time in the window, and only if that state matches
	// Query.Fields. An older state never stands in for a newer one that
	// does not match, so that the archive answers as the live store would
	// for the same events.
	Records []Record
	// Next continues the query after the last record (Query.After); nil
	// when the query has no more records.
	Next *Cursor
}

// SummaryQuery selects the events a summary counts: those every page of a
// Query with the same namespace, terms and window returns (one per UID, its
// newest state in the window, if that state matches), less the events of
// Except.
type SummaryQuery struct {
	Namespace    string
	Fields       fields.Requirements
	Since, Until time.Time
	// Except are the UIDs of events the caller counts from elsewhere (the
	// live store): none of their states is counted. At most MaxExcept.
	Except []string
	// Objects are regarded objects the caller counts from elsewhere too:
	// each row says which of them its events regard (SummaryRow.Known),
	// so that the caller counts each object once. At most MaxObjects.
	Objects []Object
}

// MaxExcept and MaxObjects bound SummaryQuery.Except and Objects: an
// engine names them in its query, and a service bounds a query's length
// (VictoriaLogs: 16 KiB by default, which 100 UIDs and 100 objects of
// usual names leave room in).
const (
	MaxExcept  = 100
	MaxObjects = 100
)

// Object is a regarded object of a summary, its kind in the row.
type Object struct {
	Namespace, Name string
}

// SummaryRow counts the events of one namespace, type, reason, regarding
// kind and reporting controller (reportingComponent's field): the rule of
// the event summaries.
type SummaryRow struct {
	Namespace, Type, Reason, RegardingKind, ReportingController string
	// Events counts the events, Occurrences the occurrences they stand
	// for (Record.Occurrences), Objects their distinct regarded objects.
	Events, Occurrences, Objects int64
	// FirstObserved is the earliest Record.FirstObserved, LastObserved
	// the latest Record.Time.
	FirstObserved, LastObserved time.Time
	// Known are the SummaryQuery.Objects the row's events regard.
	Known []Object
}

// Stats describes what an archive holds.
type Stats struct {
	// Rows is the number of stored states (re-appended states may count
	// more than once until the engine merges them).
	Rows int64
	// DiskBytes is the engine's size on disk.
	DiskBytes int64
}

// Archive stores every state of every event and answers history queries.
// Implementations are safe for concurrent use.
type Archive interface {
	// Append stores records. It returns once the engine has accepted
	// them; they are visible to Query and durable once a later Sync
	// returns. Appending the same (UID, ResourceVersion) again changes no
	// answer. Records older than the engine's retention are dropped.
	Append(ctx context.Context, records []Record) error
	// Sync returns once every record appended before the call is visible
	// to Query and on disk as far as the engine allows (see each engine's
	// documentation): what a checkpoint past those records may rely on.
	// It may take seconds (the engines flush on a timer); call it per
	// checkpoint, not per Append.
	Sync(ctx context.Context) error
	// Query answers one page of q. An engine that cannot answer completely
	// (a storage node down, the service unreachable) returns an error
	// wrapping ErrUnavailable, never a short page.
	Query(ctx context.Context, q Query) (Page, error)
	// Summarize counts the events q selects into rows, in no order. It
	// fails as Query does: never a partial count.
	Summarize(ctx context.Context, q SummaryQuery) ([]SummaryRow, error)
	// Stats reports the archive's size.
	Stats(ctx context.Context) (Stats, error)
	// Close releases the engine; the archive is not used afterwards.
	Close() error
}

// ErrUnavailable is wrapped by the errors of an archive that cannot append
// or answer completely right now; the API answers 503 for it, and a caller
// may retry later.
var ErrUnavailable = errors.New("archive unavailable")

// Unavailable wraps err (the cause) in ErrUnavailable.
func Unavailable(format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrUnavailable, fmt.Errorf(format, args...))
}

// ErrInvalidQuery is wrapped by the errors of a query the archive refuses
// (a non-positive limit, an operator other than =, == and !=); the API
// answers 400 for it.
var ErrInvalidQuery = errors.New("invalid archive query")

// Scanner reads every archived state in the order the store wrote them,
// for a follower of the archive (the OTLP export) that keeps its place as
// a resourceVersion. Both engines implement it.
type Scanner interface {
	// Scan returns the states whose resourceVersion is in (after,
	// through], ascending, each (UID, ResourceVersion) once, at most limit
	// of them: the first limit states of that range. A state older than
	// the retention is gone. An engine that cannot answer completely
	// returns an error wrapping ErrUnavailable, never a short answer.
	Scan(ctx context.Context, after, through int64, limit int) ([]Record, error)
}
