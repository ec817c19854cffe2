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
	"fmt"
	"strings"
)

// Violation is one broken guarantee: its kind, the operation (enough to
// repeat it) and what differed.
type Violation struct {
	Kind   string
	Op     string
	Detail string
}

func (v Violation) String() string { return fmt.Sprintf("%s: %s: %s", v.Kind, v.Op, v.Detail) }

// The kinds of violation.
const (
	KindList         = "list"         // a list is not etcd's state at its resourceVersion
	KindListRV       = "list-rv"      // a list's resourceVersion is not one it may answer
	KindGet          = "get"          // a get answered a version etcd never held then
	KindOrdered      = "ordered"      // a watch event below an earlier one
	KindUnique       = "unique"       // a watch event delivered twice
	KindReliable     = "reliable"     // a matching change missing from a watch (a gap)
	KindFilter       = "filter"       // a watch event that is not the change the selector makes of it
	KindBookmark     = "bookmark"     // a bookmark backwards, below the start or ahead of etcd
	KindInitial      = "initial"      // a watch's initial events are not etcd's state at any revision
	KindStart        = "start"        // a watch event at or below the watch's start
	KindUnexpected   = "error"        // an error the API does not allow for the request
	KindHarnessInput = "bad-selector" // the harness sent a selector it cannot evaluate
)

// Page is one answer of a list: its resourceVersion, items and whether it
// had a continue token.
type Page struct {
	RV       int64
	Items    []Item
	Continue bool
}

// List is one list as a client ran it, every page of it.
type List struct {
	// Op describes the request for the report (seed, client, parameters).
	Op  string
	Sel Selector
	// RV and Match are the first page's resourceVersion and
	// resourceVersionMatch.
	RV    string
	Match string
	// Watermark is the highest resourceVersion a write returned before
	// the list was sent: a consistent list (RV "") must be at least there.
	Watermark int64
	Pages     []Page
	// Complete says the last page had no continue token.
	Complete bool
}

// Get is one successful get.
type Get struct {
	Op        string
	Key       string
	RV        string
	Watermark int64
	// Got is the object's resourceVersion.
	Got int64
}

// Event types of a watch.
const (
	Added    = "ADDED"
	Modified = "MODIFIED"
	Deleted  = "DELETED"
	Bookmark = "BOOKMARK"
)

// Event is one watch event: its type, object key and resourceVersion;
// InitialEnd marks the bookmark that ends the initial events.
type Event struct {
	Type       string
	Item       Item
	InitialEnd bool
}

func (e Event) String() string {
	if e.Type == Bookmark {
		return fmt.Sprintf("BOOKMARK@%d", e.Item.RV)
	}
	return e.Type + " " + e.Item.String()
}

// Watch is one watch as a client ran it, from its request to its end.
type Watch struct {
	Op  string
	Sel Selector
	// RV is the requested resourceVersion: "", "0" or a revision.
	RV string
	// SendInitialEvents and Bookmarks are the request's sendInitialEvents
	// (with resourceVersionMatch=NotOlderThan) and allowWatchBookmarks.
	SendInitialEvents bool
	Bookmarks         bool
	// Watermark is as List's.
	Watermark int64
	Events    []Event
}

// Checked counts what the validation read.
type Checked struct {
	Lists, Pages, Items, Gets, Watches, WatchEvents, Bookmarks int
	HistoryLists, HistoryPages, HistoryItems                   int
}

// Validate checks every list, get, watch and history list against h.
func Validate(h *History, lists []List, gets []Get, watches []Watch, histories []HistoryList) (Checked, []Violation) {
	var c Checked
	var out []Violation
	for _, l := range lists {
		c.Lists++
		c.Pages += len(l.Pages)
		for _, p := range l.Pages {
			c.Items += len(p.Items)
		}
		out = append(out, CheckList(h, l)...)
	}
	for _, g := range gets {
		c.Gets++
		out = append(out, CheckGet(h, g)...)
	}
	for _, w := range watches {
		c.Watches++
		for _, e := range w.Events {
			if e.Type == Bookmark {
				c.Bookmarks++
			} else {
				c.WatchEvents++
			}
		}
		out = append(out, CheckWatch(h, w)...)
	}
	for _, l := range histories {
		c.HistoryLists++
		c.HistoryPages += len(l.Pages)
		for _, p := range l.Pages {
			c.HistoryItems += len(p.Items)
		}
		out = append(out, CheckHistory(h, l)...)
	}
	return c, out
}

