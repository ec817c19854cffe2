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
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/google/btree"
)

// btreeDegree is the degree of the tree of entries in key order.
const btreeDegree = 32

// probeChunk marks a slot that stands, in the tree's comparisons, for a
// key being searched rather than for a record (probes).
const probeChunk = noChunk - 1

// maxProbes bounds the searches in flight at once; a search holds its
// probe only while it descends the tree.
const maxProbes = 64

// scanCheckEvery is how many entries a scan visits between two checks of
// its context.
const scanCheckEvery = 256

// slot is where an entry's record is, and its resourceVersion: 16 bytes,
// pointer-free. The tree orders slots by the keys of their records; a
// record's header holds its id and its length. chunk is noChunk for a free
// id.
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
	// the Go heap on Linux, chunks that open scans still read included.
	ArenaBytes int64
}

// Table holds objects as their encoded bytes, keyed and ordered by storage
// key, with postings per indexed value.
//
// Its mutations (Put, Delete, Reset, Close) are exclusive: no other call
// runs with them. Its reads (Get, Len, Stats, Scan, ScanIndex and the
// helpers over them) may run concurrently with each other. A Scan, once
// taken, is read and released at any time, concurrently with anything:
// it is the table as it was when taken, and the bytes it hands out stay
// mapped until it is released.
//
// Each entry is a record appended to the arena: its key, the hashes of its
// index values (so that its postings can be removed without the caller)
// and its value, after a header of the lengths and the entry's id. An id
// is a small uint32 numbering a pointer-free slot; a copy-on-write
// B-tree of slots, compared by the keys of their records, orders the
// entries, and postings map the hash of each (index, value) pair to ids.
// Records are immutable: replacing or deleting an entry leaves its old
// record dead in its chunk, and chunks less than half live are compacted
// after the mutation that made them so.
type Table struct {
	indexNames []string
	seed       maphash.Seed
	arena      *arena
	// slots are the entries by id; freeIDs the ids free for reuse.
	slots   []slot
	freeIDs []uint32
	tree    *btree.BTreeG[slot]
	// clone is a copy of tree that no mutation has outdated, shared by
	// the scans taken since; cloneMu serializes its making.
	cloneMu sync.Mutex
	clone   *btree.BTreeG[slot]
	probes  *probes
	// writeProbe is the probe of the mutations, which are exclusive.
	writeProbe slot
	postings   postings
	entries    int
	closed     bool
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
		probes:     newProbes(),
	}
	t.writeProbe = t.probes.reserve()
	t.tree = btree.NewG(btreeDegree, t.less)
	return t
}

// probes are the keys that searches compare the tree's slots with: a
// search stores its key in a probe and descends the tree with the probe's
// slot. Probes are shared by concurrent searches, each holding its own.
type probes struct {
	keys [maxProbes + 1]atomic.Pointer[string]
	free chan uint32
}

func newProbes() *probes {
	p := &probes{free: make(chan uint32, maxProbes+1)}
	for i := range maxProbes + 1 {
		p.free <- uint32(i)
	}
	return p
}

// reserve takes a probe for good.
func (p *probes) reserve() slot { return slot{chunk: probeChunk, off: <-p.free} }

// acquire is a probe holding key, until release.
func (p *probes) acquire(key string) slot {
	s := slot{chunk: probeChunk, off: <-p.free}
	p.set(s, key)
	return s
}

func (p *probes) set(s slot, key string) { p.keys[s.off].Store(&key) }

func (p *probes) release(s slot) {
	p.keys[s.off].Store(nil)
	p.free <- s.off
}

// less orders slots by the keys of their records.
func (t *Table) less(a, b slot) bool { return t.keyOf(a) < t.keyOf(b) }

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
	return parseRecord(t.arena.bytesOf(s.chunk)[s.off:])
}

