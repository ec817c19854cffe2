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
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/component-base/metrics/testutil"
)

// kv is an entry as a test sees it.
type kv struct {
	Key   string
	RV    uint64
	Value string
}

// collect returns the entries an iteration calls back with, at most limit
// of them (0: all), copied out of the table.
func collect(limit int, iterate func(fn func(key string, rv uint64, value []byte) bool)) []kv {
	var got []kv
	iterate(func(key string, rv uint64, value []byte) bool {
		got = append(got, kv{Key: strings.Clone(key), RV: rv, Value: string(value)})
		return limit == 0 || len(got) < limit
	})
	return got
}

func ascend(tab *Table, prefix, after string, limit int) []kv {
	return collect(limit, func(fn func(string, uint64, []byte) bool) { tab.Ascend(prefix, after, fn) })
}

func lookup(tab *Table, index, value, prefix string, limit int) ([]kv, bool) {
	var ok bool
	got := collect(limit, func(fn func(string, uint64, []byte) bool) { ok = tab.Lookup(index, value, prefix, fn) })
	return got, ok
}

var testIndexes = []string{"ns", "reason", "uid"}

// fill returns a table holding entries for keys, each key's value
// "v"+key, rv its position from 1 and index values idx(key).
func fill(t testing.TB, keys []string, idx func(key string) [][]string) *Table {
	t.Helper()
	tab := newTableSize(testIndexes, 4096)
	t.Cleanup(tab.Close)
	for i, k := range keys {
		mustPut(t, tab, k, uint64(i+1), []byte("v"+k), idx(k))
	}
	return tab
}

func noIndex(string) [][]string { return nil }

func TestTablePutGet(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 3*4096)
	for _, tc := range []struct {
		name string
		puts []kv
		key  string
		want *kv
	}{
		{name: "empty table", key: "/a"},
		{name: "one", puts: []kv{{"/a", 1, "A"}}, key: "/a", want: &kv{"/a", 1, "A"}},
		{name: "absent", puts: []kv{{"/a", 1, "A"}}, key: "/b"},
		{name: "prefix of a key is not the key", puts: []kv{{"/ab", 1, "A"}}, key: "/a"},
		{name: "replaced", puts: []kv{{"/a", 1, "A"}, {"/a", 2, "AA"}}, key: "/a", want: &kv{"/a", 2, "AA"}},
		{name: "empty value", puts: []kv{{"/a", 1, ""}}, key: "/a", want: &kv{"/a", 1, ""}},
		{name: "larger than a chunk", puts: []kv{{"/a", 1, "A"}, {"/b", 7, string(big)}, {"/c", 3, "C"}}, key: "/b", want: &kv{"/b", 7, string(big)}},
		{name: "replaced by larger than a chunk", puts: []kv{{"/b", 1, "B"}, {"/b", 7, string(big)}}, key: "/b", want: &kv{"/b", 7, string(big)}},
		{name: "larger than a chunk replaced", puts: []kv{{"/b", 7, string(big)}, {"/b", 8, "B"}}, key: "/b", want: &kv{"/b", 8, "B"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := newTableSize(testIndexes, 4096)
			defer tab.Close()
			for _, p := range tc.puts {
				mustPut(t, tab, p.Key, p.RV, []byte(p.Value), nil)
			}
			value, rv, ok := tab.Get(tc.key)
			var got *kv
			if ok {
				got = &kv{tc.key, rv, string(value)}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Get(%q) (-want +got):\n%s", tc.key, diff)
			}
			checkInvariants(t, tab)
		})
	}
}