// parseRV reads a requested resourceVersion ("" and "0" are 0).
func parseRV(rv string) int64 {
	var n int64
	if _, err := fmt.Sscan(rv, &n); err != nil {
		return 0
	}
	return n
}

// CheckList checks that the list's pages, together, are etcd's state at
// the list's resourceVersion after selection, up to the last key read when
// the list ended early, and that the resourceVersion is one the request
// allows.
func CheckList(h *History, l List) []Violation {
	if len(l.Pages) == 0 {
		return nil
	}
	bad := func(kind, format string, args ...any) []Violation {
		return []Violation{{Kind: kind, Op: l.Op, Detail: fmt.Sprintf(format, args...)}}
	}
	sel, err := l.Sel.compile()
	if err != nil {
		return bad(KindHarnessInput, "%v", err)
	}
	rv := l.Pages[0].RV
	for i, p := range l.Pages {
		if p.RV != rv {
			return bad(KindListRV, "page %d at resourceVersion %d, the first at %d", i, p.RV, rv)
		}
	}
	requested := parseRV(l.RV)
	switch {
	case l.Match == "Exact" && rv != requested:
		return bad(KindListRV, "resourceVersionMatch=Exact at %d answered at %d", requested, rv)
	case l.Match == "NotOlderThan" && rv < requested:
		return bad(KindListRV, "resourceVersionMatch=NotOlderThan at %d answered at %d", requested, rv)
	case l.RV == "" && rv < l.Watermark:
		return bad(KindListRV, "consistent list answered at %d, below %d, written before it was sent", rv, l.Watermark)
	case rv > h.Head():
		return bad(KindListRV, "resourceVersion %d is ahead of etcd's %d", rv, h.Head())
	}
	var got []Item
	for _, p := range l.Pages {
		got = append(got, p.Items...)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Key <= got[i-1].Key {
			return bad(KindList, "items out of key order or repeated: %v then %v", got[i-1], got[i])
		}
	}
	want := h.selected(rv, sel)
	if !l.Complete {
		// Only the keys up to the last one read are known to be complete.
		last := ""
		if len(got) > 0 {
			last = got[len(got)-1].Key
		}
		n := 0
		for n < len(want) && want[n].Key <= last {
			n++
		}
		want = want[:n]
	}
	if d := diffItems(want, got); d != "" {
		return bad(KindList, "at resourceVersion %d: %s", rv, d)
	}
	return nil
}

// diffItems names the items missing from got, extra in got, and at
// another resourceVersion; "" when they are equal.
func diffItems(want, got []Item) string {
	wantRV := map[string]int64{}
	for _, i := range want {
		wantRV[i.Key] = i.RV
	}
	gotRV := map[string]int64{}
	var extra, wrong []string
	for _, i := range got {
		gotRV[i.Key] = i.RV
		w, ok := wantRV[i.Key]
		switch {
		case !ok:
			extra = append(extra, i.String())
		case w != i.RV:
			wrong = append(wrong, fmt.Sprintf("%s (etcd: %d)", i, w))
		}
	}
	var missing []string
	for _, i := range want {
		if _, ok := gotRV[i.Key]; !ok {
			missing = append(missing, i.String())
		}
	}
	var parts []string
	for _, p := range []struct {
		name  string
		items []string
	}{{"missing", missing}, {"extra", extra}, {"wrong resourceVersion", wrong}} {
		if len(p.items) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s: %s", len(p.items), p.name, first(p.items, 5)))
		}
	}
	return strings.Join(parts, "; ")
}

func first(s []string, n int) string {
	if len(s) > n {
		return strings.Join(s[:n], ", ") + ", ..."
	}
	return strings.Join(s, ", ")
}

// CheckGet checks that a get answered a version etcd held: at or after the
// request for a consistent get (RV ""), at any time otherwise.
func CheckGet(h *History, g Get) []Violation {
	found, next := h.versionOf(g.Key, g.Got)
	switch {
	case !found:
		return []Violation{{Kind: KindGet, Op: g.Op, Detail: fmt.Sprintf("%s@%d is no version etcd stored", g.Key, g.Got)}}
	case g.RV == "" && next != 0 && next <= g.Watermark:
		return []Violation{{Kind: KindGet, Op: g.Op, Detail: fmt.Sprintf("consistent get answered %s@%d, replaced at %d, before the get was sent (a write returned %d)", g.Key, g.Got, next, g.Watermark)}}
	}
	return nil
}

