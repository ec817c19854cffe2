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
	"math/bits"
	"slices"
)

// listBit marks a postings value that numbers a list rather than holding
// the one entry id of its hash.
const listBit = 1 << 31

// postings maps the hash of an (index, value) pair to the ids of the
// entries holding it: an open-addressing hash table (linear probing,
// deletion by backward shift) of hashes and 32-bit values, each value
// either the one id of its hash or, with listBit, the number of a list in
// lists. A hash held by one entry costs 12 bytes of the table and nothing
// else. Hash 0 marks an empty slot: hashes are never 0.
type postings struct {
	keys []uint64
	vals []uint32
	n    int
	// lists are the ids of hashes more than one entry holds.
	lists     []posting
	freeLists []uint32
}

// posting is the ids of the entries that hold one hash: a sorted slice, or
// a bitmap indexed by id when the ids are many among the table's.
type posting struct {
	ids  []uint32
	bits []uint64
	n    int
}

// find returns the slot of h, or the empty slot where it would go.
func (p *postings) find(h uint64) (int, bool) {
	if len(p.keys) == 0 {
		return -1, false
	}
	mask := len(p.keys) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		switch p.keys[i] {
		case h:
			return i, true
		case 0:
			return i, false
		}
	}
}

// grow doubles the table (at least 16 slots) and rehashes.
func (p *postings) grow() {
	oldKeys, oldVals := p.keys, p.vals
	size := max(16, 2*len(oldKeys))
	p.keys, p.vals = make([]uint64, size), make([]uint32, size)
	mask := size - 1
	for j, k := range oldKeys {
		if k == 0 {
			continue
		}
		i := int(k) & mask
		for p.keys[i] != 0 {
			i = (i + 1) & mask
		}
		p.keys[i], p.vals[i] = k, oldVals[j]
	}
}

// removeSlot empties slot i, shifting back the slots after it that probed
// past it.
func (p *postings) removeSlot(i int) {
	mask := len(p.keys) - 1
	p.n--
	for {
		p.keys[i] = 0
		j := i
		for {
			j = (j + 1) & mask
			k := p.keys[j]
			if k == 0 {
				return
			}
			home := int(k) & mask
			// The slot at j stays when its home lies cyclically in (i, j].
			if (i <= j && i < home && home <= j) || (i > j && (i < home || home <= j)) {
				continue
			}
			p.keys[i], p.vals[i] = k, p.vals[j]
			i = j
			break
		}
	}
}

// add records that entry id holds h; nIDs bounds the ids.
func (p *postings) add(h uint64, id uint32, nIDs int) {
	i, ok := p.find(h)
	if !ok {
		if (p.n+1)*5 > len(p.keys)*4 {
			p.grow()
			i, _ = p.find(h)
		}
		p.keys[i], p.vals[i] = h, id
		p.n++
		return
	}
	v := p.vals[i]
	if v&listBit != 0 {
		p.lists[v&^listBit].add(id, nIDs)
		return
	}
	if v == id {
		return
	}
	var li uint32
	if n := len(p.freeLists); n > 0 {
		li = p.freeLists[n-1]
		p.freeLists = p.freeLists[:n-1]
	} else {
		p.lists = append(p.lists, posting{})
		li = uint32(len(p.lists) - 1)
	}
	p.lists[li] = posting{ids: []uint32{min(v, id), max(v, id)}, n: 2}
	p.vals[i] = li | listBit
}

// remove records that entry id no longer holds h.
func (p *postings) remove(h uint64, id uint32, nIDs int) {
	i, ok := p.find(h)
	if !ok {
		return
	}
	v := p.vals[i]
	if v&listBit == 0 {
		if v == id {
			p.removeSlot(i)
		}
		return
	}
	li := v &^ listBit
	l := &p.lists[li]
	l.remove(id, nIDs)
	if l.n > 1 {
		return
	}
	// One entry left: it goes back into the table.
	var last []uint32
	last = l.appendIDs(last)
	p.vals[i] = last[0]
	p.lists[li] = posting{}
	p.freeLists = append(p.freeLists, li)
}

// appendIDs appends the ids holding h, in no order, to dst.
func (p *postings) appendIDs(dst []uint32, h uint64) []uint32 {
	i, ok := p.find(h)
	if !ok {
		return dst
	}
	v := p.vals[i]
	if v&listBit == 0 {
		return append(dst, v)
	}
	return p.lists[v&^listBit].appendIDs(dst)
}

// list returns the list of h, nil when h has none or a single id.
func (p *postings) list(h uint64) *posting {
	i, ok := p.find(h)
	if !ok || p.vals[i]&listBit == 0 {
		return nil
	}
	return &p.lists[p.vals[i]&^listBit]
}

// reset empties the postings.
func (p *postings) reset() { *p = postings{} }

// dense is whether n ids among nIDs are better held as a bitmap (of nIDs/8
// bytes) than as a slice (4n); sparse the reverse, with room between the
// two so that a posting does not switch back and forth.
func dense(n, nIDs int) bool  { return n >= 64 && 16*n > nIDs }
func sparse(n, nIDs int) bool { return 64*n < nIDs }

func (l *posting) add(id uint32, nIDs int) {
	if l.bits != nil {
		w := int(id / 64)
		if w >= len(l.bits) {
			l.bits = append(l.bits, make([]uint64, w+1-len(l.bits))...)
		}
		if l.bits[w]&(1<<(id%64)) == 0 {
			l.bits[w] |= 1 << (id % 64)
			l.n++
		}
		return
	}
	i, found := slices.BinarySearch(l.ids, id)
	if found {
		return
	}
	l.ids = slices.Insert(l.ids, i, id)
	l.n++
	if dense(l.n, nIDs) {
		b := make([]uint64, (nIDs+63)/64)
		for _, id := range l.ids {
			b[id/64] |= 1 << (id % 64)
		}
		l.ids, l.bits = nil, b
	}
}

func (l *posting) remove(id uint32, nIDs int) {
	if l.bits != nil {
		w := int(id / 64)
		if w < len(l.bits) && l.bits[w]&(1<<(id%64)) != 0 {
			l.bits[w] &^= 1 << (id % 64)
			l.n--
		}
		if sparse(l.n, nIDs) {
			ids := l.appendIDs(make([]uint32, 0, l.n))
			l.ids, l.bits = ids, nil
		}
		return
	}
	i, found := slices.BinarySearch(l.ids, id)
	if !found {
		return
	}
	l.ids = slices.Delete(l.ids, i, i+1)
	l.n--
	if cap(l.ids) > 64 && 4*len(l.ids) < cap(l.ids) {
		l.ids = slices.Clip(slices.Clone(l.ids))
	}
}

// appendIDs appends the posting's ids, ascending, to dst.
func (l *posting) appendIDs(dst []uint32) []uint32 {
	if l.bits == nil {
		return append(dst, l.ids...)
	}
	for w, word := range l.bits {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			dst = append(dst, uint32(w*64+b))
			word &= word - 1
		}
	}
	return dst
}
