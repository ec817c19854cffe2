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
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"unsafe"

	"github.com/google/btree"
)

// probeID is the id that stands, in the tree's comparisons, for the key
// being searched (Table.probe).
const probeID = ^uint32(0)

// btreeDegree is the degree of the tree of ids in key order.
const btreeDegree = 32

// ascendBatch is how many entries Ascend collects from the tree before
// calling back, so that the callbacks run outside the tree's iteration.
const ascendBatch = 64

// slot is where an entry's record is, and its resourceVersion: the entry
// of an id, 16 bytes. The record's length is in its header. chunk is
// noChunk for a free id.
type slot struct {
	rv    uint64
	chunk uint32
	off   uint32
}

// TableStats is the size of a Table.
type TableStats struct {
	// Entries is how many entries the table holds.
	Entries int
	// LiveBytes is the bytes of the live records in the arenas.
	LiveBytes int64
	// ArenaBytes is the bytes of arena memory the table holds, outside
	// the Go heap on Linux.
	ArenaBytes int64
}

// Table holds objects as their encoded bytes, keyed and ordered by storage
// key, with postings per indexed value. It is not safe for concurrent use.
//
// Each entry is a record appended to the arena: its key, the hashes of its
// index values (so that its postings can be removed without the caller)
// and its value, after a header of the lengths and the entry's id. An id
// is a compact uint32 numbering a pointer-free slot (the record's chunk
// and offset, and the resourceVersion); a B-tree of ids, compared by the
// keys of their records, orders the entries, and postings map the hash of
// each (index, value) pair to ids. Replacing or deleting an entry leaves
// its old record dead in its chunk, and chunks less than half live are
// compacted after the mutation that made them so.
type Table struct {
	indexNames []string
	seed       maphash.Seed
	arena      arena
	// slots are the entries by id; freeIDs the ids free for reuse.
	slots   []slot
	freeIDs []uint32
	tree    *btree.BTreeG[uint32]
	// probe is the key probeID stands for during a search.
	probe    string
	postings postings
	entries  int
	// hashes is scratch for the hashes of a Put.
	hashes []uint64
}

// NewTable returns an empty table with the indexes indexNames.
func NewTable(indexNames []string) *Table {
	return newTableSize(indexNames, defaultChunkSize)
}

// newTableSize returns an empty table whose arena chunks are chunkSize
// bytes (rounded up to the allocation granule).
func newTableSize(indexNames []string, chunkSize int) *Table {
	t := &Table{
		indexNames: slices.Clone(indexNames),
		seed:       maphash.MakeSeed(),
		arena:      newArena(chunkSize),
	}
	t.tree = btree.NewG(btreeDegree, t.less)
	return t
}

// less orders ids by the keys of their records.
func (t *Table) less(a, b uint32) bool { return t.keyOf(a) < t.keyOf(b) }

// record is an entry's record, parsed.
type record struct {
	id     uint32
	key    string
	hashes []byte
	value  []byte
	size   int
}

// recordSize is the size of the record of an entry.
func recordSize(key string, nHashes int, value []byte) int {
	return uvarintLen(len(key)) + uvarintLen(len(value)) + uvarintLen(nHashes) + 4 +
		len(key) + 8*nHashes + len(value)
}

func uvarintLen(n int) int {
	l := 1
	for n >= 0x80 {
		n >>= 7
		l++
	}
	return l
}

// parseRecord parses the record at the start of b.
func parseRecord(b []byte) record {
	klen, p := binary.Uvarint(b)
	vlen, n := binary.Uvarint(b[p:])
	p += n
	nh, n := binary.Uvarint(b[p:])
	p += n
	var r record
	r.id = binary.LittleEndian.Uint32(b[p:])
	p += 4
	r.key = aliasString(b[p : p+int(klen)])
	p += int(klen)
	r.hashes = b[p : p+8*int(nh) : p+8*int(nh)]
	p += 8 * int(nh)
	r.value = b[p : p+int(vlen) : p+int(vlen)]
	r.size = p + int(vlen)
	return r
}

// aliasString is b as a string, without a copy: b must not change while
// the string is in use.
func aliasString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b)) //nolint:gosec // arena bytes, immutable while the record lives
}

// recordAt returns the record slot s points to.
func (t *Table) recordAt(s slot) record {
	return parseRecord(t.arena.chunks[s.chunk].buf[s.off:])
}

// keyOf returns the key of id, or the probe for probeID.
func (t *Table) keyOf(id uint32) string {
	if id == probeID {
		return t.probe
	}
	s := t.slots[id]
	b := t.arena.chunks[s.chunk].buf[s.off:]
	klen, p := binary.Uvarint(b)
	// Skip the value length and hash count, one byte each or more.
	for b[p] >= 0x80 {
		p++
	}
	p++
	for b[p] >= 0x80 {
		p++
	}
	p += 1 + 4
	return aliasString(b[p : p+int(klen)])
}