// expected is the watch events the changes in (from, to] make for sel, by
// the cacher's rule: a change to a matching object is MODIFIED, one that
// makes it match ADDED, one that makes it stop matching (or deletes it)
// DELETED, at the change's revision.
func (h *History) expected(from, to int64, sel *compiled) []Event {
	state := h.stateAt(from)
	var out []Event
	for _, c := range h.between(from, to) {
		old := state[c.Key]
		apply(state, c)
		was, is := sel.matches(old.object), sel.matches(c.Object)
		item := Item{Key: c.Key, RV: c.Rev}
		switch {
		case was && is:
			out = append(out, Event{Type: Modified, Item: item})
		case !was && is:
			out = append(out, Event{Type: Added, Item: item})
		case was && !is:
			out = append(out, Event{Type: Deleted, Item: item})
		}
	}
	return out
}

// CheckWatch checks one watch: its initial events (if any) are etcd's
// state at one revision S after selection, and every later event is, in
// order and without a gap, the change etcd made after S up to the watch's
// last event or bookmark; bookmarks never go back, never fall below the
// start or what was delivered, and never pass etcd.
func CheckWatch(h *History, w Watch) []Violation {
	bad := func(kind, format string, args ...any) []Violation {
		return []Violation{{Kind: kind, Op: w.Op, Detail: fmt.Sprintf(format, args...)}}
	}
	sel, err := w.Sel.compile()
	if err != nil {
		return bad(KindHarnessInput, "%v", err)
	}
	if v := checkBookmarks(h, w); v != nil {
		return []Violation{*v}
	}
	requested := parseRV(w.RV)
	switch {
	case w.SendInitialEvents:
		end := -1
		for i, e := range w.Events {
			if e.InitialEnd {
				end = i
				break
			}
		}
		if end < 0 {
			// Ended before its initial state was complete: each initial
			// event must be an ADDED of a distinct key.
			return checkPartialInitial(w)
		}
		start := w.Events[end].Item.RV
		if start < requested {
			return bad(KindInitial, "initial events end at %d, below the requested %d", start, requested)
		}
		if w.RV == "" && start < w.Watermark {
			return bad(KindInitial, "consistent initial events end at %d, below %d, written before the watch was sent", start, w.Watermark)
		}
		if d := diffItems(h.selected(start, sel), initialItems(w.Events[:end])); d != "" {
			return bad(KindInitial, "initial events ending at %d: %s", start, d)
		}
		return checkStream(h, w, sel, start, w.Events[end+1:])
	case w.RV == "" || w.RV == "0":
		return checkLegacyInitial(h, w, sel)
	default:
		return checkStream(h, w, sel, requested, w.Events)
	}
}

// checkBookmarks checks bookmarks against each other, the events before
// them, the requested resourceVersion and etcd's head.
func checkBookmarks(h *History, w Watch) *Violation {
	var last, lastBookmark int64
	requested := parseRV(w.RV)
	for i, e := range w.Events {
		if e.Type != Bookmark {
			if e.Item.RV > last {
				last = e.Item.RV
			}
			continue
		}
		rv := e.Item.RV
		var detail string
		switch {
		case rv < lastBookmark:
			detail = fmt.Sprintf("bookmark %d at %d after a bookmark at %d", i, rv, lastBookmark)
		case rv < last:
			detail = fmt.Sprintf("bookmark %d at %d below an event delivered at %d", i, rv, last)
		case rv < requested:
			detail = fmt.Sprintf("bookmark %d at %d below the watch's start %d", i, rv, requested)
		case rv > h.Head():
			detail = fmt.Sprintf("bookmark %d at %d ahead of etcd's %d", i, rv, h.Head())
		}
		if detail != "" {
			return &Violation{Kind: KindBookmark, Op: w.Op, Detail: detail}
		}
		lastBookmark = rv
	}
	return nil
}

func initialItems(events []Event) []Item {
	var items []Item
	for _, e := range events {
		items = append(items, e.Item)
	}
	return items
}

// checkPartialInitial checks the initial events of a watch that ended
// before their end: ADDED events of distinct keys.
func checkPartialInitial(w Watch) []Violation {
	seen := map[string]bool{}
	for _, e := range w.Events {
		switch {
		case e.Type != Added:
			return []Violation{{Kind: KindInitial, Op: w.Op, Detail: fmt.Sprintf("%v among the initial events", e)}}
		case seen[e.Item.Key]:
			return []Violation{{Kind: KindUnique, Op: w.Op, Detail: fmt.Sprintf("%v twice among the initial events", e)}}
		}
		seen[e.Item.Key] = true
	}
	return nil
}

