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

package validate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func obj(name, regarding, reason, color string) *Object {
	o := &Object{Namespace: "ns", Name: name, RegardingName: regarding, Reason: reason, Type: "Normal"}
	if color != "" {
		o.Labels = map[string]string{"color": color}
	}
	return o
}

// testHistory is, in the namespace ns:
//
//	10 create a (pod-1, Started, red)
//	11 create b (pod-2, Started)
//	12 a: color red -> blue (stops matching color=red)
//	13 b: reason Failed
//	14 create c (pod-1, Failed, red)
//	15 delete a
//	16 a again (pod-1, Started, red)
//
// and etcd's head at 20 (other keys' revisions).
func testHistory(t *testing.T) *History {
	t.Helper()
	h := NewHistory()
	for _, c := range []Change{
		{Rev: 10, Key: "ns/a", Object: obj("a", "pod-1", "Started", "red")},
		{Rev: 11, Key: "ns/b", Object: obj("b", "pod-2", "Started", "")},
		{Rev: 12, Key: "ns/a", Object: obj("a", "pod-1", "Started", "blue")},
		{Rev: 13, Key: "ns/b", Object: obj("b", "pod-2", "Failed", "")},
		{Rev: 14, Key: "ns/c", Object: obj("c", "pod-1", "Failed", "red")},
		{Rev: 15, Key: "ns/a"},
		{Rev: 16, Key: "ns/a", Object: obj("a", "pod-1", "Started", "red")},
	} {
		if err := h.Append(c); err != nil {
			t.Fatal(err)
		}
	}
	h.Observe(20)
	return h
}

func item(key string, rv int64) Item { return Item{Key: "ns/" + key, RV: rv} }

func ev(typ, key string, rv int64) Event { return Event{Type: typ, Item: item(key, rv)} }

func bookmark(rv int64) Event { return Event{Type: Bookmark, Item: Item{RV: rv}} }

func initialEnd(rv int64) Event { return Event{Type: Bookmark, Item: Item{RV: rv}, InitialEnd: true} }

// kinds is the kinds of the violations, in order.
func kinds(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Kind)
	}
	return out
}

func TestAppendRefusesRevisionsOutOfOrder(t *testing.T) {
	h := testHistory(t)
	if err := h.Append(Change{Rev: 16, Key: "ns/d", Object: obj("d", "", "", "")}); err == nil {
		t.Fatal("a change at a revision already recorded was accepted")
	}
}

