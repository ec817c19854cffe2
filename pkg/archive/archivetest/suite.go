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

// Package archivetest is the conformance suite every archive engine passes:
// the behavior of archive.Archive the server relies on, checked against
// the real engine.
package archivetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kube-events/events-apiserver/pkg/archive"
)

// Engine is one archive under test.
type Engine struct {
	// Archive is empty when the suite gets it.
	Archive archive.Archive
	// Retention is the retention the archive was opened with.
	Retention time.Duration
}

// Options are the engine's optional parts of the suite.
type Options struct {
	// StopStorage, when set, makes part of the engine's storage
	// unreachable (a storage node of a cluster) until the returned
	// function restores it; the suite then expects queries to fail with
	// archive.ErrUnavailable, never to answer short.
	StopStorage func(t *testing.T) (restore func())
	// Delete, when set, removes the rows of the given UID with the
	// engine's own delete (what an operator runs to take an event out of
	// the history) and returns once the engine has done it.
	Delete func(t *testing.T, e Engine, uid string)
}

// Run runs the suite; open returns a new, empty archive for each test.
func Run(t *testing.T, open func(t *testing.T) Engine, opts Options) {
	tests := []struct {
		name string
		run  func(t *testing.T, e Engine)
	}{
		{"RoundTrip", testRoundTrip},
		{"NewestFirst", testNewestFirst},
		{"OneRecordPerUID", testOneRecordPerUID},
		{"Fields", testFields},
		{"Ancestors", testAncestors},
		{"Namespace", testNamespace},
		{"Window", testWindow},
		{"Pages", testPages},
		{"LargePage", testLargePage},
		{"Reappend", testReappend},
		{"Retention", testRetention},
		{"InvalidQuery", testInvalidQuery},
		{"Summaries", testSummaries},
		{"Scan", testScan},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, open(t))
		})
	}
	if opts.StopStorage != nil {
		t.Run("StorageDown", func(t *testing.T) {
			testStorageDown(t, open(t), opts.StopStorage)
		})
	}
	if opts.Delete != nil {
		t.Run("Deleted", func(t *testing.T) {
			testDeleted(t, open(t), opts.Delete)
		})
	}
}

// base is the time the suite's records are placed relative to: an hour
// ago, well inside any retention and not in the future.
var base = time.Now().Add(-time.Hour).Truncate(time.Second).UTC()

// ev builds the state of an event: uid, namespace, name, resourceVersion,
// time as an offset from base, and selectable fields as name, value pairs.
func ev(uid, ns string, rv int, offset time.Duration, kv ...string) archive.Record {
	name := "ev-" + uid
	f := map[string]string{"metadata.name": name, "metadata.namespace": ns}
	for i := 0; i+1 < len(kv); i += 2 {
		f[kv[i]] = kv[i+1]
	}
	return archive.Record{
		UID: uid, Namespace: ns, Name: name,
		ResourceVersion: strconv.Itoa(rv),
		Time:            base.Add(offset),
		Fields:          f,
		// Bytes that are not text: the engine must keep them as they are.
		Object: []byte(fmt.Sprintf("\x0a\x00\xff%s/%d\x80", uid, rv)),
	}
}

func appendSync(t *testing.T, a archive.Archive, records ...archive.Record) {
	t.Helper()
	ctx := context.Background()
	if err := a.Append(ctx, records); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if err := a.Sync(ctx); err != nil {
		t.Fatalf("Sync: %v", err)
	}
}

// all reads every page of q (q.Limit a page) and returns the records and
// the number of pages.
func all(t *testing.T, a archive.Archive, q archive.Query) ([]archive.Record, int) {
	t.Helper()
	var records []archive.Record
	for pages := 1; ; pages++ {
		page, err := a.Query(context.Background(), q)
		if err != nil {
			t.Fatalf("Query %+v: %v", q, err)
		}
		if len(page.Records) > q.Limit {
			t.Fatalf("page of %d records for limit %d", len(page.Records), q.Limit)
		}
		records = append(records, page.Records...)
		if page.Next == nil {
			return records, pages
		}
		if pages > 1000 {
			t.Fatalf("more than 1000 pages")
		}
		q.After = page.Next
	}
}

