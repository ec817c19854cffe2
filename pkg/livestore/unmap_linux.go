//go:build linux && !livestore_debug

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

// freeChunk unmaps a chunk allocChunk mapped. Nothing may read it after.
func freeChunk(b []byte) {
	if err := syscall.Munmap(b); err != nil {
		// The mapping is the arena's own: failing to unmap it is a bug.
		panic(fmt.Sprintf("livestore: unmapping %d bytes: %v", len(b), err))
	}
}