// checkLegacyInitial checks a watch from "" or "0" without
// sendInitialEvents: a prefix of ADDED events is the state at some
// revision S, with nothing marking where it ends, and the rest is the
// stream after S. Some split and revision must fit; the violation reported
// is that of the longest initial prefix.
func checkLegacyInitial(h *History, w Watch, sel *compiled) []Violation {
	longest := 0
	for longest < len(w.Events) && w.Events[longest].Type == Added {
		longest++
	}
	var first []Violation
	for p := longest; p >= 0; p-- {
		v := checkSplit(h, w, sel, p)
		if v == nil {
			return nil
		}
		if first == nil {
			first = v
		}
	}
	return first
}

// checkSplit checks the first p events as the initial state and the rest as
// the stream after it.
func checkSplit(h *History, w Watch, sel *compiled, p int) []Violation {
	initial := initialItems(w.Events[:p])
	var lo int64
	for _, i := range initial {
		lo = max(lo, i.RV)
	}
	hi := h.Head()
	if rest := firstEvent(w.Events[p:]); rest != nil {
		hi = rest.Item.RV - 1
	}
	if lo > hi {
		return []Violation{{Kind: KindInitial, Op: w.Op, Detail: fmt.Sprintf("%d initial events up to %d, then an event at %d", p, lo, hi+1)}}
	}
	// The state changes only at the changes' revisions: try lo, then each
	// change up to hi, applied one at a time.
	// A selection may come back to the same state later (a key selected,
	// then no more): any revision that fits and passes will do.
	state := h.stateAt(lo)
	var mismatch string
	var stream []Violation
	try := func(s int64) bool {
		d := diffItems(selectedOf(state, sel), initial)
		if d != "" {
			if mismatch == "" {
				mismatch = fmt.Sprintf("at %d: %s", s, d)
			}
			return false
		}
		v := checkStream(h, w, sel, s, w.Events[p:])
		if v != nil && stream == nil {
			stream = v
		}
		return v == nil
	}
	if try(lo) {
		return nil
	}
	for _, c := range h.between(lo, hi) {
		old := state[c.Key]
		apply(state, c)
		if !sel.matches(old.object) && !sel.matches(c.Object) {
			continue // the selected state did not change
		}
		if try(c.Rev) {
			return nil
		}
	}
	if stream != nil {
		return stream
	}
	return []Violation{{Kind: KindInitial, Op: w.Op, Detail: fmt.Sprintf("%d initial events are etcd's state at no revision in [%d, %d]; %s", p, lo, hi, mismatch)}}
}

func firstEvent(events []Event) *Event {
	for i := range events {
		if events[i].Type != Bookmark {
			return &events[i]
		}
	}
	return nil
}

// checkStream checks the events of a watch after its start revision: in
// order, once each, above start, and exactly the changes the selector
// makes of etcd's changes in (start, end], end being the last event or
// bookmark.
func checkStream(h *History, w Watch, sel *compiled, start int64, events []Event) []Violation {
	bad := func(kind, format string, args ...any) []Violation {
		return []Violation{{Kind: kind, Op: w.Op, Detail: fmt.Sprintf(format, args...)}}
	}
	var got []Event
	end := start
	seen := map[Item]bool{}
	for _, e := range events {
		end = max(end, e.Item.RV)
		if e.Type == Bookmark {
			continue
		}
		switch {
		case e.Item.RV <= start:
			return bad(KindStart, "%v at or below the watch's start %d", e, start)
		case seen[e.Item]:
			return bad(KindUnique, "%v delivered twice", e)
		case len(got) > 0 && e.Item.RV < got[len(got)-1].Item.RV:
			return bad(KindOrdered, "%v after %v", e, got[len(got)-1])
		}
		seen[e.Item] = true
		got = append(got, e)
	}
	want := h.expected(start, end, sel)
	for i := 0; i < len(want) || i < len(got); i++ {
		switch {
		case i >= len(got):
			return bad(KindReliable, "from %d to %d: %v never delivered (%d of %d events delivered)", start, end, want[i], len(got), len(want))
		case i >= len(want):
			return bad(KindFilter, "from %d to %d: %v is no change the selector makes", start, end, got[i])
		case got[i] == want[i]:
			continue
		case got[i].Item.RV > want[i].Item.RV:
			return bad(KindReliable, "from %d to %d: %v never delivered; next delivered %v", start, end, want[i], got[i])
		case got[i].Item == want[i].Item:
			return bad(KindFilter, "from %d to %d: %v delivered as %s", start, end, want[i], got[i].Type)
		default:
			return bad(KindFilter, "from %d to %d: %v is no change the selector makes (expected next: %v)", start, end, got[i], want[i])
		}
	}
	return nil
}