func uids(records []archive.Record) []string {
	var out []string
	for _, r := range records {
		out = append(out, r.UID+"@"+r.ResourceVersion)
	}
	return out
}

func window() (time.Time, time.Time) {
	return base.Add(-24 * time.Hour), base.Add(time.Hour)
}

func query(limit int, terms ...string) archive.Query {
	since, until := window()
	q := archive.Query{Since: since, Until: until, Limit: limit}
	for _, term := range terms {
		op := selection.Equals
		name, value, ok := strings.Cut(term, "!=")
		if ok {
			op = selection.NotEquals
		} else {
			name, value, _ = strings.Cut(term, "=")
		}
		q.Fields = append(q.Fields, fields.Requirement{Operator: op, Field: name, Value: value})
	}
	return q
}

func testRoundTrip(t *testing.T, e Engine) {
	in := []archive.Record{
		ev("a", "ns1", 10, 0, "involvedObject.name", "web-0", "reason", "BackOff", "type", "Warning"),
		ev("b", "ns2", 11, time.Second, "involvedObject.name", "web-1", "reason", "Pulled", "type", "Normal"),
	}
	in[1].Time = in[1].Time.Add(123456789 * time.Nanosecond)
	in[1].Occurrences, in[1].FirstObserved = 3, in[1].Time.Add(-time.Minute-time.Nanosecond)
	appendSync(t, e.Archive, in...)
	got, _ := all(t, e.Archive, query(10))
	want := []archive.Record{in[1], in[0]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	stats, err := e.Archive.Stats(context.Background())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if stats.Rows < 2 || stats.DiskBytes <= 0 {
		t.Errorf("Stats = %+v, want at least 2 rows and some bytes", stats)
	}
}

func testNewestFirst(t *testing.T, e Engine) {
	appendSync(t, e.Archive,
		ev("c", "ns", 1, 1*time.Minute),
		ev("a", "ns", 2, 3*time.Minute),
		ev("e", "ns", 3, 2*time.Minute),
		// The same time as c: UIDs in ascending order.
		ev("b", "ns", 4, 1*time.Minute),
		ev("d", "ns", 5, 1*time.Minute),
	)
	got, _ := all(t, e.Archive, query(10))
	if diff := cmp.Diff([]string{"a@2", "e@3", "b@4", "c@1", "d@5"}, uids(got)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func testOneRecordPerUID(t *testing.T, e Engine) {
	appendSync(t, e.Archive,
		ev("a", "ns", 10, 1*time.Minute),
		ev("a", "ns", 12, 3*time.Minute),
		ev("a", "ns", 11, 2*time.Minute),
		ev("b", "ns", 20, 4*time.Minute),
		// b's newest state went back in time: it is still b's answer, at its time.
		ev("b", "ns", 21, 0),
		ev("c", "ns", 30, 5*time.Minute),
	)
	for _, limit := range []int{1, 2, 10} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			got, _ := all(t, e.Archive, query(limit))
			if diff := cmp.Diff([]string{"c@30", "a@12", "b@21"}, uids(got)); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
		})
	}
}