// writeRecord appends the record of an entry to the arena.
func (t *Table) writeRecord(id uint32, key string, hashes []uint64, value []byte) (ci, off uint32) {
	ci, off, b := t.arena.alloc(recordSize(key, len(hashes), value))
	p := binary.PutUvarint(b, uint64(len(key)))
	p += binary.PutUvarint(b[p:], uint64(len(value)))
	p += binary.PutUvarint(b[p:], uint64(len(hashes)))
	binary.LittleEndian.PutUint32(b[p:], id)
	p += 4
	p += copy(b[p:], key)
	for _, h := range hashes {
		binary.LittleEndian.PutUint64(b[p:], h)
		p += 8
	}
	copy(b[p:], value)
	return ci, off
}

// find returns the id of key's entry.
func (t *Table) find(key string) (uint32, bool) {
	t.probe = key
	id, ok := t.tree.Get(probeID)
	t.probe = ""
	return id, ok
}

// hash is the postings hash of value in index i: never 0.
func (t *Table) hash(i int, value string) uint64 {
	h := maphash.String(t.seed, value) ^ (uint64(i+1) * 0x9e3779b97f4a7c15)
	if h == 0 {
		h = 1
	}
	return h
}

// hashesOf returns the distinct hashes of indexValues, in t.hashes.
func (t *Table) hashesOf(indexValues [][]string) []uint64 {
	hs := t.hashes[:0]
	for i, values := range indexValues {
		if i >= len(t.indexNames) {
			break
		}
		for _, v := range values {
			if h := t.hash(i, v); !slices.Contains(hs, h) {
				hs = append(hs, h)
			}
		}
	}
	t.hashes = hs
	return hs
}

// containsHash is whether the 8-byte hashes of a record hold h.
func containsHash(hashes []byte, h uint64) bool {
	for p := 0; p+8 <= len(hashes); p += 8 {
		if binary.LittleEndian.Uint64(hashes[p:]) == h {
			return true
		}
	}
	return false
}

// newID returns a free id.
func (t *Table) newID() uint32 {
	if n := len(t.freeIDs); n > 0 {
		id := t.freeIDs[n-1]
		t.freeIDs = t.freeIDs[:n-1]
		return id
	}
	if len(t.slots) >= listBit {
		panic(fmt.Sprintf("livestore: more than %d entries", listBit))
	}
	t.slots = append(t.slots, slot{chunk: noChunk})
	return uint32(len(t.slots) - 1)
}

// Put stores value for key at resourceVersion rv, with indexValues[i] the
// values of index indexNames[i] (nil or short slices allowed: no value),
// replacing any entry for key and its postings.
func (t *Table) Put(key string, rv uint64, value []byte, indexValues [][]string) {
	hs := t.hashesOf(indexValues)
	nIDs := len(t.slots)
	if id, ok := t.find(key); ok {
		old := t.slots[id]
		r := t.recordAt(old)
		for p := 0; p < len(r.hashes); p += 8 {
			if h := binary.LittleEndian.Uint64(r.hashes[p:]); !slices.Contains(hs, h) {
				t.postings.remove(h, id, nIDs)
			}
		}
		for _, h := range hs {
			if !containsHash(r.hashes, h) {
				t.postings.add(h, id, nIDs)
			}
		}
		// The new record is written before the old one is released: key
		// and value may alias it.
		ci, off := t.writeRecord(id, key, hs, value)
		t.slots[id] = slot{rv: rv, chunk: ci, off: off}
		t.arena.release(old.chunk, r.size)
	} else {
		id := t.newID()
		ci, off := t.writeRecord(id, key, hs, value)
		t.slots[id] = slot{rv: rv, chunk: ci, off: off}
		t.tree.ReplaceOrInsert(id)
		nIDs = len(t.slots)
		for _, h := range hs {
			t.postings.add(h, id, nIDs)
		}
		t.entries++
	}
	t.compact()
}

// Delete removes key's entry; ok false when there was none.
func (t *Table) Delete(key string) (rv uint64, ok bool) {
	id, ok := t.find(key)
	if !ok {
		return 0, false
	}
	s := t.slots[id]
	r := t.recordAt(s)
	for p := 0; p < len(r.hashes); p += 8 {
		t.postings.remove(binary.LittleEndian.Uint64(r.hashes[p:]), id, len(t.slots))
	}
	t.tree.Delete(id)
	t.arena.release(s.chunk, r.size)
	t.slots[id] = slot{chunk: noChunk}
	t.freeIDs = append(t.freeIDs, id)
	t.entries--
	t.compact()
	return s.rv, true
}

// compact moves the live records of the chunks queued for compaction to
// the tail, and frees the chunks. A chunk is queued when it falls below
// half live, so the bytes moved are at most the bytes that died in it: the
// work is amortized over the mutations that freed them.
func (t *Table) compact() {
	a := &t.arena
	for {
		ci, ok := a.popQueue()
		if !ok {
			return
		}
		buf, used := a.chunks[ci].buf, a.chunks[ci].used
		for off := 0; off < used; {
			r := parseRecord(buf[off:])
			if int(r.id) < len(t.slots) && t.slots[r.id].chunk == ci && t.slots[r.id].off == uint32(off) {
				nci, noff, b := a.alloc(r.size)
				copy(b, buf[off:off+r.size])
				t.slots[r.id].chunk, t.slots[r.id].off = nci, noff
				a.chunks[ci].live -= r.size
				a.live -= int64(r.size)
			}
			off += r.size
		}
		a.freeChunk(ci)
		a.compactions++
	}
}

