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

package livestore

import (
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

// historyRecord is a change as the history hands it out: its bytes copied
// out of the table, without the decoded objects the watchers were sent.
type historyRecord struct {
	eventType watch.EventType
	key       string
	rv        uint64
	value     []byte
	prevRV    uint64
	prevValue []byte // nil for an object created by the change
}

// historyEntry is a change the history keeps: where the table's records of
// the state after it and the state before it are, pointer-free.
type historyEntry struct {
	// at is when the change was applied, in Unix nanoseconds.
	at int64
	rv uint64
	// epoch is the table's epoch the change was applied in: the records
	// it refers to stay mapped while the history pins it.
	epoch     uint64
	cur, prev slot
	// size is the bytes of the records the change refers to.
	size      int64
	eventType uint8
	hasPrev   bool
}

// eventTypes are the changes' types by their historyEntry number.
var eventTypes = []watch.EventType{watch.Added, watch.Modified, watch.Deleted}

// history is the recent changes, for watches that resume from a
// resourceVersion: those of the last window, at most budget bytes of
// states. It keeps no bytes of its own: its changes refer to the records
// of the table, which are never written in place, and it pins the table's
// epoch of its oldest change, so that the chunks freed since stay mapped
// until it lets the changes that may refer to them go.
type history struct {
	window time.Duration
	budget int64
	table  *Table
	// entries[head:] are the changes kept, oldest first; bytes the size
	// of their states.
	entries []historyEntry
	head    int
	bytes   int64
	// pinned says the history pins the table's epoch pin.
	pinned bool
	pin    uint64
	// floorRV is the oldest revision a watch can resume from: every
	// change after it is kept. It is the revision of the list the table was
	// loaded from, until changes after it are dropped.
	floorRV uint64
}

// newHistory returns a history of the changes of the last window, of at
// most budget bytes of states.
func newHistory(window time.Duration, budget int) *history {
	return &history{window: window, budget: int64(budget)}
}

// reset starts the history of table, loaded at listRV.
func (h *history) reset(table *Table, listRV uint64) {
	h.unpin()
	h.table, h.entries, h.head, h.bytes, h.floorRV = table, h.entries[:0], 0, 0, listRV
}

// close lets the table's memory go; the history keeps nothing after.
func (h *history) close() {
	h.unpin()
	h.table, h.entries, h.head, h.bytes = nil, nil, 0, 0
}

func (h *history) unpin() {
	if h.pinned {
		h.table.arena.pins.unpin(h.pin)
		h.pinned = false
	}
}

// begin starts a change of the table: what the change frees stays mapped
// while the history keeps it. It returns the change's epoch.
func (h *history) begin() uint64 {
	if h.table == nil {
		return 0
	}
	e := h.table.arena.pins.advance()
	if !h.pinned {
		h.table.arena.pins.pinAt(e)
		h.pin, h.pinned = e, true
	}
	return e
}

// add keeps a change of epoch, applied at now, whose state is the record
// at cur (for a deletion, the state deleted) and whose previous state, if
// hasPrev, the record at prev; then lets go of what is past the window or
// the budget.
func (h *history) add(eventType watch.EventType, rv, epoch uint64, cur, prev slot, hasPrev bool, now time.Time) {
	if h.table == nil {
		return
	}
	e := historyEntry{at: now.UnixNano(), rv: rv, epoch: epoch, cur: cur, prev: prev, hasPrev: hasPrev}
	for i, t := range eventTypes {
		if t == eventType {
			e.eventType = uint8(i)
		}
	}
	e.size = int64(h.table.recordAt(cur).size)
	if hasPrev && prev != cur {
		e.size += int64(h.table.recordAt(prev).size)
	}
	h.entries = append(h.entries, e)
	h.bytes += e.size
	h.expire(now)
}

// expire lets go of the changes older than the window, and of the oldest
// ones while the history holds more than its budget.
func (h *history) expire(now time.Time) {
	kept := h.entries[h.head:]
	cutoff := now.Add(-h.window).UnixNano()
	end := sort.Search(len(kept), func(i int) bool { return kept[i].at >= cutoff })
	bytes := h.bytes
	for i := range end {
		bytes -= kept[i].size
	}
	for end < len(kept) && bytes > h.budget {
		bytes -= kept[end].size
		end++
	}
	if end > 0 {
		h.drop(h.head + end)
	}
	if h.head == len(h.entries) {
		h.unpin()
	}
}

// drop forgets the entries before end, and pins the epoch of the oldest
// one kept in place of the one pinned.
func (h *history) drop(end int) {
	for _, e := range h.entries[h.head:end] {
		h.bytes -= e.size
	}
	h.floorRV = h.entries[end-1].rv
	h.head = end
	if h.head < len(h.entries) {
		if oldest := h.entries[h.head].epoch; h.pinned && oldest != h.pin {
			h.table.arena.pins.pinAt(oldest)
			h.table.arena.pins.unpin(h.pin)
			h.pin = oldest
		}
	}
	if h.head == len(h.entries) {
		h.entries, h.head = h.entries[:0], 0
	} else if h.head > 1024 && h.head > len(h.entries)/2 {
		h.entries = h.entries[:copy(h.entries, h.entries[h.head:])]
		h.head = 0
	}
}

// since is the changes after rv, copied out of the table, or 410 Expired
// when some of them are no longer kept (the cacher's "too old resource
// version").
func (h *history) since(rv uint64) ([]historyRecord, error) {
	if h.table == nil {
		return nil, storage.ErrStorageNotReady
	}
	if rv < h.floorRV {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, h.floorRV))
	}
	kept := h.entries[h.head:]
	first := sort.Search(len(kept), func(i int) bool { return kept[i].rv > rv })
	records := make([]historyRecord, 0, len(kept)-first)
	for _, e := range kept[first:] {
		cur := h.table.recordAt(e.cur)
		r := historyRecord{eventType: eventTypes[e.eventType], rv: e.rv, key: string([]byte(cur.key)), value: append([]byte(nil), cur.value...)}
		if e.hasPrev {
			r.prevRV, r.prevValue = e.prev.rv, append([]byte{}, h.table.recordAt(e.prev).value...)
		}
		records = append(records, r)
	}
	return records, nil
}