func testFields(t *testing.T, e Engine) {
	appendSync(t, e.Archive,
		ev("a", "ns", 1, 1*time.Minute, "involvedObject.name", "web-0", "reason", "BackOff"),
		ev("b", "ns", 2, 2*time.Minute, "involvedObject.name", "web-0", "reason", "Pulled"),
		ev("c", "ns", 3, 3*time.Minute, "involvedObject.name", "web-1", "reason", "BackOff"),
		// d was BackOff, its newest state is not: BackOff must not find it.
		ev("d", "ns", 4, 4*time.Minute, "involvedObject.name", "web-0", "reason", "BackOff"),
		ev("d", "ns", 5, 5*time.Minute, "involvedObject.name", "web-0", "reason", "Started"),
		ev("e", "ns", 6, 6*time.Minute, "involvedObject.name", "web-0", "reason", "Odd \"quoted\" value, with: punctuation"),
		// f's newest state names another object (a core/v1 update may):
		// web-0 must not find it, web-2 must.
		ev("f", "ns", 7, 7*time.Minute, "involvedObject.name", "web-0", "reason", "Moved"),
		ev("f", "ns", 8, 8*time.Minute, "involvedObject.name", "web-2", "reason", "Moved"),
	)
	for _, tc := range []struct {
		terms []string
		want  []string
	}{
		{[]string{"involvedObject.name=web-0"}, []string{"e@6", "d@5", "b@2", "a@1"}},
		{[]string{"involvedObject.name=web-2"}, []string{"f@8"}},
		{[]string{"involvedObject.name!=web-0", "reason=Moved"}, []string{"f@8"}},
		{[]string{"involvedObject.name=web-0", "reason=BackOff"}, []string{"a@1"}},
		{[]string{"reason!=BackOff"}, []string{"f@8", "e@6", "d@5", "b@2"}},
		{[]string{"involvedObject.name=web-0", "reason!=BackOff"}, []string{"e@6", "d@5", "b@2"}},
		{[]string{"reason=Odd \"quoted\" value, with: punctuation"}, []string{"e@6"}},
		{[]string{"metadata.name=ev-c"}, []string{"c@3"}},
		{[]string{"metadata.namespace=ns", "metadata.name!=ev-c", "reason=BackOff"}, []string{"a@1"}},
		// A field no record has is empty.
		{[]string{"related.name="}, []string{"f@8", "e@6", "d@5", "c@3", "b@2", "a@1"}},
		{[]string{"related.name!="}, nil},
		{[]string{"reason=backoff"}, nil},
	} {
		t.Run(strings.Join(tc.terms, ","), func(t *testing.T) {
			for _, limit := range []int{1, 10} {
				got, _ := all(t, e.Archive, query(limit, tc.terms...))
				if diff := cmp.Diff(tc.want, uids(got)); diff != "" {
					t.Errorf("limit %d (-want +got):\n%s", limit, diff)
				}
			}
		})
	}
}

// testAncestors checks the ancestor terms: the regarding object itself by
// Kind/name or UID, or an object in the chain of its ancestors, with the
// newest state deciding as for every term.
func testAncestors(t *testing.T, e Engine) {
	const ancestor = "involvedObject.ancestor"
	pod := func(name string) []string {
		return []string{"involvedObject.kind", "Pod", "involvedObject.name", name, "involvedObject.uid", "uid-" + name}
	}
	chain := func(pairs ...string) string {
		b, _ := json.Marshal(pairs)
		return string(b)
	}
	web := chain("ReplicaSet/web-1", "uid-rs-web-1", "Deployment/web", "uid-web")
	appendSync(t, e.Archive,
		ev("a", "ns", 1, 1*time.Minute, append(pod("web-1-a"), ancestor, web, "reason", "BackOff")...),
		ev("b", "ns", 2, 2*time.Minute, append(pod("web-2-b"), ancestor, chain("ReplicaSet/web-2", "uid-rs-web-2", "Deployment/web", "uid-web"))...),
		ev("c", "ns", 3, 3*time.Minute, "involvedObject.kind", "ReplicaSet", "involvedObject.name", "web-1", "involvedObject.uid", "uid-rs-web-1",
			ancestor, chain("Deployment/web", "uid-web")),
		ev("d", "ns", 4, 4*time.Minute, "involvedObject.kind", "Deployment", "involvedObject.name", "web", "involvedObject.uid", "uid-web"),
		// Another Deployment whose name web's is a prefix of, and a pod
		// without a chain (resolved by no one).
		ev("e", "ns", 5, 5*time.Minute, append(pod("webber-1-e"), ancestor, chain("ReplicaSet/webber-1", "uid-rs-webber-1", "Deployment/webber", "uid-webber"))...),
		ev("f", "ns", 6, 6*time.Minute, pod("web-1-f")...),
		// g was about a pod of web; its newest state is not.
		ev("g", "ns", 7, 7*time.Minute, append(pod("web-1-g"), ancestor, web)...),
		ev("g", "ns", 8, 8*time.Minute, pod("other")...),
	)
	for _, tc := range []struct {
		terms []string
		want  []string
	}{
		{[]string{ancestor + "=Deployment/web"}, []string{"d@4", "c@3", "b@2", "a@1"}},
		{[]string{ancestor + "=uid-web"}, []string{"d@4", "c@3", "b@2", "a@1"}},
		{[]string{ancestor + "=ReplicaSet/web-1"}, []string{"c@3", "a@1"}},
		{[]string{ancestor + "=uid-rs-web-1"}, []string{"c@3", "a@1"}},
		{[]string{ancestor + "=Pod/web-1-f"}, []string{"f@6"}},
		{[]string{ancestor + "=uid-web-1-f"}, []string{"f@6"}},
		{[]string{ancestor + "=Deployment/webber"}, []string{"e@5"}},
		{[]string{ancestor + "=Deployment/we"}, nil},
		{[]string{ancestor + "=Deployment/web", "reason=BackOff"}, []string{"a@1"}},
		{[]string{ancestor + "=Deployment/web", ancestor + "!=ReplicaSet/web-1"}, []string{"d@4", "b@2"}},
		{[]string{ancestor + "!=Deployment/web"}, []string{"g@8", "f@6", "e@5"}},
	} {
		t.Run(strings.Join(tc.terms, ","), func(t *testing.T) {
			for _, limit := range []int{1, 10} {
				got, _ := all(t, e.Archive, query(limit, tc.terms...))
				if diff := cmp.Diff(tc.want, uids(got)); diff != "" {
					t.Errorf("limit %d (-want +got):\n%s", limit, diff)
				}
			}
		})
	}
}