// keyOf returns the key of the record s points to, or the probe's key.
func (t *Table) keyOf(s slot) string {
	if s.chunk == probeChunk {
		return *t.probes.keys[s.off].Load()
	}
	b := t.arena.bytesOf(s.chunk)[s.off:]
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
func (t *Table) writeRecord(id uint32, key string, hashes []uint64, value []byte) (ci, off uint32, err error) {
	ci, off, b, err := t.arena.alloc(recordSize(key, len(hashes), value))
	if err != nil {
		return 0, 0, err
	}
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
	return ci, off, nil
}

// find returns the slot of key's entry in tree.
func (t *Table) find(tree *btree.BTreeG[slot], key string) (slot, bool) {
	probe := t.probes.acquire(key)
	defer t.probes.release(probe)
	return tree.Get(probe)
}

// findForWrite is find for the mutations, with their own probe.
func (t *Table) findForWrite(key string) (slot, bool) {
	t.probes.set(t.writeProbe, key)
	s, ok := t.tree.Get(t.writeProbe)
	t.probes.set(t.writeProbe, "")
	return s, ok
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
func (t *Table) newID() (uint32, error) {
	if n := len(t.freeIDs); n > 0 {
		id := t.freeIDs[n-1]
		t.freeIDs = t.freeIDs[:n-1]
		return id, nil
	}
	if len(t.slots) >= listBit {
		return 0, fmt.Errorf("livestore: more than %d entries", listBit)
	}
	t.slots = append(t.slots, slot{chunk: noChunk})
	return uint32(len(t.slots) - 1), nil
}

// mutated outdates the clone the scans share.
func (t *Table) mutated() { t.clone = nil }

// Put stores value for key at resourceVersion rv, with indexValues[i] the
// values of index indexNames[i] (nil or short slices allowed: no value),
// replacing any entry for key and its postings. It fails, changing
// nothing, when the arena cannot map memory.
func (t *Table) Put(key string, rv uint64, value []byte, indexValues [][]string) error {
	_, _, _, err := t.put(key, rv, value, indexValues)
	return err
}

// put is Put, returning where the new record is, and the old one (whose
// bytes stay as they were until its chunk is freed) if there was one.
func (t *Table) put(key string, rv uint64, value []byte, indexValues [][]string) (cur, old slot, replaced bool, err error) {
	if t.closed {
		return slot{}, slot{}, false, fmt.Errorf("livestore: put in a closed table")
	}
	hs := t.hashesOf(indexValues)
	old, replaced = t.findForWrite(key)
	var id uint32
	if replaced {
		id = t.recordAt(old).id
	} else if id, err = t.newID(); err != nil {
		return slot{}, slot{}, false, err
	}
	// The new record is written before the old one is released: key and
	// value may alias it.
	ci, off, err := t.writeRecord(id, key, hs, value)
	if err != nil {
		if !replaced {
			t.freeIDs = append(t.freeIDs, id)
		}
		return slot{}, slot{}, false, err
	}
	t.mutated()
	cur = slot{rv: rv, chunk: ci, off: off}
	nIDs := len(t.slots)
	t.slots[id] = cur
	t.tree.ReplaceOrInsert(cur)
	if replaced {
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
		t.arena.release(old.chunk, r.size)
	} else {
		for _, h := range hs {
			t.postings.add(h, id, nIDs)
		}
		t.entries++
	}
	t.relocate()
	return cur, old, replaced, nil
}

// Delete removes key's entry; ok false when there was none.
func (t *Table) Delete(key string) (rv uint64, ok bool) {
	s, ok := t.remove(key)
	return s.rv, ok
}

// remove is Delete, returning where the removed record is: its bytes stay
// as they were until its chunk is freed.
func (t *Table) remove(key string) (slot, bool) {
	if t.closed {
		return slot{}, false
	}
	s, ok := t.findForWrite(key)
	if !ok {
		return slot{}, false
	}
	t.mutated()
	r := t.recordAt(s)
	for p := 0; p < len(r.hashes); p += 8 {
		t.postings.remove(binary.LittleEndian.Uint64(r.hashes[p:]), r.id, len(t.slots))
	}
	t.tree.Delete(s)
	t.arena.release(s.chunk, r.size)
	t.slots[r.id] = slot{chunk: noChunk}
	t.freeIDs = append(t.freeIDs, r.id)
	t.entries--
	t.relocate()
	return s, true
}

// relocate moves the live records of the chunks queued for relocation to
// the tail, and frees the chunks. A chunk is queued when it falls below
// half live, so the bytes moved are at most the bytes that died in it: the
// work is amortized over the mutations that freed them. A chunk whose
// records cannot be moved (no memory to map) stays as it is.
func (t *Table) relocate() {
	a := t.arena
	for {
		ci, ok := a.popQueue()
		if !ok {
			return
		}
		buf, used := a.chunks[ci].buf, a.chunks[ci].used
		for off := 0; off < used; {
			r := parseRecord(buf[off:])
			if int(r.id) < len(t.slots) && t.slots[r.id].chunk == ci && t.slots[r.id].off == uint32(off) {
				s := t.slots[r.id]
				nci, noff, b, err := a.alloc(r.size)
				if err != nil {
					return
				}
				copy(b, buf[off:off+r.size])
				s.chunk, s.off = nci, noff
				t.slots[r.id] = s
				t.tree.ReplaceOrInsert(s)
				a.chunks[ci].live -= r.size
				a.live -= int64(r.size)
			}
			off += r.size
		}
		a.freeChunk(ci)
		a.relocations++
	}
}

// Get returns key's value and rv. value aliases the table's memory: valid
// only until the next mutation.
func (t *Table) Get(key string) (value []byte, rv uint64, ok bool) {
	s, ok := t.find(t.tree, key)
	if !ok {
		return nil, 0, false
	}
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

// Scan is a table's entries under a prefix as they were when it was
// taken: all of them, or the candidates of an indexed value. It is read
// without the table's caller holding any lock, by one goroutine, and must
// be released; the keys and values it hands out alias the arena and are
// valid until Release.
type Scan struct {
	t      *Table
	epoch  uint64
	open   bool
	prefix string
	// tree is the entries in key order, or nil when entries are the
	// candidates.
	tree *btree.BTreeG[slot]
	// keep, when tree is set and keep is not nil, is the bitmap of the
	// ids to visit.
	keep []uint64
	// entries are the candidates of a sparse posting, sorted by key once
	// they are first read.
	entries []slot
	sorted  bool
}

// snapshotTree is a copy of the tree no mutation changes: the shared
// clone, made when a mutation outdated the last one.
func (t *Table) snapshotTree() *btree.BTreeG[slot] {
	t.cloneMu.Lock()
	defer t.cloneMu.Unlock()
	if t.clone == nil {
		t.clone = t.tree.Clone()
	}
	return t.clone
}

// Scan returns the entries whose key has prefix.
func (t *Table) Scan(prefix string) *Scan {
	scansGauge.Inc()
	return &Scan{t: t, epoch: t.arena.pins.pin(), open: true, prefix: prefix, tree: t.snapshotTree()}
}

// ScanIndex returns the entries with prefix whose index `index` holds
// value; it may also return entries whose value only collides with it by
// hash (callers filter what they decode). ok is false when index is not
// one of the table's indexes.
func (t *Table) ScanIndex(index, value, prefix string) (scan *Scan, ok bool) {
	i := slices.Index(t.indexNames, index)
	if i < 0 {
		return nil, false
	}
	h := t.hash(i, value)
	scansGauge.Inc()
	s := &Scan{t: t, epoch: t.arena.pins.pin(), open: true, prefix: prefix}
	if l := t.postings.list(h); l != nil && l.bits != nil {
		// The value is common: walk the prefix in key order, keeping the
		// posting's ids, rather than sort them.
		s.tree, s.keep = t.snapshotTree(), slices.Clone(l.bits)
		return s, true
	}
	var one [1]uint32
	for _, id := range t.postings.appendIDs(one[:0], h) {
		s.entries = append(s.entries, t.slots[id])
	}
	return s, true
}

// Release ends the scan: the memory it read may be freed. Releasing again
// does nothing.
func (s *Scan) Release() {
	if s.open {
		s.open = false
		s.t.arena.pins.unpin(s.epoch)
		scansGauge.Dec()
	}
}

// Each calls fn for the scan's entries after `after` (strictly greater;
// "" = from the first), in key order, until fn returns false or ctx ends
// (checked every scanCheckEvery entries: the error is ctx's).
func (s *Scan) Each(ctx context.Context, after string, fn func(key string, rv uint64, value []byte) bool) error {
	if !s.open {
		return fmt.Errorf("livestore: read of a released scan")
	}
	n := 0
	var err error
	visit := func(e slot) bool {
		if n++; n%scanCheckEvery == 0 {
			if err = ctx.Err(); err != nil {
				return false
			}
		}
		r := s.t.recordAt(e)
		return fn(r.key, e.rv, r.value)
	}
	if s.tree == nil {
		s.sortEntries()
		i, _ := slices.BinarySearchFunc(s.entries, start(s.prefix, after), func(e slot, k string) int { return strings.Compare(s.t.keyOf(e), k) })
		for _, e := range s.entries[i:] {
			k := s.t.keyOf(e)
			if k == after {
				continue
			}
			if !strings.HasPrefix(k, s.prefix) || !visit(e) {
				break
			}
		}
		return err
	}
	s.ascend(after, func(e slot, _ string) bool {
		if s.keep != nil && !bitSet(s.keep, s.t.recordAt(e).id) {
			return true
		}
		return visit(e)
	})
	return err
}

// Count is how many of the scan's entries have keys after `after`. It
// walks them.
func (s *Scan) Count(after string) int {
	n := 0
	if s.tree == nil {
		_ = s.Each(context.Background(), after, func(string, uint64, []byte) bool { n++; return true })
		return n
	}
	s.ascend(after, func(e slot, _ string) bool {
		if s.keep == nil || bitSet(s.keep, s.t.recordAt(e).id) {
			n++
		}
		return true
	})
	return n
}

// ascend walks the scan's tree from the first key with the prefix after
// `after`, in key order, until fn returns false or the prefix ends. The
// probe of the first key is held only to find it: the walk compares with
// that entry.
func (s *Scan) ascend(after string, fn func(e slot, key string) bool) {
	var first slot
	found := false
	probe := s.t.probes.acquire(start(s.prefix, after))
	s.tree.AscendGreaterOrEqual(probe, func(e slot) bool {
		first, found = e, true
		return false
	})
	s.t.probes.release(probe)
	if !found {
		return
	}
	s.tree.AscendGreaterOrEqual(first, func(e slot) bool {
		k := s.t.keyOf(e)
		if !strings.HasPrefix(k, s.prefix) {
			return false
		}
		if after != "" && k == after {
			return true
		}
		return fn(e, k)
	})
}

// sortEntries keeps the candidates under the prefix, in key order.
func (s *Scan) sortEntries() {
	if s.sorted {
		return
	}
	s.sorted = true
	s.entries = slices.DeleteFunc(s.entries, func(e slot) bool { return !strings.HasPrefix(s.t.keyOf(e), s.prefix) })
	slices.SortFunc(s.entries, func(a, b slot) int { return cmp.Compare(s.t.keyOf(a), s.t.keyOf(b)) })
}

func bitSet(bits []uint64, id uint32) bool {
	w := int(id / 64)
	return w < len(bits) && bits[w]&(1<<(id%64)) != 0
}

// Ascend calls fn for each entry whose key has prefix, in key order,
// starting after `after` (strictly greater; "" = from the first), until fn
// returns false. Keys and values passed to fn are valid during the call.
func (t *Table) Ascend(prefix, after string, fn func(key string, rv uint64, value []byte) bool) {
	s := t.Scan(prefix)
	defer s.Release()
	_ = s.Each(context.Background(), after, fn)
}

// Lookup calls fn, in key order, for the entries with prefix whose index
// `index` holds value, or collides with it by hash, as ScanIndex. Keys and
// values passed to fn are valid during the call.
func (t *Table) Lookup(index, value, prefix string, fn func(key string, rv uint64, value []byte) bool) (ok bool) {
	s, ok := t.ScanIndex(index, value, prefix)
	if !ok {
		return false
	}
	defer s.Release()
	_ = s.Each(context.Background(), "", fn)
	return true
}

// Count is how many entries with prefix have keys after `after`. It walks
// them.
func (t *Table) Count(prefix, after string) int {
	s := t.Scan(prefix)
	defer s.Release()
	return s.Count(after)
}

// Len is how many entries the table holds.
func (t *Table) Len() int { return t.entries }

// Reset empties the table (a relist replaces everything).
func (t *Table) Reset() {
	t.mutated()
	t.arena.freeAll()
	t.slots, t.freeIDs = nil, nil
	t.tree = btree.NewG(btreeDegree, t.less)
	t.postings.reset()
	t.entries = 0
}

// Stats returns the table's entries, the bytes of its live records in the
// arenas and the bytes of arena memory mapped.
func (t *Table) Stats() TableStats {
	return TableStats{Entries: t.entries, LiveBytes: t.arena.live, ArenaBytes: t.arena.mapped.Load()}
}

// Close returns the arenas' memory, once the scans taken before are
// released; the table is unusable after. Closing again does nothing.
func (t *Table) Close() {
	if t.closed {
		return
	}
	t.Reset()
	t.closed = true
}
