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
	"fmt"
	"runtime/debug"
	"testing"
)

// TestShareMemoryLimit checks that the Go runtime's soft limit follows the
// memory the stores map: the shared limit less MappedBytes, as arenas are
// mapped and unmapped.
func TestShareMemoryLimit(t *testing.T) {
	previous := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		ShareMemoryLimit(0)
		debug.SetMemoryLimit(previous)
	})
	const limit = 1 << 40
	ShareMemoryLimit(limit)
	check := func(when string) {
		t.Helper()
		if got, want := debug.SetMemoryLimit(-1), int64(limit)-MappedBytes(); got != want {
			t.Errorf("%s: Go soft limit %d, want the shared limit less %d mapped bytes, %d", when, got, MappedBytes(), want)
		}
		if got := SharedMemoryLimit(); got != limit {
			t.Errorf("%s: SharedMemoryLimit() = %d, want %d", when, got, limit)
		}
	}
	check("before a table")
	before := MappedBytes()

	table := NewTable(nil)
	value := bytes.Repeat([]byte("v"), 4096)
	for i := range 1000 { // 4 MB: several chunks
		mustPut(t, table, fmt.Sprintf("/events/ns/e%04d", i), uint64(i+1), value, nil)
	}
	if MappedBytes() <= before {
		t.Fatalf("MappedBytes() = %d after 4 MB of records, want more than %d", MappedBytes(), before)
	}
	check("with a table")
	table.Close()
	if MappedBytes() != before {
		t.Errorf("MappedBytes() = %d after Close, want %d", MappedBytes(), before)
	}
	check("after Close")
}
