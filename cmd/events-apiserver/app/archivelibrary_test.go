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

package app

import (
	"flag"
	"testing"

	"github.com/VictoriaMetrics/VictoriaMetrics/lib/memory"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-events/events-apiserver/pkg/archive/victorialogs"
)

// TestArchiveLibraryFlags checks what the server's main sets before the
// embedded archive opens: the library's caches are bounded by
// victorialogs.DefaultCacheBytes, not by 60 % of the machine's memory, and
// flag.CommandLine is parsed (lib/memory panics otherwise).
func TestArchiveLibraryFlags(t *testing.T) {
	if err := SetArchiveLibraryFlags(); err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	a, err := victorialogs.OpenEmbedded(ctx, victorialogs.EmbeddedConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if got := memory.Allowed(); got != victorialogs.DefaultCacheBytes {
		t.Errorf("the library's cache memory is %d bytes, want %d", got, victorialogs.DefaultCacheBytes)
	}
	if !flag.Parsed() {
		t.Error("flag.CommandLine is not parsed: lib/memory would panic")
	}
}
