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
	"sync"
)

// pins keeps the chunks that open scans may still read mapped. A scan
// pins the table when it is taken; a chunk the table frees while scans
// taken before are open is retired instead of unmapped, and unmapped when
// the last of them is released. Its number is then free for the table to
// reuse (reusable). So the bytes a scan reads stay the bytes it was taken
// over, whatever the table does meanwhile, and nothing is unmapped under a
// reader.
type pins struct {
	mu sync.Mutex
	// epoch numbers the scans: each takes the current one, then it moves on.
	epoch uint64
	// open counts the open scans by epoch.
	open map[uint64]int
	// retired are the chunks freed while scans were open.
	retired []retiredChunk
	// reusable are the numbers of retired chunks since unmapped.
	reusable []uint32
	// unmapped is called with the bytes of each chunk unmapped.
	unmapped func(n int)
}

// retiredChunk is a chunk freed at epoch: the scans of earlier epochs may
// read it.
type retiredChunk struct {
	epoch uint64
	ci    uint32
	buf   []byte
}

func newPins(unmapped func(n int)) *pins {
	return &pins{open: map[uint64]int{}, unmapped: unmapped}
}

// pin opens a scan and returns its epoch.
func (p *pins) pin() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.epoch
	p.epoch++
	p.open[e]++
	return e
}

// advance moves to the next epoch and returns the one it leaves: a pin at
// it keeps what is freed from now on.
func (p *pins) advance() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.epoch
	p.epoch++
	return e
}

// pinAt pins epoch e, which the caller already keeps pinned by an older
// pin (or which it has just advanced from): nothing freed after e has been
// unmapped.
func (p *pins) pinAt(e uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open[e]++
}

// unpin closes a scan of epoch e, and unmaps the chunks no open scan may
// read any more.
func (p *pins) unpin(e uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open[e]--; p.open[e] <= 0 {
		delete(p.open, e)
	}
	oldest, any := p.oldestLocked()
	kept := p.retired[:0]
	for _, r := range p.retired {
		if any && oldest < r.epoch {
			kept = append(kept, r)
			continue
		}
		p.unmapLocked(r.ci, r.buf)
	}
	clear(p.retired[len(kept):])
	p.retired = kept
}

// oldestLocked is the epoch of the oldest open scan, if any is open.
func (p *pins) oldestLocked() (uint64, bool) {
	var oldest uint64
	found := false
	for e := range p.open {
		if !found || e < oldest {
			oldest, found = e, true
		}
	}
	return oldest, found
}

// free unmaps chunk ci now when no scan is open, and retires it until the
// open ones are released otherwise. It reports whether ci may be reused
// at once.
func (p *pins) free(ci uint32, buf []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.open) > 0 {
		p.retired = append(p.retired, retiredChunk{epoch: p.epoch, ci: ci, buf: buf})
		return false
	}
	freeChunk(buf)
	p.unmapped(len(buf))
	return true
}

func (p *pins) unmapLocked(ci uint32, buf []byte) {
	freeChunk(buf)
	p.unmapped(len(buf))
	if ci != noChunk {
		p.reusable = append(p.reusable, ci)
	}
}

// takeReusable moves the numbers of the chunks unmapped since the last
// call to dst.
func (p *pins) takeReusable(dst []uint32) []uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	dst = append(dst, p.reusable...)
	p.reusable = p.reusable[:0]
	return dst
}

// pinned is whether a scan is open.
func (p *pins) pinned() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.open) > 0
}