func testNamespace(t *testing.T, e Engine) {
	appendSync(t, e.Archive,
		ev("a", "ns1", 1, 1*time.Minute),
		ev("b", "ns2", 2, 2*time.Minute),
		ev("c", "ns1", 3, 3*time.Minute),
		ev("d", "ns10", 4, 4*time.Minute),
	)
	for _, tc := range []struct {
		ns   string
		want []string
	}{
		{"ns1", []string{"c@3", "a@1"}},
		{"ns2", []string{"b@2"}},
		{"ns", nil},
		{"", []string{"d@4", "c@3", "b@2", "a@1"}},
	} {
		q := query(10)
		q.Namespace = tc.ns
		got, _ := all(t, e.Archive, q)
		if diff := cmp.Diff(tc.want, uids(got)); diff != "" {
			t.Errorf("namespace %q (-want +got):\n%s", tc.ns, diff)
		}
	}
}

func testWindow(t *testing.T, e Engine) {
	appendSync(t, e.Archive,
		ev("a", "ns", 1, 0),
		ev("b", "ns", 2, 10*time.Minute),
		ev("b", "ns", 3, 20*time.Minute),
		ev("c", "ns", 4, 20*time.Minute-time.Nanosecond),
		ev("d", "ns", 5, -time.Nanosecond),
	)
	q := query(10)
	// [base, base+20m): a is on the lower edge, d just before it; b's
	// newest state is on the upper edge, so its state before stands in;
	// c is just inside.
	q.Since, q.Until = base, base.Add(20*time.Minute)
	got, _ := all(t, e.Archive, q)
	if diff := cmp.Diff([]string{"c@4", "b@2", "a@1"}, uids(got)); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	q.Since, q.Until = base.Add(30*time.Minute), base.Add(40*time.Minute)
	if got, _ := all(t, e.Archive, q); len(got) != 0 {
		t.Errorf("empty window: %v", uids(got))
	}
}

// testLargePage reads pages of the most records a page holds, whose UIDs
// are as long as Kubernetes' (a service refuses queries longer than 16 KiB
// by default, and a page's queries name its UIDs), and some of which have
// an older state in the window.
func testLargePage(t *testing.T, e Engine) {
	const n = 1000
	var in []archive.Record
	for i := range n {
		uid := fmt.Sprintf("%08d-0000-4000-8000-%012d", i, i)
		in = append(in, ev(uid, "ns", 2*i+1, time.Duration(i)*time.Millisecond))
		if i%2 == 0 {
			in = append(in, ev(uid, "ns", 2*i+2, time.Duration(i)*time.Millisecond+time.Microsecond))
		}
	}
	appendSync(t, e.Archive, in...)
	for _, limit := range []int{n, n / 2} {
		got, pages := all(t, e.Archive, query(limit))
		if len(got) != n || pages != n/limit {
			t.Errorf("limit %d: %d records in %d pages, want %d in %d", limit, len(got), pages, n, n/limit)
		}
	}
}