func TestCheckList(t *testing.T) {
	h := testHistory(t)
	page := func(rv int64, cont bool, items ...Item) Page { return Page{RV: rv, Items: items, Continue: cont} }
	for _, tc := range []struct {
		name string
		list List
		want []string
	}{
		{
			name: "every key at its revision",
			list: List{RV: "", Pages: []Page{page(14, false, item("a", 12), item("b", 13), item("c", 14))}, Complete: true},
		},
		{
			name: "pages at one revision",
			list: List{RV: "", Pages: []Page{page(14, true, item("a", 12)), page(14, false, item("b", 13), item("c", 14))}, Complete: true},
		},
		{
			name: "label selector",
			list: List{Sel: Selector{Label: "color=red"}, RV: "0", Pages: []Page{page(14, false, item("c", 14))}, Complete: true},
		},
		{
			name: "field selector of either version",
			list: List{Sel: Selector{Field: "regarding.name=pod-1,reason=Failed"}, RV: "0", Pages: []Page{page(16, false, item("c", 14))}, Complete: true},
		},
		{
			name: "an incomplete list is checked up to its last key",
			list: List{RV: "", Pages: []Page{page(14, true, item("a", 12))}},
		},
		{
			name: "a key missing",
			list: List{RV: "", Pages: []Page{page(14, false, item("a", 12), item("c", 14))}, Complete: true},
			want: []string{KindList},
		},
		{
			name: "a key missing between two pages",
			list: List{RV: "", Pages: []Page{page(14, true, item("a", 12)), page(14, false, item("c", 14))}, Complete: true},
			want: []string{KindList},
		},
		{
			name: "a key at an older revision",
			list: List{RV: "", Pages: []Page{page(14, false, item("a", 10), item("b", 13), item("c", 14))}, Complete: true},
			want: []string{KindList},
		},
		{
			name: "a deleted key",
			list: List{RV: "", Pages: []Page{page(15, false, item("a", 12), item("b", 13), item("c", 14))}, Complete: true},
			want: []string{KindList},
		},
		{
			name: "a key the selector excludes",
			list: List{Sel: Selector{Label: "color=red"}, RV: "", Pages: []Page{page(14, false, item("a", 12), item("c", 14))}, Complete: true},
			want: []string{KindList},
		},
		{
			name: "a key twice",
			list: List{RV: "", Pages: []Page{page(14, true, item("a", 12), item("b", 13)), page(14, false, item("b", 13), item("c", 14))}, Complete: true},
			want: []string{KindList},
		},
		{
			name: "pages at two revisions",
			list: List{RV: "", Pages: []Page{page(14, true, item("a", 12)), page(16, false, item("b", 13), item("c", 14))}, Complete: true},
			want: []string{KindListRV},
		},
		{
			name: "exact at another revision",
			list: List{RV: "13", Match: "Exact", Pages: []Page{page(14, false, item("a", 12), item("b", 13), item("c", 14))}, Complete: true},
			want: []string{KindListRV},
		},
		{
			name: "not older than, older",
			list: List{RV: "16", Match: "NotOlderThan", Pages: []Page{page(14, false, item("a", 12), item("b", 13), item("c", 14))}, Complete: true},
			want: []string{KindListRV},
		},
		{
			name: "consistent list below a write before it",
			list: List{RV: "", Watermark: 16, Pages: []Page{page(14, false, item("a", 12), item("b", 13), item("c", 14))}, Complete: true},
			want: []string{KindListRV},
		},
		{
			name: "a revision etcd has not reached",
			list: List{RV: "0", Pages: []Page{page(21, false, item("a", 16), item("b", 13), item("c", 14))}, Complete: true},
			want: []string{KindListRV},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckList(h, tc.list)
			if diff := cmp.Diff(tc.want, kinds(got)); diff != "" {
				t.Errorf("violations (-want +got):\n%s\n%v", diff, got)
			}
		})
	}
}

func TestCheckGet(t *testing.T) {
	h := testHistory(t)
	for _, tc := range []struct {
		name string
		get  Get
		want []string
	}{
		{name: "current", get: Get{Key: "ns/b", Got: 13, Watermark: 15}},
		{name: "any revision, an old version", get: Get{Key: "ns/a", RV: "0", Got: 10, Watermark: 15}},
		{name: "consistent, replaced before it was sent", get: Get{Key: "ns/a", Got: 10, Watermark: 15}, want: []string{KindGet}},
		{name: "a version never stored", get: Get{Key: "ns/a", Got: 11}, want: []string{KindGet}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckGet(h, tc.get)
			if diff := cmp.Diff(tc.want, kinds(got)); diff != "" {
				t.Errorf("violations (-want +got):\n%s\n%v", diff, got)
			}
		})
	}
}