func TestTableAscend(t *testing.T) {
	keys := []string{"/a", "/a/1", "/a/2", "/a/3", "/ab", "/b/1", "/b/2"}
	tab := fill(t, keys, noIndex)
	want := func(ks ...string) []kv {
		var out []kv
		for _, k := range ks {
			out = append(out, kv{k, uint64(slices.Index(keys, k) + 1), "v" + k})
		}
		return out
	}
	for _, tc := range []struct {
		name, prefix, after string
		limit               int
		want                []kv
	}{
		{name: "all", want: want(keys...)},
		{name: "prefix", prefix: "/a/", want: want("/a/1", "/a/2", "/a/3")},
		{name: "prefix that is a key", prefix: "/a", want: want("/a", "/a/1", "/a/2", "/a/3", "/ab")},
		{name: "after a key", prefix: "/a/", after: "/a/1", want: want("/a/2", "/a/3")},
		{name: "after no key", prefix: "/a/", after: "/a/15", want: want("/a/2", "/a/3")},
		{name: "after the last", prefix: "/a/", after: "/a/3", want: nil},
		{name: "after past the prefix", prefix: "/a/", after: "/b", want: nil},
		{name: "after before the prefix", prefix: "/a/", after: "/", want: want("/a/1", "/a/2", "/a/3")},
		{name: "after equal to the prefix key", prefix: "/a", after: "/a", want: want("/a/1", "/a/2", "/a/3", "/ab")},
		{name: "no prefix, after", after: "/ab", want: want("/b/1", "/b/2")},
		{name: "limit", limit: 2, want: want("/a", "/a/1")},
		{name: "limit with after", prefix: "/a/", after: "/a/1", limit: 1, want: want("/a/2")},
		{name: "prefix of nothing", prefix: "/c", want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ascend(tab, tc.prefix, tc.after, tc.limit)); diff != "" {
				t.Errorf("Ascend(%q, %q) (-want +got):\n%s", tc.prefix, tc.after, diff)
			}
		})
	}
}

