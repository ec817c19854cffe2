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
	"sync/atomic"
)

// defaultChunkSize is the size of the arena chunks records are appended to.
const defaultChunkSize = 1 << 20

// noChunk marks a free entry slot and the absence of a tail chunk.
const noChunk = ^uint32(0)

// mappedBytes is the memory every table's arenas hold, outside the Go
// heap, the chunks that scans and watch histories still read included.
var mappedBytes atomic.Int64

// MappedBytes is how many bytes the arenas of all open tables hold, the
// chunks that scans and watch histories still read included: on Linux,
// memory mapped outside the Go heap, which the runtime does not see, to count against a memory limit
// (cmd/events-apiserver follows it with the Go runtime's soft limit).
func MappedBytes() int64 { return mappedBytes.Load() }

// addMapped counts n more bytes mapped (fewer when negative).
func addMapped(n int64) {
	mappedBytesGauge.Set(float64(mappedBytes.Add(n)))
}

// chunk is a block of arena memory that records are appended to, as the
// table's writer sees it.
type chunk struct {
	// buf is the chunk's memory; nil when the chunk's number is free.
	buf []byte
	// used is how many bytes of buf records were appended to.
	used int
	// live is how many of those bytes belong to live records.
	live int
	// queued is true while the chunk waits in arena.queue for relocation.
	queued bool
}

// arena is the memory of a table's records: chunks of chunkSize bytes that
// records are appended to, the last one (the tail) taking new records, and
// chunks of their own for records larger than chunkSize. Freeing a record
// only marks its bytes dead; a chunk other than the tail whose live bytes
// fall below half its size is queued for relocation, which the table runs
// by moving the chunk's live records to the tail and freeing the chunk. So
// every chunk but the tail is at least half live, and the arena holds at
// most twice the live bytes plus one chunk, and the chunks open scans still
// read (pins).
//
// Records are never written in place: the bytes of a record stay as they
// were written until its chunk is freed, so scans read them without the
// writer's lock.
type arena struct {
	chunkSize int
	// chunks is the writer's view of the chunks, by number.
	chunks []chunk
	// dir is the readers' view: each chunk's memory by number, replaced
	// (never written in place below its length) as chunks are added, so
	// that scans read it while the writer maps new chunks.
	dir atomic.Pointer[[][]byte]
	// freeChunks are numbers of chunks unmapped, for reuse.
	freeChunks []uint32
	// tail is the chunk new records are appended to, or noChunk.
	tail uint32
	// queue holds the chunks to relocate.
	queue []uint32
	// live is the bytes of live records.
	live int64
	// mapped is the bytes of all chunks still mapped, retired ones included.
	mapped atomic.Int64
	// relocations counts the chunks relocated.
	relocations int
	// pins keeps the chunks open scans read mapped.
	pins *pins
}

func newArena(chunkSize int) *arena {
	a := &arena{chunkSize: roundChunk(chunkSize), tail: noChunk}
	a.dir.Store(&[][]byte{})
	a.pins = newPins(func(n int) {
		a.mapped.Add(-int64(n))
		addMapped(-int64(n))
	})
	return a
}

// roundChunk rounds n up to a multiple of the allocation granule.
func roundChunk(n int) int {
	return (n + chunkGranule - 1) / chunkGranule * chunkGranule
}

// bytesOf is the memory of chunk ci, for readers.
func (a *arena) bytesOf(ci uint32) []byte { return (*a.dir.Load())[ci] }

// newChunk maps a chunk of size bytes, a multiple of the granule.
func (a *arena) newChunk(size int) (uint32, error) {
	buf, err := allocChunk(size)
	if err != nil {
		return 0, err
	}
	a.mapped.Add(int64(len(buf)))
	addMapped(int64(len(buf)))
	c := chunk{buf: buf}
	a.freeChunks = a.pins.takeReusable(a.freeChunks)
	dir := *a.dir.Load()
	if n := len(a.freeChunks); n > 0 {
		ci := a.freeChunks[n-1]
		a.freeChunks = a.freeChunks[:n-1]
		a.chunks[ci] = c
		// No scan reads number ci: its chunk was unmapped once the
		// scans that could were released.
		dir[ci] = buf
		return ci, nil
	}
	a.chunks = append(a.chunks, c)
	var grown [][]byte
	if cap(dir) > len(dir) {
		// Appending in place writes past every reader's length.
		grown = append(dir, buf)
	} else {
		grown = make([][]byte, len(dir)+1, max(2*len(dir), 16))
		copy(grown, dir)
		grown[len(dir)] = buf
	}
	a.dir.Store(&grown)
	return uint32(len(a.chunks) - 1), nil
}