// Get returns key's value and rv. value aliases the table's memory: valid
// only until the next Put, Delete, Reset or Close.
func (t *Table) Get(key string) (value []byte, rv uint64, ok bool) {
	id, ok := t.find(key)
	if !ok {
		return nil, 0, false
	}
	s := t.slots[id]
	return t.recordAt(s).value, s.rv, true
}

// start is where entries with prefix after `after` begin: the greater of
// the two.
func start(prefix, after string) string {
	if after > prefix {
		return after
	}
	return prefix
}

// Ascend calls fn for each entry whose key has prefix, in key order,
// starting after `after` (strictly greater; "" = from the first), until fn
// returns false. Keys and values passed to fn alias table memory: keys are
// valid during the call, values until the next mutation. fn may read the
// table but not change it.
func (t *Table) Ascend(prefix, after string, fn func(key string, rv uint64, value []byte) bool) {
	t.ascend(prefix, after, nil, fn)
}

// ascend is Ascend over the entries whose id keep keeps (all when nil).
// It walks the tree in batches and calls fn between them, outside the
// tree's iteration, so that fn may search the table.
func (t *Table) ascend(prefix, after string, keep func(id uint32) bool, fn func(key string, rv uint64, value []byte) bool) {
	// Keys are from `from` on, and skip (after, then the last key of the
	// batch before) is passed over.
	from, skip := start(prefix, after), after
	var batch [ascendBatch]uint32
	for {
		n := 0
		t.probe = from
		t.tree.AscendGreaterOrEqual(probeID, func(id uint32) bool {
			k := t.keyOf(id)
			if !strings.HasPrefix(k, prefix) {
				return false
			}
			if skip != "" && k == skip || keep != nil && !keep(id) {
				return true
			}
			batch[n] = id
			n++
			return n < len(batch)
		})
		t.probe = ""
		for _, id := range batch[:n] {
			s := t.slots[id]
			r := t.recordAt(s)
			if !fn(r.key, s.rv, r.value) {
				return
			}
		}
		if n < len(batch) {
			return
		}
		from = t.keyOf(batch[n-1])
		skip = from
	}
}

// Lookup calls fn, in key order, for the entries with prefix whose index
// `index` holds value; it may also call fn for entries whose value only
// collides with it by hash (callers filter what they decode). ok is false
// when index is not one of the table's indexes. Keys and values passed to
// fn alias table memory as Ascend's; fn may read the table but not change
// it.
func (t *Table) Lookup(index, value, prefix string, fn func(key string, rv uint64, value []byte) bool) (ok bool) {
	i := slices.Index(t.indexNames, index)
	if i < 0 {
		return false
	}
	h := t.hash(i, value)
	if l := t.postings.list(h); l != nil && l.bits != nil {
		// The value is common: walk the prefix in key order, keeping
		// the posting's ids, rather than sort them.
		t.ascend(prefix, "", l.has, fn)
		return true
	}
	var one [1]uint32
	ids := t.postings.appendIDs(one[:0], h)
	ids = slices.DeleteFunc(ids, func(id uint32) bool { return !strings.HasPrefix(t.keyOf(id), prefix) })
	slices.SortFunc(ids, func(a, b uint32) int { return strings.Compare(t.keyOf(a), t.keyOf(b)) })
	for _, id := range ids {
		s := t.slots[id]
		r := t.recordAt(s)
		if !fn(r.key, s.rv, r.value) {
			break
		}
	}
	return true
}

// Count is how many entries with prefix have keys after `after`. It walks
// them.
func (t *Table) Count(prefix, after string) int {
	from := start(prefix, after)
	n := 0
	t.probe = from
	t.tree.AscendGreaterOrEqual(probeID, func(id uint32) bool {
		k := t.keyOf(id)
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		if after == "" || k != after {
			n++
		}
		return true
	})
	t.probe = ""
	return n
}

// Len is how many entries the table holds.
func (t *Table) Len() int { return t.entries }

// Reset empties the table (a relist replaces everything).
func (t *Table) Reset() {
	t.arena.freeAll()
	t.slots, t.freeIDs = nil, nil
	t.tree.Clear(false)
	t.postings.reset()
	t.entries = 0
}

// Stats returns the table's entries, the bytes of its live records in the
// arenas and the bytes of arena memory mapped.
func (t *Table) Stats() TableStats {
	return TableStats{Entries: t.entries, LiveBytes: t.arena.live, ArenaBytes: t.arena.mapped}
}

// Close returns the arenas' memory; the table is unusable after. Closing
// again does nothing.
func (t *Table) Close() {
	if t.tree == nil {
		return
	}
	t.Reset()
	t.tree = nil
}
