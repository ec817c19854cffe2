//go:build linux && livestore_debug

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
	"syscall"
)

// freeChunk, in the livestore_debug build, gives the chunk's pages back and
// leaves its addresses mapped with no access, never to be mapped again: a
// read of memory the store has freed faults at once (SIGSEGV, "unexpected
// fault address"), where -race sees nothing.
func freeChunk(b []byte) {
	if err := syscall.Madvise(b, syscall.MADV_DONTNEED); err != nil {
		panic(fmt.Sprintf("livestore: releasing %d bytes: %v", len(b), err))
	}
	if err := syscall.Mprotect(b, syscall.PROT_NONE); err != nil {
		panic(fmt.Sprintf("livestore: protecting %d bytes: %v", len(b), err))
	}
}