func testPages(t *testing.T, e Engine) {
	var in []archive.Record
	rv := 0
	for i := range 60 {
		uid := fmt.Sprintf("uid-%02d", i)
		obj := fmt.Sprintf("pod-%d", i%4)
		// Three states each; every third event shares its time with
		// another, to put page ends between equal times.
		for s := range 3 {
			rv++
			in = append(in, ev(uid, "ns", rv, time.Duration(i/3)*time.Minute+time.Duration(s)*time.Second, "involvedObject.name", obj))
		}
	}
	// Appended in two batches, out of order.
	slices.Reverse(in[:90])
	appendSync(t, e.Archive, in[:90]...)
	appendSync(t, e.Archive, in[90:]...)
	for _, terms := range [][]string{nil, {"involvedObject.name=pod-1"}, {"involvedObject.name!=pod-1"}} {
		want, _ := all(t, e.Archive, query(1000, terms...))
		if len(want) == 0 {
			t.Fatalf("%v: no records", terms)
		}
		for _, limit := range []int{1, 7, 20, 60} {
			got, pages := all(t, e.Archive, query(limit, terms...))
			if diff := cmp.Diff(uids(want), uids(got)); diff != "" {
				t.Errorf("%v, limit %d: pages differ from one page (-want +got):\n%s", terms, limit, diff)
			}
			if least := (len(want) + limit - 1) / limit; pages < least || pages > least+1 {
				t.Errorf("%v, limit %d: %d pages for %d records", terms, limit, pages, len(want))
			}
		}
	}
	want, _ := all(t, e.Archive, query(1000))
	if len(want) != 60 {
		t.Errorf("%d records, want 60", len(want))
	}
	for _, r := range want {
		if n, _ := strconv.Atoi(r.ResourceVersion); n%3 != 0 {
			t.Errorf("%s: state %s, want its newest", r.UID, r.ResourceVersion)
		}
	}
}

func testReappend(t *testing.T, e Engine) {
	in := []archive.Record{
		ev("a", "ns", 1, 1*time.Minute),
		ev("b", "ns", 2, 1*time.Minute),
		ev("a", "ns", 3, 2*time.Minute),
	}
	appendSync(t, e.Archive, in...)
	first, _ := all(t, e.Archive, query(10))
	appendSync(t, e.Archive, in...)
	appendSync(t, e.Archive, in[1:]...)
	for _, limit := range []int{1, 10} {
		got, _ := all(t, e.Archive, query(limit))
		if diff := cmp.Diff(first, got); diff != "" {
			t.Errorf("limit %d, after appending again (-before +after):\n%s", limit, diff)
		}
	}
}

