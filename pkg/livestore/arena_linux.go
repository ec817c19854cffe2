//go:build linux

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
	"os"
	"syscall"
)

// chunkGranule is the unit of chunk sizes: mappings are whole pages.
var chunkGranule = os.Getpagesize()

// allocChunk maps n bytes of anonymous memory, outside the Go heap.
func allocChunk(n int) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("livestore: mapping %d bytes: %w", n, err)
	}
	return b, nil
}
