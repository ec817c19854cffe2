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
	"testing"
)

// TestMappedBytes checks that MappedBytes counts the memory the tables
// map as arenas are mapped, and gives it back when they are unmapped.
func TestMappedBytes(t *testing.T) {
	before := MappedBytes()
	table := NewTable(nil)
	value := bytes.Repeat([]byte("v"), 4096)
	for i := range 1000 { // 4 MB: several chunks
		mustPut(t, table, fmt.Sprintf("/events/ns/e%04d", i), uint64(i+1), value, nil)
	}
	if MappedBytes() <= before {
		t.Fatalf("MappedBytes() = %d after 4 MB of records, want more than %d", MappedBytes(), before)
	}
	table.Close()
	if MappedBytes() != before {
		t.Errorf("MappedBytes() = %d after Close, want %d", MappedBytes(), before)
	}
}