func TestCheckWatch(t *testing.T) {
	h := testHistory(t)
	red := Selector{Label: "color=red"}
	for _, tc := range []struct {
		name  string
		watch Watch
		want  []string
	}{
		{
			name:  "every change from a revision",
			watch: Watch{RV: "11", Events: []Event{ev(Modified, "a", 12), ev(Modified, "b", 13), ev(Added, "c", 14), ev(Deleted, "a", 15), ev(Added, "a", 16)}},
		},
		{
			name:  "ended early: nothing expected past the last event",
			watch: Watch{RV: "11", Events: []Event{ev(Modified, "a", 12)}},
		},
		{
			name:  "a bookmark ends what must be delivered",
			watch: Watch{RV: "11", Bookmarks: true, Events: []Event{ev(Modified, "a", 12), ev(Modified, "b", 13), bookmark(13)}},
		},
		{
			name:  "selector transitions: stops matching is DELETED, starts matching ADDED",
			watch: Watch{Sel: red, RV: "10", Events: []Event{ev(Deleted, "a", 12), ev(Added, "c", 14), ev(Added, "a", 16)}},
		},
		{
			name:  "field selector",
			watch: Watch{Sel: Selector{Field: "reason=Failed"}, RV: "10", Events: []Event{ev(Added, "b", 13), ev(Added, "c", 14)}},
		},
		{
			name:  "a gap",
			watch: Watch{RV: "11", Events: []Event{ev(Modified, "a", 12), ev(Added, "c", 14)}},
			want:  []string{KindReliable},
		},
		{
			name:  "a gap before a bookmark",
			watch: Watch{RV: "11", Bookmarks: true, Events: []Event{ev(Modified, "a", 12), bookmark(14)}},
			want:  []string{KindReliable},
		},
		{
			name:  "a gap at the start of a resumed watch",
			watch: Watch{RV: "13", Events: []Event{ev(Deleted, "a", 15)}},
			want:  []string{KindReliable},
		},
		{
			name:  "a duplicate",
			watch: Watch{RV: "11", Events: []Event{ev(Modified, "a", 12), ev(Modified, "a", 12), ev(Modified, "b", 13)}},
			want:  []string{KindUnique},
		},
		{
			name:  "a reordered pair",
			watch: Watch{RV: "11", Events: []Event{ev(Modified, "b", 13), ev(Modified, "a", 12)}},
			want:  []string{KindOrdered},
		},
		{
			name:  "an event at the start revision",
			watch: Watch{RV: "12", Events: []Event{ev(Modified, "a", 12), ev(Modified, "b", 13)}},
			want:  []string{KindStart},
		},
		{
			name:  "stops matching delivered as MODIFIED",
			watch: Watch{Sel: red, RV: "10", Events: []Event{ev(Modified, "a", 12)}},
			want:  []string{KindFilter},
		},
		{
			name:  "a change the selector excludes",
			watch: Watch{Sel: red, RV: "10", Events: []Event{ev(Deleted, "a", 12), ev(Modified, "b", 13), ev(Added, "c", 14)}},
			want:  []string{KindFilter},
		},
		{
			name:  "a bookmark ahead of etcd",
			watch: Watch{RV: "16", Bookmarks: true, Events: []Event{bookmark(21)}},
			want:  []string{KindBookmark},
		},
		{
			name:  "a bookmark backwards",
			watch: Watch{RV: "16", Bookmarks: true, Events: []Event{bookmark(18), bookmark(17)}},
			want:  []string{KindBookmark},
		},
		{
			name:  "a bookmark below a delivered event",
			watch: Watch{RV: "11", Bookmarks: true, Events: []Event{ev(Modified, "a", 12), ev(Modified, "b", 13), bookmark(12)}},
			want:  []string{KindBookmark},
		},
		{
			name:  "a bookmark below the start",
			watch: Watch{RV: "14", Bookmarks: true, Events: []Event{bookmark(12)}},
			want:  []string{KindBookmark},
		},
		{
			name:  "legacy initial state, then changes",
			watch: Watch{RV: "0", Events: []Event{ev(Added, "a", 12), ev(Added, "b", 11), ev(Modified, "b", 13), ev(Added, "c", 14)}},
		},
		{
			name:  "legacy initial state ending with a change that is an ADDED",
			watch: Watch{RV: "", Events: []Event{ev(Added, "a", 12), ev(Added, "b", 13), ev(Added, "c", 14), ev(Deleted, "a", 15)}},
		},
		{
			name:  "legacy initial state with a key missing",
			watch: Watch{RV: "0", Events: []Event{ev(Added, "a", 12), ev(Modified, "b", 13)}},
			want:  []string{KindInitial},
		},
		{
			name:  "legacy initial state at no single revision",
			watch: Watch{RV: "0", Events: []Event{ev(Added, "a", 10), ev(Added, "b", 13)}},
			want:  []string{KindInitial},
		},
		{
			name:  "legacy initial state, then a gap",
			watch: Watch{RV: "0", Events: []Event{ev(Added, "a", 12), ev(Added, "b", 11), ev(Deleted, "a", 15)}},
			want:  []string{KindReliable},
		},
		{
			name:  "initial events ended by a bookmark",
			watch: Watch{RV: "", SendInitialEvents: true, Bookmarks: true, Events: []Event{ev(Added, "a", 12), ev(Added, "b", 13), ev(Added, "c", 14), initialEnd(14), ev(Deleted, "a", 15)}},
		},
		{
			name:  "initial events ended by a bookmark, over a selector",
			watch: Watch{Sel: red, RV: "", SendInitialEvents: true, Bookmarks: true, Events: []Event{ev(Added, "c", 14), initialEnd(15), ev(Added, "a", 16)}},
		},
		{
			name:  "initial events with a key missing",
			watch: Watch{RV: "", SendInitialEvents: true, Bookmarks: true, Events: []Event{ev(Added, "a", 12), ev(Added, "c", 14), initialEnd(14)}},
			want:  []string{KindInitial},
		},
		{
			name:  "consistent initial events below a write before the watch",
			watch: Watch{RV: "", Watermark: 16, SendInitialEvents: true, Bookmarks: true, Events: []Event{ev(Added, "b", 13), ev(Added, "c", 14), initialEnd(15)}},
			want:  []string{KindInitial},
		},
		{
			name:  "initial events below the requested revision",
			watch: Watch{RV: "16", SendInitialEvents: true, Bookmarks: true, Events: []Event{ev(Added, "b", 13), ev(Added, "c", 14), initialEnd(15)}},
			want:  []string{KindBookmark},
		},
		{
			name:  "initial events cut short, one twice",
			watch: Watch{RV: "", SendInitialEvents: true, Bookmarks: true, Events: []Event{ev(Added, "a", 12), ev(Added, "a", 12)}},
			want:  []string{KindUnique},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.watch.Op = tc.name
			got := CheckWatch(h, tc.watch)
			if diff := cmp.Diff(tc.want, kinds(got)); diff != "" {
				t.Errorf("violations (-want +got):\n%s\n%v", diff, got)
			}
		})
	}
}

