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
	"sort"
	"time"
)

// KindHistory is a page of history that is not in order, holds a state
// etcd never stored, or leaves out a live event of its window.
const KindHistory = "history"

// HistoryPage is one answer of a list with history.since.
type HistoryPage struct {
	// Items are the page's events in the order answered.
	Items    []Item
	Continue bool
	// Watermark is the highest resourceVersion a write returned before the
	// page was sent, and Head etcd's revision read once it was answered
	// (0: unknown, and the page's completeness is not checked).
	Watermark, Head int64
}

// HistoryList is one list with history.since=Since (no history.until) as a
// client paged it.
type HistoryList struct {
	Op string
	// Sel is the selection without the history terms.
	Sel   Selector
	Since time.Time
	Pages []HistoryPage
}

// position is a history item's place: newest last observation first, then
// by UID.
type position struct {
	observed time.Time
	uid      string
}

// before says whether p comes before q in a page.
func (p position) before(q position) bool {
	if !p.observed.Equal(q.observed) {
		return p.observed.After(q.observed)
	}
	return p.uid < q.uid
}

func (p position) String() string {
	return fmt.Sprintf("(%s, %s)", p.observed.Format(time.RFC3339Nano), p.uid)
}

func positionOf(o *Object) position { return position{observed: o.Observed, uid: o.UID} }

// CheckHistory checks a paged history list: every item is a state etcd
// stored, the items are in order across pages, and each page holds every
// event that was live and unchanged from before the page was sent until
// it was answered, that the selection matches, observed since Since and
// between the previous page's last item and this page's (to the window's
// start on the last page), at its live resourceVersion.
func CheckHistory(h *History, l HistoryList) []Violation {
	bad := func(format string, args ...any) []Violation {
		return []Violation{{Kind: KindHistory, Op: l.Op, Detail: fmt.Sprintf(format, args...)}}
	}
	sel, err := l.Sel.compile()
	if err != nil {
		return []Violation{{Kind: KindHarnessInput, Op: l.Op, Detail: err.Error()}}
	}
	var after *position // the previous page's last item
	var afterItem Item
	for n, page := range l.Pages {
		var last *position
		var lastItem Item
		got := map[Item]bool{}
		for _, it := range page.Items {
			o := h.object(it.Key, it.RV)
			if o == nil {
				return bad("page %d: %v is no state etcd stored", n, it)
			}
			p := positionOf(o)
			prev, prevItem := last, lastItem
			if prev == nil {
				prev, prevItem = after, afterItem
			}
			if prev != nil && !prev.before(p) {
				return bad("page %d: %v at %v does not come after %v at %v", n, it, p, prevItem, prev)
			}
			last, lastItem = &p, it
			got[it] = true
		}
		if page.Head != 0 && (!page.Continue || last != nil) {
			if missing := h.stableLive(sel, l.Since, page.Watermark, page.Head, after, last, page.Continue, got); len(missing) > 0 {
				return bad("page %d (written before it: %d, etcd after it: %d): %d live events of its window missing: %s",
					n, page.Watermark, page.Head, len(missing), first(missing, 5))
			}
		}
		if last != nil {
			after, afterItem = last, lastItem
		}
	}
	return nil
}

// stableLive is the events selected, observed since since, live at from
// and unchanged up to to, between after (exclusive) and upTo (inclusive;
// to the window's start when bounded is false), that got lacks.
func (h *History) stableLive(sel *compiled, since time.Time, from, to int64, after, upTo *position, bounded bool, got map[Item]bool) []string {
	var missing []string
	for key, v := range h.stateAt(from) {
		o := v.object
		if !sel.matches(o) || o.Observed.Before(since) {
			continue
		}
		p := positionOf(o)
		if after != nil && !after.before(p) || bounded && upTo.before(p) {
			continue
		}
		if _, next := h.versionOf(key, v.modRev); next != 0 && next <= to {
			continue // changed while the page was read
		}
		if it := (Item{Key: key, RV: v.modRev}); !got[it] {
			missing = append(missing, fmt.Sprintf("%v at %v", it, p))
		}
	}
	sort.Strings(missing)
	return missing
}