// freeChunk frees chunk ci: unmapped at once, or once the scans that may
// read it are released.
func (a *arena) freeChunk(ci uint32) {
	c := &a.chunks[ci]
	a.live -= int64(c.live)
	buf := c.buf
	*c = chunk{}
	if a.pins.free(ci, buf) {
		a.freeChunks = append(a.freeChunks, ci)
	}
}

// alloc reserves n bytes for a record: at the end of the tail, in a new
// tail when the tail is full, or in a chunk of its own when n exceeds the
// chunk size. It returns the chunk, the offset in it and the bytes.
func (a *arena) alloc(n int) (ci, off uint32, b []byte, err error) {
	if n > a.chunkSize {
		if ci, err = a.newChunk(roundChunk(n)); err != nil {
			return 0, 0, nil, err
		}
		c := &a.chunks[ci]
		c.used, c.live = n, n
		a.live += int64(n)
		return ci, 0, c.buf[:n:n], nil
	}
	if a.tail == noChunk || len(a.chunks[a.tail].buf)-a.chunks[a.tail].used < n {
		tail, err := a.newChunk(a.chunkSize)
		if err != nil {
			return 0, 0, nil, err
		}
		a.retireTail()
		a.tail = tail
	}
	ci = a.tail
	c := &a.chunks[ci]
	off = uint32(c.used)
	c.used += n
	c.live += n
	a.live += int64(n)
	return ci, off, c.buf[off : int(off)+n : int(off)+n], nil
}

// retireTail ends appending to the tail, freeing it when nothing in it
// lives and queuing it for relocation when less than half of it does.
func (a *arena) retireTail() {
	ci := a.tail
	if ci == noChunk {
		return
	}
	a.tail = noChunk
	a.settle(ci)
}

// settle frees chunk ci, not the tail, when nothing in it lives, and
// queues it for relocation when less than half of it does.
func (a *arena) settle(ci uint32) {
	c := &a.chunks[ci]
	switch {
	case c.live == 0:
		a.freeChunk(ci)
	case a.relocatable(ci) && !c.queued:
		c.queued = true
		a.queue = append(a.queue, ci)
	}
}

// release marks the n bytes of a record in chunk ci dead.
func (a *arena) release(ci uint32, n int) {
	c := &a.chunks[ci]
	c.live -= n
	a.live -= int64(n)
	if ci == a.tail {
		if c.live == 0 && !a.pins.pinned() {
			// Nothing in the tail lives, and no scan may read its dead
			// records: append from its start again.
			c.used = 0
		}
		return
	}
	a.settle(ci)
}

// relocatable is whether chunk ci is a chunk of the chunk size, not the
// tail, and less than half live.
func (a *arena) relocatable(ci uint32) bool {
	if int(ci) >= len(a.chunks) || ci == a.tail {
		return false
	}
	c := &a.chunks[ci]
	return len(c.buf) == a.chunkSize && c.live*2 < len(c.buf)
}

// popQueue returns the next chunk to relocate, if any still is.
func (a *arena) popQueue() (uint32, bool) {
	for len(a.queue) > 0 {
		ci := a.queue[len(a.queue)-1]
		a.queue = a.queue[:len(a.queue)-1]
		if int(ci) < len(a.chunks) {
			a.chunks[ci].queued = false
		}
		if a.relocatable(ci) {
			return ci, true
		}
	}
	return 0, false
}

// freeAll frees every chunk and empties the arena. Chunk numbers are kept:
// a scan taken before reads its chunks by their numbers until released.
func (a *arena) freeAll() {
	for ci := range a.chunks {
		if a.chunks[ci].buf != nil {
			a.freeChunk(uint32(ci))
		}
	}
	a.tail, a.queue, a.live = noChunk, nil, 0
}