func testRetention(t *testing.T, e Engine) {
	now := time.Now()
	old := ev("old", "ns", 1, 0)
	old.Time = now.Add(-e.Retention - 2*time.Hour)
	kept := ev("kept", "ns", 2, 0)
	kept.Time = now.Add(-e.Retention + 2*time.Hour)
	appendSync(t, e.Archive, old, kept)
	q := query(10)
	q.Since, q.Until = now.Add(-2*e.Retention), now
	got, _ := all(t, e.Archive, q)
	if diff := cmp.Diff([]string{"kept@2"}, uids(got)); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

func testInvalidQuery(t *testing.T, e Engine) {
	for _, q := range []archive.Query{
		query(0),
		{Limit: 1, Fields: fields.Requirements{{Operator: selection.In, Field: "reason", Value: "x"}}},
	} {
		if _, err := e.Archive.Query(context.Background(), q); !errors.Is(err, archive.ErrInvalidQuery) {
			t.Errorf("Query %+v: error %v, want ErrInvalidQuery", q, err)
		}
	}
}

// testDeleted checks that the rows of a deleted UID leave nothing behind
// in answers. The UID deleted holds the oldest row of its block: the
// engine then keeps a blank row (its time and stream alone) in its place
// (VictoriaLogs#1798), which no page or summary may count.
func testDeleted(t *testing.T, e Engine, remove func(t *testing.T, e Engine, uid string)) {
	appendSync(t, e.Archive,
		sev("a", "ns1", 1, -40*time.Minute, "Warning", "BackOff", "web-0", 1, -40*time.Minute),
		sev("b", "ns1", 2, -30*time.Minute, "Warning", "BackOff", "web-1", 1, -30*time.Minute),
		sev("c", "ns1", 3, -20*time.Minute, "Warning", "BackOff", "web-2", 1, -20*time.Minute),
	)
	remove(t, e, "a")

	for _, q := range []archive.Query{query(10), query(1)} {
		got, _ := all(t, e.Archive, q)
		if diff := cmp.Diff([]string{"c@3", "b@2"}, uids(got)); diff != "" {
			t.Errorf("pages of %d after deleting a (-want +got):\n%s", q.Limit, diff)
		}
	}
	since, until := window()
	got, err := e.Archive.Summarize(context.Background(), archive.SummaryQuery{Since: since, Until: until})
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	want := []archive.SummaryRow{row("ns1", "Warning", "BackOff", 2, 2, 2, -30*time.Minute, -20*time.Minute)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summary after deleting a (-want +got):\n%s", diff)
	}
}

func testStorageDown(t *testing.T, e Engine, stop func(t *testing.T) func()) {
	var in []archive.Record
	for i := range 20 {
		in = append(in, ev(fmt.Sprintf("uid-%02d", i), fmt.Sprintf("ns%d", i%5), i+1, time.Duration(i)*time.Second))
	}
	appendSync(t, e.Archive, in...)
	want, _ := all(t, e.Archive, query(100))
	if len(want) != len(in) {
		t.Fatalf("%d records before the stop, want %d", len(want), len(in))
	}
	restore := stop(t)
	for _, q := range []archive.Query{query(100), query(5, "metadata.namespace=ns1")} {
		page, err := e.Archive.Query(context.Background(), q)
		if !errors.Is(err, archive.ErrUnavailable) {
			t.Errorf("Query %+v with storage down: %d records, error %v; want ErrUnavailable", q, len(page.Records), err)
		} else {
			t.Logf("with storage down: %v", err)
		}
	}
	restore()
	got, _ := all(t, e.Archive, query(100))
	if diff := cmp.Diff(uids(want), uids(got)); diff != "" {
		t.Errorf("after the restore (-want +got):\n%s", diff)
	}
}

// sev is a state for the summaries: ev with the summary's fields (type,
// reason, kind Pod, reporting component kubelet, the regarded pod),
// occurrences and a first observation, as an offset from base too.
func sev(uid, ns string, rv int, offset time.Duration, eventType, reason, pod string, occurrences int32, first time.Duration, kv ...string) archive.Record {
	r := ev(uid, ns, rv, offset, append([]string{"type", eventType, "reason", reason, "involvedObject.kind", "Pod",
		"involvedObject.namespace", ns, "involvedObject.name", pod, "reportingComponent", "kubelet"}, kv...)...)
	r.Occurrences, r.FirstObserved = occurrences, base.Add(first)
	return r
}

// row is a summary row of the namespace, type and reason, of pods
// reported by kubelet.
func row(ns, eventType, reason string, events, occurrences, objects int64, first, last time.Duration, known ...string) archive.SummaryRow {
	r := archive.SummaryRow{
		Namespace: ns, Type: eventType, Reason: reason, RegardingKind: "Pod", ReportingController: "kubelet",
		Events: events, Occurrences: occurrences, Objects: objects,
		FirstObserved: base.Add(first), LastObserved: base.Add(last),
	}
	for _, pod := range known {
		r.Known = append(r.Known, archive.Object{Namespace: ns, Name: pod})
	}
	return r
}

func testSummaries(t *testing.T, e Engine) {
	appendSync(t, e.Archive,
		// A series: its newest state counts, 7 occurrences since -50m.
		sev("a", "ns1", 1, -40*time.Minute, "Warning", "BackOff", "web-0", 2, -50*time.Minute),
		sev("a", "ns1", 5, -10*time.Minute, "Warning", "BackOff", "web-0", 7, -50*time.Minute),
		// Another object, one occurrence (0 stands for 1, first for Time).
		sev("b", "ns1", 2, -30*time.Minute, "Warning", "BackOff", "web-1", 0, -30*time.Minute),
		sev("c", "ns1", 3, -20*time.Minute, "Warning", "BackOff", "web-1", 1, -20*time.Minute),
		sev("d", "ns1", 4, -5*time.Minute, "Normal", "Pulled", "web-0", 1, -5*time.Minute),
		// A newer state that does not match type=Warning stands for it.
		sev("e", "ns1", 6, -25*time.Minute, "Warning", "Unhealthy", "web-2", 4, -25*time.Minute),
		sev("e", "ns1", 7, -2*time.Minute, "Normal", "Unhealthy", "web-2", 5, -25*time.Minute),
		// Another namespace; and a state out of the window.
		sev("f", "ns2", 8, -15*time.Minute, "Warning", "BackOff", "api-0", 3, -16*time.Minute,
			"involvedObject.ancestor", `["StatefulSet/api","u-api"]`),
		sev("g", "ns1", 9, -48*time.Hour, "Warning", "BackOff", "web-9", 1, -48*time.Hour),
	)
	since, until := window()
	terms := func(terms ...string) fields.Requirements { return query(1, terms...).Fields }
	tests := []struct {
		name string
		q    archive.SummaryQuery
		want []archive.SummaryRow
	}{{
		name: "all",
		q:    archive.SummaryQuery{Since: since, Until: until},
		want: []archive.SummaryRow{
			row("ns1", "Normal", "Pulled", 1, 1, 1, -5*time.Minute, -5*time.Minute),
			row("ns1", "Normal", "Unhealthy", 1, 5, 1, -25*time.Minute, -2*time.Minute),
			row("ns1", "Warning", "BackOff", 3, 9, 2, -50*time.Minute, -10*time.Minute),
			row("ns2", "Warning", "BackOff", 1, 3, 1, -16*time.Minute, -15*time.Minute),
		},
	}, {
		name: "namespace,type=Warning",
		q:    archive.SummaryQuery{Namespace: "ns1", Fields: terms("type=Warning"), Since: since, Until: until},
		want: []archive.SummaryRow{row("ns1", "Warning", "BackOff", 3, 9, 2, -50*time.Minute, -10*time.Minute)},
	}, {
		name: "type!=Warning,involvedObject.name=web-2",
		q:    archive.SummaryQuery{Fields: terms("type!=Warning", "involvedObject.name=web-2"), Since: since, Until: until},
		want: []archive.SummaryRow{row("ns1", "Normal", "Unhealthy", 1, 5, 1, -25*time.Minute, -2*time.Minute)},
	}, {
		name: "window",
		q:    archive.SummaryQuery{Namespace: "ns1", Fields: terms("reason=BackOff"), Since: base.Add(-35 * time.Minute), Until: base.Add(-15 * time.Minute)},
		// a's newest state in the window is its first (rv 1, -40m) no more:
		// neither is in [-35m, -15m).
		want: []archive.SummaryRow{row("ns1", "Warning", "BackOff", 2, 2, 1, -30*time.Minute, -20*time.Minute)},
	}, {
		name: "except",
		q:    archive.SummaryQuery{Namespace: "ns1", Fields: terms("reason=BackOff"), Since: since, Until: until, Except: []string{"a", "c"}},
		want: []archive.SummaryRow{row("ns1", "Warning", "BackOff", 1, 1, 1, -30*time.Minute, -30*time.Minute)},
	}, {
		name: "known objects",
		q: archive.SummaryQuery{Namespace: "ns1", Fields: terms("type=Warning"), Since: since, Until: until,
			Objects: []archive.Object{{Namespace: "ns1", Name: "web-1"}, {Namespace: "ns1", Name: "web-7"}}},
		want: []archive.SummaryRow{row("ns1", "Warning", "BackOff", 3, 9, 2, -50*time.Minute, -10*time.Minute, "web-1")},
	}, {
		name: "ancestor",
		q:    archive.SummaryQuery{Fields: terms("involvedObject.ancestor=StatefulSet/api"), Since: since, Until: until},
		want: []archive.SummaryRow{row("ns2", "Warning", "BackOff", 1, 3, 1, -16*time.Minute, -15*time.Minute)},
	}, {
		name: "none",
		q:    archive.SummaryQuery{Fields: terms("reason=Nothing"), Since: since, Until: until},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.Archive.Summarize(context.Background(), tc.q)
			if err != nil {
				t.Fatalf("Summarize: %v", err)
			}
			slices.SortFunc(got, func(a, b archive.SummaryRow) int {
				return strings.Compare(a.Namespace+a.Type+a.Reason, b.Namespace+b.Type+b.Reason)
			})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("the most left out", func(t *testing.T) {
		// UIDs as the API server makes them, objects with long names: a
		// service takes the query all the same.
		q := archive.SummaryQuery{Namespace: "ns1", Fields: terms("reason=BackOff"), Since: since, Until: until}
		for i := range archive.MaxExcept {
			q.Except = append(q.Except, fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i))
		}
		for i := range archive.MaxObjects {
			q.Objects = append(q.Objects, archive.Object{Namespace: "ns1", Name: fmt.Sprintf("web-%s-%d", strings.Repeat("x", 40), i)})
		}
		q.Except[0] = "a"
		got, err := e.Archive.Summarize(context.Background(), q)
		if err != nil {
			t.Fatalf("Summarize: %v", err)
		}
		want := []archive.SummaryRow{row("ns1", "Warning", "BackOff", 2, 2, 1, -30*time.Minute, -20*time.Minute)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("rows (-want +got):\n%s", diff)
		}
	})
	t.Run("too many left out", func(t *testing.T) {
		q := archive.SummaryQuery{Since: since, Until: until, Except: make([]string, archive.MaxExcept+1)}
		if _, err := e.Archive.Summarize(context.Background(), q); !errors.Is(err, archive.ErrInvalidQuery) {
			t.Errorf("Summarize with %d UIDs left out: %v, want ErrInvalidQuery", len(q.Except), err)
		}
	})
	// Last: it appends. A state appended again counts once.
	t.Run("appended again", func(t *testing.T) {
		appendSync(t, e.Archive,
			sev("a", "ns1", 5, -10*time.Minute, "Warning", "BackOff", "web-0", 7, -50*time.Minute),
			sev("b", "ns1", 2, -30*time.Minute, "Warning", "BackOff", "web-1", 0, -30*time.Minute))
		q := archive.SummaryQuery{Namespace: "ns1", Fields: terms("type=Warning"), Since: since, Until: until}
		got, err := e.Archive.Summarize(context.Background(), q)
		if err != nil {
			t.Fatalf("Summarize: %v", err)
		}
		want := []archive.SummaryRow{row("ns1", "Warning", "BackOff", 3, 9, 2, -50*time.Minute, -10*time.Minute)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("rows (-want +got):\n%s", diff)
		}
	})
}

// testScan reads states by resourceVersion range: ascending whatever their
// time (numbers that cross a digit, so that the order is numeric), each
// state once though appended twice, bounded by the limit, and past the
// retention gone.
func testScan(t *testing.T, e Engine) {
	scanner, ok := e.Archive.(archive.Scanner)
	if !ok {
		t.Fatalf("%T does not implement archive.Scanner", e.Archive)
	}
	records := []archive.Record{
		ev("a", "ns1", 9, 3*time.Minute),
		ev("b", "ns2", 10, -time.Minute),
		ev("a", "ns1", 11, time.Minute),
		ev("c", "ns1", 12, 0),
		ev("d", "ns2", 100, -30*time.Minute),
	}
	appendSync(t, e.Archive, records...)
	appendSync(t, e.Archive, records[1], records[2]) // appended again
	tests := []struct {
		name           string
		after, through int64
		limit          int
		want           []string
	}{
		{"all", 0, 1000, 10, []string{"a@9", "b@10", "a@11", "c@12", "d@100"}},
		{"after is left out, through is in", 9, 12, 10, []string{"b@10", "a@11", "c@12"}},
		{"the first of the range", 0, 1000, 2, []string{"a@9", "b@10"}},
		{"nothing in range", 12, 99, 10, nil},
		{"empty range", 12, 12, 10, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := scanner.Scan(context.Background(), tc.after, tc.through, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, uids(got)); diff != "" {
				t.Errorf("Scan(%d, %d, %d) (-want +got):\n%s", tc.after, tc.through, tc.limit, diff)
			}
			for _, r := range got {
				want := ev(r.UID, r.Namespace, mustAtoi(t, r.ResourceVersion), 0)
				if string(r.Object) != string(want.Object) {
					t.Errorf("%s@%s: object %q, want %q", r.UID, r.ResourceVersion, r.Object, want.Object)
				}
			}
		})
	}
	if _, err := scanner.Scan(context.Background(), 0, 10, 0); !errors.Is(err, archive.ErrInvalidQuery) {
		t.Errorf("Scan with limit 0: got %v, want ErrInvalidQuery", err)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