func TestTableAscendMany(t *testing.T) {
	// More entries than a node of the tree holds, so that Ascend walks
	// several levels.
	const many = 4 * 2 * btreeDegree
	var keys []string
	for i := range 3*many + 5 {
		keys = append(keys, fmt.Sprintf("/k/%04d", i))
	}
	tab := fill(t, keys, noIndex)
	for _, tc := range []struct {
		name, after string
		limit       int
		want        []string
	}{
		{name: "all", want: keys},
		{name: "after", after: keys[many-1], want: keys[many:]},
		{name: "limit across nodes", limit: many + 2, want: keys[:many+2]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range ascend(tab, "/k/", tc.after, tc.limit) {
				got = append(got, e.Key)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTableCount(t *testing.T) {
	tab := fill(t, []string{"/a", "/a/1", "/a/2", "/a/3", "/ab", "/b/1"}, noIndex)
	for _, tc := range []struct {
		prefix, after string
		want          int
	}{
		{"", "", 6},
		{"/a/", "", 3},
		{"/a", "", 5},
		{"/a/", "/a/1", 2},
		{"/a/", "/a/10", 2},
		{"/a/", "/a/3", 0},
		{"/a", "/a", 4},
		{"/a/", "/", 3},
		{"/a/", "/b", 0},
		{"/c", "", 0},
	} {
		t.Run(tc.prefix+"|"+tc.after, func(t *testing.T) {
			if got := tab.Count(tc.prefix, tc.after); got != tc.want {
				t.Errorf("Count(%q, %q) = %d, want %d", tc.prefix, tc.after, got, tc.want)
			}
		})
	}
}

func TestTableDelete(t *testing.T) {
	for _, tc := range []struct {
		name    string
		deletes []string
		wantRV  []uint64
		wantOK  []bool
		want    []string
	}{
		{name: "absent", deletes: []string{"/x"}, wantRV: []uint64{0}, wantOK: []bool{false}, want: []string{"/a", "/b", "/c"}},
		{name: "one", deletes: []string{"/b"}, wantRV: []uint64{2}, wantOK: []bool{true}, want: []string{"/a", "/c"}},
		{name: "twice", deletes: []string{"/b", "/b"}, wantRV: []uint64{2, 0}, wantOK: []bool{true, false}, want: []string{"/a", "/c"}},
		{name: "all", deletes: []string{"/c", "/a", "/b"}, wantRV: []uint64{3, 1, 2}, wantOK: []bool{true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := fill(t, []string{"/a", "/b", "/c"}, func(k string) [][]string { return [][]string{{"ns"}, {k}} })
			var rvs []uint64
			var oks []bool
			for _, k := range tc.deletes {
				rv, ok := tab.Delete(k)
				rvs, oks = append(rvs, rv), append(oks, ok)
			}
			if diff := cmp.Diff(tc.wantRV, rvs); diff != "" {
				t.Errorf("rvs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantOK, oks); diff != "" {
				t.Errorf("oks (-want +got):\n%s", diff)
			}
			var got, inIndex []string
			for _, e := range ascend(tab, "", "", 0) {
				got = append(got, e.Key)
			}
			for _, e := range must(lookup(tab, "ns", "ns", "", 0)) {
				inIndex = append(inIndex, e.Key)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, inIndex); diff != "" {
				t.Errorf("keys of the postings (-want +got):\n%s", diff)
			}
			for _, k := range tc.deletes {
				if got, _ := lookup(tab, "reason", k, "", 0); len(got) != 0 {
					t.Errorf("Lookup(reason, %q) = %v after Delete", k, got)
				}
			}
			if tab.Len() != len(tc.want) {
				t.Errorf("Len() = %d, want %d", tab.Len(), len(tc.want))
			}
			checkInvariants(t, tab)
		})
	}
}

func must[T any](v T, ok bool) T {
	if !ok {
		panic("not ok")
	}
	return v
}

func TestTableLookup(t *testing.T) {
	type put struct {
		key   string
		index [][]string
	}
	for _, tc := range []struct {
		name                 string
		puts                 []put
		deletes              []string
		index, value, prefix string
		limit                int
		want                 []string
		wantNotOK            bool
	}{
		{name: "unknown index", index: "nope", value: "x", wantNotOK: true},
		{name: "no entries", index: "ns", value: "x"},
		{name: "singleton", puts: []put{{"/a", [][]string{{"x"}}}, {"/b", [][]string{{"y"}}}}, index: "ns", value: "x", want: []string{"/a"}},
		{name: "key order", puts: []put{{"/c", [][]string{{"x"}}}, {"/a", [][]string{{"x"}}}, {"/b", [][]string{{"x"}}}}, index: "ns", value: "x", want: []string{"/a", "/b", "/c"}},
		{name: "prefix", puts: []put{{"/p/c", [][]string{{"x"}}}, {"/a", [][]string{{"x"}}}, {"/p/b", [][]string{{"x"}}}}, index: "ns", value: "x", prefix: "/p/", want: []string{"/p/b", "/p/c"}},
		{name: "limit", puts: []put{{"/c", [][]string{{"x"}}}, {"/a", [][]string{{"x"}}}, {"/b", [][]string{{"x"}}}}, index: "ns", value: "x", limit: 2, want: []string{"/a", "/b"}},
		{name: "same value in another index", puts: []put{{"/a", [][]string{{"x"}, {"y"}}}, {"/b", [][]string{{"y"}, {"x"}}}}, index: "reason", value: "x", want: []string{"/b"}},
		{name: "several values", puts: []put{{"/a", [][]string{nil, nil, {"u1", "u2"}}}, {"/b", [][]string{nil, nil, {"u2"}}}}, index: "uid", value: "u2", want: []string{"/a", "/b"}},
		{name: "repeated value", puts: []put{{"/a", [][]string{{"x", "x"}}}}, index: "ns", value: "x", want: []string{"/a"}},
		{name: "values past the indexes are ignored", puts: []put{{"/a", [][]string{nil, nil, nil, {"x"}}}}, index: "ns", value: "x"},
		{name: "replace changing the value", puts: []put{{"/a", [][]string{{"x"}}}, {"/b", [][]string{{"x"}}}, {"/a", [][]string{{"y"}}}}, index: "ns", value: "x", want: []string{"/b"}},
		{name: "replace to the new value", puts: []put{{"/a", [][]string{{"x"}}}, {"/b", [][]string{{"y"}}}, {"/a", [][]string{{"y"}}}}, index: "ns", value: "y", want: []string{"/a", "/b"}},
		{name: "replace dropping the index", puts: []put{{"/a", [][]string{{"x"}}}, {"/a", nil}}, index: "ns", value: "x"},
		{name: "replace keeping the value", puts: []put{{"/a", [][]string{{"x"}}}, {"/a", [][]string{{"x"}, {"r"}}}}, index: "ns", value: "x", want: []string{"/a"}},
		{name: "delete", puts: []put{{"/a", [][]string{{"x"}}}, {"/b", [][]string{{"x"}}}, {"/c", [][]string{{"x"}}}}, deletes: []string{"/b"}, index: "ns", value: "x", want: []string{"/a", "/c"}},
		{name: "delete down to one", puts: []put{{"/a", [][]string{{"x"}}}, {"/b", [][]string{{"x"}}}}, deletes: []string{"/a"}, index: "ns", value: "x", want: []string{"/b"}},
		{name: "delete all", puts: []put{{"/a", [][]string{{"x"}}}, {"/b", [][]string{{"x"}}}}, deletes: []string{"/a", "/b"}, index: "ns", value: "x"},
		{name: "delete then put again", puts: []put{{"/a", [][]string{{"x"}}}}, deletes: []string{"/a"}, index: "ns", value: "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := newTableSize(testIndexes, 4096)
			defer tab.Close()
			for i, p := range tc.puts {
				mustPut(t, tab, p.key, uint64(i+1), []byte("v"), p.index)
			}
			for _, k := range tc.deletes {
				tab.Delete(k)
			}
			entries, ok := lookup(tab, tc.index, tc.value, tc.prefix, tc.limit)
			if ok == tc.wantNotOK {
				t.Fatalf("Lookup ok = %v, want %v", ok, !tc.wantNotOK)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Key)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Lookup(%q, %q, %q) (-want +got):\n%s", tc.index, tc.value, tc.prefix, diff)
			}
			checkInvariants(t, tab)
		})
	}
}

func TestTableDensePostings(t *testing.T) {
	// A value most entries hold turns its posting into a bitmap, and back
	// into a slice when deletes make it sparse.
	tab := newTableSize(testIndexes, 1<<16)
	defer tab.Close()
	var want []string
	for i := range 2000 {
		k := fmt.Sprintf("/k/%05d", i)
		v := "rare"
		if i%3 != 0 {
			v, want = "common", append(want, k)
		}
		mustPut(t, tab, k, uint64(i), []byte(k), [][]string{{v}})
	}
	keysOf := func() []string {
		var got []string
		for _, e := range must(lookup(tab, "ns", "common", "", 0)) {
			got = append(got, e.Key)
		}
		return got
	}
	for _, tc := range []struct {
		name     string
		mutate   func()
		wantBits bool
	}{
		{name: "dense", mutate: func() {}, wantBits: true},
		{name: "some deleted", mutate: func() {
			for i := 1; i < 2000; i += 3 {
				k := fmt.Sprintf("/k/%05d", i)
				tab.Delete(k)
				want = slices.DeleteFunc(want, func(s string) bool { return s == k })
			}
		}, wantBits: true},
		{name: "sparse again", mutate: func() {
			for i := 2; i < 1950; i += 3 {
				k := fmt.Sprintf("/k/%05d", i)
				tab.Delete(k)
				want = slices.DeleteFunc(want, func(s string) bool { return s == k })
			}
		}, wantBits: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.mutate()
			if diff := cmp.Diff(want, keysOf()); diff != "" {
				t.Errorf("Lookup (-want +got):\n%s", diff)
			}
			var wantPrefix, gotPrefix []string
			for _, k := range want {
				if strings.HasPrefix(k, "/k/019") && len(wantPrefix) < 5 {
					wantPrefix = append(wantPrefix, k)
				}
			}
			for _, e := range must(lookup(tab, "ns", "common", "/k/019", 5)) {
				gotPrefix = append(gotPrefix, e.Key)
			}
			if diff := cmp.Diff(wantPrefix, gotPrefix); diff != "" {
				t.Errorf("Lookup with a prefix and a limit (-want +got):\n%s", diff)
			}
			i, _ := tab.postings.find(tab.hash(0, "common"))
			l := tab.postings.lists[tab.postings.vals[i]&^listBit]
			if got := l.bits != nil; got != tc.wantBits {
				t.Errorf("posting is a bitmap: %v, want %v (%d ids)", got, tc.wantBits, l.n)
			}
			checkInvariants(t, tab)
		})
	}
}

func TestTableReset(t *testing.T) {
	tab := fill(t, []string{"/a", "/b"}, func(k string) [][]string { return [][]string{{"x"}} })
	tab.Reset()
	if diff := cmp.Diff(TableStats{}, tab.Stats()); diff != "" {
		t.Errorf("Stats after Reset (-want +got):\n%s", diff)
	}
	if got := ascend(tab, "", "", 0); len(got) != 0 {
		t.Errorf("Ascend after Reset = %v", got)
	}
	if got := must(lookup(tab, "ns", "x", "", 0)); len(got) != 0 {
		t.Errorf("Lookup after Reset = %v", got)
	}
	mustPut(t, tab, "/c", 9, []byte("C"), [][]string{{"x"}})
	want := []kv{{"/c", 9, "C"}}
	if diff := cmp.Diff(want, ascend(tab, "", "", 0)); diff != "" {
		t.Errorf("Ascend after Reset and Put (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, must(lookup(tab, "ns", "x", "", 0))); diff != "" {
		t.Errorf("Lookup after Reset and Put (-want +got):\n%s", diff)
	}
	checkInvariants(t, tab)
}

func TestTableCloseReturnsMemory(t *testing.T) {
	before := MappedBytes()
	tab := newTableSize(testIndexes, 4096)
	for i := range 100 {
		mustPut(t, tab, fmt.Sprintf("/k/%d", i), 1, make([]byte, 300), nil)
	}
	st := tab.Stats()
	if st.ArenaBytes == 0 || MappedBytes()-before != st.ArenaBytes {
		t.Errorf("MappedBytes grew by %d, Stats().ArenaBytes = %d", MappedBytes()-before, st.ArenaBytes)
	}
	tab.Close()
	tab.Close()
	if got := MappedBytes() - before; got != 0 {
		t.Errorf("MappedBytes after Close grew by %d, want 0", got)
	}
}

// checkInvariants verifies the table's structures against each other:
// every entry's record, the arena's accounting and relocation bound, the
// postings.
func checkInvariants(t testing.TB, tab *Table) {
	t.Helper()
	a := tab.arena
	if len(a.queue) != 0 {
		t.Errorf("relocation queue holds %v after a mutation", a.queue)
	}
	liveOf := make(map[uint32]int)
	var mapped int64
	for ci, c := range a.chunks {
		mapped += int64(len(c.buf))
		if c.buf == nil {
			continue
		}
		if uint32(ci) != a.tail && len(c.buf) == a.chunkSize && c.live*2 < len(c.buf) {
			t.Errorf("chunk %d (not the tail) is %d/%d live", ci, c.live, len(c.buf))
		}
	}
	if mapped != a.mapped.Load() {
		t.Errorf("chunks map %d bytes, arena counts %d", mapped, a.mapped.Load())
	}
	hashCount := map[uint64]int{}
	n, prev := 0, ""
	tab.tree.Ascend(func(s slot) bool {
		r := tab.recordAt(s)
		id := r.id
		if tab.slots[id] != s {
			t.Errorf("slot of id %d is %+v, the tree's %+v", id, tab.slots[id], s)
		}
		if n > 0 && r.key <= prev {
			t.Errorf("key %q after %q", r.key, prev)
		}
		prev = r.key
		n++
		liveOf[s.chunk] += r.size
		for p := 0; p < len(r.hashes); p += 8 {
			h := binary.LittleEndian.Uint64(r.hashes[p:])
			hashCount[h]++
			if !slices.Contains(tab.postings.appendIDs(nil, h), id) {
				t.Errorf("postings of a hash of %q lack its id", r.key)
			}
		}
		return true
	})
	if n != tab.Len() || n != tab.tree.Len() {
		t.Errorf("tree holds %d ids, tree.Len() %d, Len() %d", n, tab.tree.Len(), tab.Len())
	}
	var live int64
	for ci, c := range a.chunks {
		if c.live != liveOf[uint32(ci)] {
			t.Errorf("chunk %d counts %d live bytes, its records %d", ci, c.live, liveOf[uint32(ci)])
		}
		live += int64(c.live)
	}
	if live != a.live {
		t.Errorf("chunks hold %d live bytes, arena counts %d", live, a.live)
	}
	if a.mapped.Load() > 2*a.live+int64(a.chunkSize) {
		t.Errorf("arena maps %d bytes for %d live (chunk %d)", a.mapped.Load(), a.live, a.chunkSize)
	}
	if tab.postings.n != len(hashCount) {
		t.Errorf("postings hold %d hashes, entries %d", tab.postings.n, len(hashCount))
	}
	for h, c := range hashCount {
		if got := len(tab.postings.appendIDs(nil, h)); got != c {
			t.Errorf("posting of %x holds %d ids, %d entries hold it", h, got, c)
		}
	}
	free := 0
	for _, s := range tab.slots {
		if s.chunk == noChunk {
			free++
		}
	}
	if free != len(tab.freeIDs) || len(tab.slots)-free != n {
		t.Errorf("%d of %d slots free, free list %d, entries %d", free, len(tab.slots), len(tab.freeIDs), n)
	}
}

// source draws the choices of a randomized run.
type source interface {
	// intn returns a choice in [0, n).
	intn(n int) int
	// done is whether the source has no more choices.
	done() bool
}

type randSource struct{ *rand.Rand }

func (r randSource) intn(n int) int { return r.Intn(n) }
func (randSource) done() bool       { return false }

// byteSource draws from fuzz bytes, zeros once they run out.
type byteSource struct{ b []byte }

func (s *byteSource) intn(n int) int {
	if len(s.b) == 0 {
		return 0
	}
	v := int(s.b[0])
	s.b = s.b[1:]
	if n > 256 && len(s.b) > 0 {
		v = v<<8 | int(s.b[0])
		s.b = s.b[1:]
	}
	return v % n
}

func (s *byteSource) done() bool { return len(s.b) == 0 }

type modelEntry struct {
	rv    uint64
	value string
	index [][]string
}

// model is the oracle of a table: a map, sorted when read.
type model map[string]modelEntry

func (m model) sorted(prefix, after string) []kv {
	var out []kv
	for k, e := range m {
		if strings.HasPrefix(k, prefix) && k > after {
			out = append(out, kv{k, e.rv, e.value})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func (m model) lookup(index int, value, prefix string) []kv {
	var out []kv
	for _, e := range m.sorted(prefix, "") {
		if idx := m[e.Key].index; index < len(idx) && slices.Contains(idx[index], value) {
			out = append(out, e)
		}
	}
	return out
}

func limited(s []kv, limit int) []kv {
	if limit > 0 && len(s) > limit {
		return s[:limit]
	}
	return s
}

var (
	modelPrefixes = []string{"/a/", "/a/b/", "/b/", "/a", ""}
	modelValues   = []string{"x", "y", "z", "w", ""}
)

// modelConfig is the shape of a randomized run.
type modelConfig struct {
	// ops is the most operations to run, checkEvery how often to check
	// the whole table (0: at the end only).
	ops, checkEvery int
	chunkSize       int
	// keysPerPrefix is how many keys each of 4 prefixes has, values how
	// many of modelValues the indexes draw from.
	keysPerPrefix, values int
}

// runModel drives a table and its model from src for at most ops
// operations, checking every answer, and the whole table every checkEvery
// operations and at the end.
// It returns how many chunks were compacted.
func runModel(t *testing.T, src source, cfg modelConfig) int {
	ops, chunkSize, checkEvery := cfg.ops, cfg.chunkSize, cfg.checkEvery
	keys, values := cfg.keysPerPrefix, modelValues[:cfg.values]
	tab := newTableSize(testIndexes, chunkSize)
	defer tab.Close()
	m := model{}
	key := func() string { return modelPrefixes[src.intn(4)] + fmt.Sprintf("k%02d", src.intn(keys)) }
	prefix := func() string { return modelPrefixes[src.intn(len(modelPrefixes))] }
	after := func() string {
		switch src.intn(3) {
		case 0:
			return ""
		case 1:
			return key()
		default:
			return key() + "~"
		}
	}
	valueOf := func(rv uint64) string {
		var n int
		switch src.intn(8) {
		case 0:
			n = 0
		case 1:
			n = chunkSize + src.intn(2*chunkSize)
		default:
			n = src.intn(chunkSize / 4)
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(int(rv) + i*7)
		}
		return string(b)
	}
	var rv uint64
	bitmaps := 0
	for op := 0; op < ops && !src.done(); op++ {
		switch c := src.intn(100); {
		case c < 40:
			rv++
			k, v := key(), valueOf(rv)
			var idx [][]string
			for range src.intn(len(testIndexes) + 2) {
				var vals []string
				for range src.intn(3) {
					vals = append(vals, values[src.intn(len(values))])
				}
				idx = append(idx, vals)
			}
			mustPut(t, tab, k, rv, []byte(v), idx)
			m[k] = modelEntry{rv, v, idx}
		case c < 60:
			k := key()
			gotRV, ok := tab.Delete(k)
			e, want := m[k]
			if ok != want || gotRV != e.rv {
				t.Fatalf("op %d: Delete(%q) = %d, %v; want %d, %v", op, k, gotRV, ok, e.rv, want)
			}
			delete(m, k)
		case c < 70:
			k := key()
			value, gotRV, ok := tab.Get(k)
			e, want := m[k]
			if ok != want || gotRV != e.rv || string(value) != e.value {
				t.Fatalf("op %d: Get(%q) = %d, %v (%d bytes); want %d, %v (%d bytes)", op, k, gotRV, ok, len(value), e.rv, want, len(e.value))
			}
		case c < 82:
			p, a, limit := prefix(), after(), src.intn(4)
			if diff := cmp.Diff(limited(m.sorted(p, a), limit), ascend(tab, p, a, limit)); diff != "" {
				t.Fatalf("op %d: Ascend(%q, %q) limit %d (-want +got):\n%s", op, p, a, limit, diff)
			}
		case c < 94:
			i, v, p, limit := src.intn(len(testIndexes)), values[src.intn(len(values))], prefix(), src.intn(3)
			got, ok := lookup(tab, testIndexes[i], v, p, limit)
			if !ok {
				t.Fatalf("op %d: Lookup(%q) not ok", op, testIndexes[i])
			}
			if diff := cmp.Diff(limited(m.lookup(i, v, p), limit), got); diff != "" {
				t.Fatalf("op %d: Lookup(%q, %q, %q) limit %d (-want +got):\n%s", op, testIndexes[i], v, p, limit, diff)
			}
		case c < 99:
			p, a := prefix(), after()
			if got, want := tab.Count(p, a), len(m.sorted(p, a)); got != want {
				t.Fatalf("op %d: Count(%q, %q) = %d, want %d", op, p, a, got, want)
			}
		default:
			if src.intn(10) == 0 {
				tab.Reset()
				m = model{}
			}
		}
		if cfg.values == 1 && op%97 == 0 {
			for _, l := range tab.postings.lists {
				if l.bits != nil {
					bitmaps++
				}
			}
		}
		if tab.Len() != len(m) {
			t.Fatalf("op %d: Len() = %d, want %d", op, tab.Len(), len(m))
		}
		if checkEvery > 0 && op%checkEvery == 0 {
			checkModel(t, tab, m)
		}
	}
	checkModel(t, tab, m)
	if cfg.values == 1 && bitmaps == 0 {
		t.Errorf("no posting was a bitmap")
	}
	t.Logf("%d entries, %d chunks relocated, %+v", len(m), tab.arena.relocations, tab.Stats())
	return tab.arena.relocations
}

// checkModel compares every entry of the table, byte for byte, and every
// posting with the model's.
func checkModel(t *testing.T, tab *Table, m model) {
	t.Helper()
	if diff := cmp.Diff(m.sorted("", ""), ascend(tab, "", "", 0)); diff != "" {
		t.Fatalf("entries (-want +got):\n%s", diff)
	}
	for i, name := range testIndexes {
		for _, v := range modelValues {
			for _, p := range modelPrefixes {
				if diff := cmp.Diff(m.lookup(i, v, p), must(lookup(tab, name, v, p, 0))); diff != "" {
					t.Fatalf("Lookup(%q, %q, %q) (-want +got):\n%s", name, v, p, diff)
				}
			}
		}
	}
	checkInvariants(t, tab)
}

func TestTableModel(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  modelConfig
	}{
		{name: "small chunks", cfg: modelConfig{ops: 20000, checkEvery: 97, chunkSize: 4096, keysPerPrefix: 40, values: len(modelValues)}},
		{name: "page-multiple chunks", cfg: modelConfig{ops: 20000, checkEvery: 97, chunkSize: 3 * 4096, keysPerPrefix: 40, values: len(modelValues)}},
		// One value most entries hold: postings turn into bitmaps.
		{name: "dense postings", cfg: modelConfig{ops: 20000, checkEvery: 97, chunkSize: 4096, keysPerPrefix: 150, values: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := time.Now().UnixNano()
			t.Logf("seed %d", seed)
			if n := runModel(t, randSource{rand.New(rand.NewSource(seed))}, tc.cfg); n == 0 {
				t.Errorf("no chunk was relocated")
			}
		})
	}
}

func FuzzTable(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	seed := make([]byte, 4096)
	r := rand.New(rand.NewSource(1))
	for i := range seed {
		seed[i] = byte(r.Intn(256))
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		runModel(t, &byteSource{b: data}, modelConfig{ops: 2000, chunkSize: 4096, keysPerPrefix: 40, values: len(modelValues)})
	})
}

func TestTableChurnMemory(t *testing.T) {
	// Puts and deletes over a bounded live set: the arena stays within
	// twice the live bytes and a couple of chunks.
	const chunkSize, liveKeys, ops = 64 << 10, 2000, 60000
	tab := newTableSize(testIndexes, chunkSize)
	defer tab.Close()
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	value := make([]byte, 2000)
	var maxRatio float64
	var peak int64
	for op := range ops {
		ev := r.Intn(liveKeys)
		k := fmt.Sprintf("/registry/events/ns-%d/ev-%d", ev%7, ev)
		if r.Intn(3) == 0 {
			tab.Delete(k)
		} else {
			mustPut(t, tab, k, uint64(op), value[:100+r.Intn(len(value)-100)], [][]string{{k}, {"ns"}, {fmt.Sprint(op)}})
		}
		st := tab.Stats()
		if st.ArenaBytes > 2*st.LiveBytes+2*chunkSize {
			t.Fatalf("op %d: %+v: arena above twice the live bytes and two chunks", op, st)
		}
		if op >= liveKeys {
			maxRatio = max(maxRatio, float64(st.ArenaBytes)/float64(st.LiveBytes))
		}
		peak = max(peak, st.ArenaBytes)
	}
	checkInvariants(t, tab)
	if tab.arena.relocations == 0 {
		t.Errorf("no chunk was relocated")
	}
	t.Logf("%d chunks relocated; %+v; peak arena %d bytes, arena/live at most %.2f after the first %d operations", tab.arena.relocations, tab.Stats(), peak, maxRatio, liveKeys)
}

// benchEntry is a realistic event: key, encoded object, index values.
type benchEntry struct {
	key   string
	value []byte
	index [][]string
}

func benchEntries(n int) []benchEntry {
	r := rand.New(rand.NewSource(1))
	reasons := []string{"Scheduled", "Pulling", "Pulled", "Created", "Started", "Killing", "BackOff", "Unhealthy", "FailedMount", "SuccessfulCreate"}
	out := make([]benchEntry, n)
	for i := range out {
		ns := fmt.Sprintf("team-%02d", r.Intn(50))
		pod := fmt.Sprintf("web-%08x-%05x", r.Uint32(), r.Intn(1<<20))
		value := make([]byte, 420+r.Intn(60))
		r.Read(value)
		typ := "Normal"
		if r.Intn(10) == 0 {
			typ = "Warning"
		}
		out[i] = benchEntry{
			key:   fmt.Sprintf("/registry/events/%s/%s.%x", ns, pod, r.Uint64()),
			value: value,
			index: [][]string{
				{pod},                              // involvedObject.name
				{fmt.Sprintf("%016x", r.Uint64())}, // involvedObject.uid
				{pod + ".event"},                   // metadata.name
				{reasons[r.Intn(len(reasons))]},    // reason
				{typ},                              // type
			},
		}
	}
	return out
}

func BenchmarkTableMemory(b *testing.B) {
	const n = 100000
	entries := benchEntries(n)
	names := []string{"involvedObject.name", "involvedObject.uid", "metadata.name", "reason", "type"}
	var heap, arena, live, putNs float64
	for range b.N {
		b.StopTimer()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tab := NewTable(names)
		b.StartTimer()
		start := time.Now()
		for i, e := range entries {
			mustPut(b, tab, e.key, uint64(i+1), e.value, e.index)
		}
		putNs = float64(time.Since(start).Nanoseconds()) / n
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		st := tab.Stats()
		heap = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
		arena, live = float64(st.ArenaBytes)/n, float64(st.LiveBytes)/n
		runtime.KeepAlive(entries)
		tab.Close()
		b.StartTimer()
	}
	b.ReportMetric(heap, "heap-B/entry")
	b.ReportMetric(arena, "arena-B/entry")
	b.ReportMetric(live, "live-B/entry")
	b.ReportMetric(putNs, "ns/put")
}

// mustPut puts an entry in tab, failing the test when the arena cannot.
func mustPut(tb testing.TB, tab *Table, key string, rv uint64, value []byte, indexValues [][]string) {
	tb.Helper()
	if err := tab.Put(key, rv, value, indexValues); err != nil {
		tb.Fatalf("Put(%q): %v", key, err)
	}
}

// A chunk the machine cannot map is an error of Put, which changes nothing,
// not a panic of the goroutine that feeds the store.
func TestPutOfAnUnmappableChunkIsAnError(t *testing.T) {
	tab := newTableSize(testIndexes, 1<<52) // 4 PiB chunks
	defer tab.Close()
	if err := tab.Put("/k/a", 1, []byte("v"), nil); err == nil {
		t.Fatal("Put mapped a chunk of 4 PiB")
	}
	if n := tab.Len(); n != 0 {
		t.Errorf("Len() = %d after a failed Put, want 0", n)
	}
	if _, _, ok := tab.Get("/k/a"); ok {
		t.Error("the failed Put's entry is in the table")
	}
}

// TestScansGauge: the scans metric counts the scans taken and not yet
// released, whichever way they were taken, and a second Release counts
// nothing.
func TestScansGauge(t *testing.T) {
	registerMetrics() // an unregistered metric of component-base counts nothing
	tab := fill(t, []string{"/a/1", "/a/2"}, noIndex)
	value := func() float64 {
		v, err := testutil.GetGaugeMetricValue(scansGauge)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := value()
	all := tab.Scan("/a/")
	one := tab.Scan("/a/1")
	if got := value() - before; got != 2 {
		t.Errorf("with two scans open the gauge rose by %v, want 2", got)
	}
	all.Release()
	all.Release()
	if got := value() - before; got != 1 {
		t.Errorf("with one scan released (twice) the gauge is %v over its start, want 1", got)
	}
	one.Release()
	if got := value() - before; got != 0 {
		t.Errorf("with every scan released the gauge is %v over its start, want 0", got)
	}
}
