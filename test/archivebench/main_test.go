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

package archivebench

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/kube-events/events-apiserver/pkg/archive/victorialogs"
)

// TestMain gives the embedded archive the storage library's settings the
// server's main sets (victorialogs.LibraryFlags), so the engine measured
// here is configured as shipped: its caches bounded by DefaultCacheBytes.
func TestMain(m *testing.M) {
	flag.Parse()
	for name, value := range victorialogs.LibraryFlags() {
		if err := flag.Set(name, value); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}