// TestStateAtAcrossSnapshots checks the states read from stored snapshots
// against a replay from the start.
func TestStateAtAcrossSnapshots(t *testing.T) {
	h := NewHistory()
	replay := map[int64][]Item{}
	for rev := int64(1); rev <= 3*snapshotEvery+7; rev++ {
		key := []string{"a", "b", "c", "d", "e"}[rev%5]
		c := Change{Rev: rev, Key: "ns/" + key, Object: obj(key, "", "", "")}
		if rev%7 == 0 {
			c.Object = nil
		}
		if err := h.Append(c); err != nil {
			t.Fatal(err)
		}
		state := map[string]version{}
		for _, c := range h.changes {
			apply(state, c)
		}
		for k, v := range state {
			replay[rev] = append(replay[rev], Item{Key: k, RV: v.modRev})
		}
	}
	all, err := Selector{}.compile()
	if err != nil {
		t.Fatal(err)
	}
	for rev, want := range replay {
		got := h.selected(rev, all)
		if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b Item) bool { return a.Key < b.Key })); diff != "" {
			t.Fatalf("state at %d (-replay +read):\n%s", rev, diff)
		}
	}
}

// TestCheckWatchInitialStateSeenTwice is a legacy watch whose initial
// state is etcd's, after selection, at two revisions with changes between
// them: only the later one fits the rest of the watch.
func TestCheckWatchInitialStateSeenTwice(t *testing.T) {
	h := NewHistory()
	for _, c := range []Change{
		{Rev: 1, Key: "ns/x", Object: obj("x", "", "", "red")},
		{Rev: 2, Key: "ns/y", Object: obj("y", "", "", "red")},
		{Rev: 3, Key: "ns/y"},
		{Rev: 4, Key: "ns/z", Object: obj("z", "", "", "red")},
	} {
		if err := h.Append(c); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		watch Watch
		want  []string
	}{
		{name: "from the later revision", watch: Watch{RV: "0", Bookmarks: true, Events: []Event{ev(Added, "x", 1), bookmark(3), ev(Added, "z", 4)}}},
		{name: "from the earlier revision", watch: Watch{RV: "0", Events: []Event{ev(Added, "x", 1), ev(Added, "y", 2), ev(Deleted, "y", 3)}}},
		{name: "from neither", watch: Watch{RV: "0", Events: []Event{ev(Added, "x", 1), ev(Deleted, "y", 3), ev(Added, "z", 4)}}, want: []string{KindReliable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckWatch(h, tc.watch)
			if diff := cmp.Diff(tc.want, kinds(got)); diff != "" {
				t.Errorf("violations (-want +got):\n%s\n%v", diff, got)
			}
		})
	}
}
