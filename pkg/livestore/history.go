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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

// historyRecord is a change as the history hands it out: encoded, without
// the decoded objects the watchers were sent.
type historyRecord struct {
	eventType watch.EventType
	key       string
	rv        uint64
	value     []byte
	prevRV    uint64
	prevValue []byte // nil for an object created by the change
}

// historyEntry is where the history keeps a change: its bytes (key, value,
// previous value, one after the other) at off in the ring. Pointer-free,
// as the ring is.
type historyEntry struct {
	rv, prevRV                uint64
	off                       int
	keyLen, valueLen, prevLen int32
	eventType                 uint8
	hasPrev                   bool
}

func (e *historyEntry) size() int { return int(e.keyLen) + int(e.valueLen) + int(e.prevLen) }

// eventTypes are the changes' types by their historyEntry number.
var eventTypes = []watch.EventType{watch.Added, watch.Modified, watch.Deleted}

// history is the recent changes, for watches that resume from a
// resourceVersion: as many as fit in a ring of memory mapped outside the Go
// heap, oldest overwritten first.
type history struct {
	ring []byte
	// write is where the next change's bytes go.
	write int
	// entries[head:] are the changes kept, oldest first.
	entries []historyEntry
	head    int
	// floorRV is the oldest revision a watch can resume from: every
	// change after it is kept. It is the revision of the list the table was
	// loaded from, until changes after it are dropped.
	floorRV uint64
}

// newHistory returns a history of at most budget bytes (rounded up to
// whole pages). The pages are mapped now and take memory as they are
// written.
func newHistory(budget int) (*history, error) {
	if rem := budget % chunkGranule; rem != 0 {
		budget += chunkGranule - rem
	}
	ring, err := allocChunk(budget)
	if err != nil {
		return nil, err
	}
	addMapped(int64(len(ring)))
	return &history{ring: ring}, nil
}

// close returns the ring's memory; the history is unusable after.
func (h *history) close() {
	if h.ring == nil {
		return
	}
	addMapped(-int64(len(h.ring)))
	freeChunk(h.ring)
	h.ring = nil
	h.entries, h.head = nil, 0
}

// reset starts the history of a table loaded at listRV.
func (h *history) reset(listRV uint64) {
	h.write, h.entries, h.head, h.floorRV = 0, h.entries[:0], 0, listRV
}

func (h *history) add(c *change) {
	if h.ring == nil {
		return
	}
	var typ uint8
	for i, t := range eventTypes {
		if t == c.eventType {
			typ = uint8(i)
		}
	}
	e := historyEntry{rv: c.object.rv, keyLen: int32(len(c.object.key)), valueLen: int32(len(c.object.value)), eventType: typ}
	if c.prev != nil {
		e.hasPrev, e.prevRV, e.prevLen = true, c.prev.rv, int32(len(c.prev.value))
	}
	n := e.size()
	if n > len(h.ring) {
		// Too large to keep: the watches resuming from before it must list.
		h.drop(len(h.entries))
		h.write, h.floorRV = 0, e.rv
		return
	}
	if h.write+n > len(h.ring) {
		h.write = 0 // the ring's end is left unused
	}
	// Drop the oldest changes whose bytes the new one overwrites.
	for h.head < len(h.entries) && overlaps(h.entries[h.head], h.write, n) {
		h.drop(h.head + 1)
	}
	e.off = h.write
	b := h.ring[e.off:]
	b = b[copy(b, c.object.key):]
	b = b[copy(b, c.object.value):]
	if c.prev != nil {
		copy(b, c.prev.value)
	}
	h.write += n
	h.entries = append(h.entries, e)
}

// drop forgets the entries before end.
func (h *history) drop(end int) {
	if end > h.head {
		h.floorRV = h.entries[end-1].rv
	}
	h.head = end
	if h.head == len(h.entries) {
		h.entries, h.head = h.entries[:0], 0
	} else if h.head > 1024 && h.head > len(h.entries)/2 {
		h.entries = h.entries[:copy(h.entries, h.entries[h.head:])]
		h.head = 0
	}
}

func overlaps(e historyEntry, off, n int) bool {
	return e.off < off+n && off < e.off+e.size()
}

// since is the changes after rv, copied out of the ring, or 410 Expired
// when some of them are no longer kept (the watch cache's "too old
// resource version").
func (h *history) since(rv uint64) ([]historyRecord, error) {
	if h.ring == nil {
		return nil, storage.ErrStorageNotReady
	}
	if rv < h.floorRV {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, h.floorRV))
	}
	kept := h.entries[h.head:]
	first := sort.Search(len(kept), func(i int) bool { return kept[i].rv > rv })
	records := make([]historyRecord, 0, len(kept)-first)
	for _, e := range kept[first:] {
		b := h.ring[e.off : e.off+e.size()]
		r := historyRecord{eventType: eventTypes[e.eventType], rv: e.rv, key: string(b[:e.keyLen])}
		b = b[e.keyLen:]
		r.value = append([]byte(nil), b[:e.valueLen]...)
		if e.hasPrev {
			r.prevRV, r.prevValue = e.prevRV, append([]byte{}, b[e.valueLen:]...)
		}
		records = append(records, r)
	}
	return records, nil
}
