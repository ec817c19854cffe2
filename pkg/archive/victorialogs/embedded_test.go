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

package victorialogs

import (
	"bytes"
	"flag"
	"strings"
	"testing"
	"time"

	vmlogger "github.com/VictoriaMetrics/VictoriaMetrics/lib/logger"
	"github.com/VictoriaMetrics/VictoriaMetrics/lib/memory"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-events/events-apiserver/pkg/archive/archivetest"
)

func TestEmbedded(t *testing.T) {
	archivetest.Run(t, func(t *testing.T) archivetest.Engine {
		_, ctx := ktesting.NewTestContext(t)
		retention := 48 * time.Hour
		a, err := OpenEmbedded(ctx, EmbeddedConfig{Dir: t.TempDir(), Retention: retention})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := a.Close(); err != nil {
				t.Error(err)
			}
		})
		return archivetest.Engine{Archive: a, Retention: retention}
	}, archivetest.Options{})
}

// TestEmbeddedContainsProcess checks what opening the embedded engine sets
// in the process: the library's caches are bounded by CacheBytes, not by
// 60 % of the machine's memory, and its logs go to the opener's logger.
func TestEmbeddedContainsProcess(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	a, err := OpenEmbedded(ctx, EmbeddedConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if got := memory.Allowed(); got != DefaultCacheBytes {
		t.Errorf("the library's cache memory is %d bytes, want %d", got, DefaultCacheBytes)
	}
	var buf bytes.Buffer
	vmlogger.SetOutputForTests(&buf)
	vmlogger.Warnf("a warning")
	vmlogger.SetOutputForTests(klogWriter{logger: klog.FromContext(ctx)})
	if got := buf.String(); !strings.HasPrefix(got, "warn\t") || !strings.HasSuffix(got, "\ta warning\n") {
		t.Errorf("the library logs %q, want level, caller and message without a timestamp (what klogWriter parses)", got)
	}
	if !flag.Parsed() {
		t.Error("flag.CommandLine is not parsed: lib/memory would panic")
	}
}
