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
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kube-events/events-apiserver/pkg/archive/export"
)

func TestExportOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*ExportOptions)
		archive string
		want    []string
	}{
		{"no endpoint, nothing to check", func(*ExportOptions) {}, ArchiveNone, nil},
		{"http", func(e *ExportOptions) { e.OTLP.Endpoint = "http://collector:4318" }, ArchiveEmbedded, nil},
		{"grpc over TLS", func(e *ExportOptions) {
			e.OTLP.Endpoint, e.OTLP.Protocol, e.OTLP.CAFile = "https://collector:4317", export.ProtocolGRPC, "ca.pem"
		}, ArchiveURL, nil},
		{"no archive", func(e *ExportOptions) { e.OTLP.Endpoint = "http://collector:4318" }, ArchiveNone,
			[]string{`--export-otlp-endpoint exports the archive and needs --archive=embedded or url, got "none"`}},
		{"bad values", func(e *ExportOptions) {
			e.OTLP.Endpoint, e.OTLP.Protocol, e.OTLP.Compression, e.OTLP.CAFile, e.OTLP.CertFile = "http://collector:4318", "thrift", "zstd", "ca.pem", "cert.pem"
			e.BatchSize = 0
		}, ArchiveEmbedded, []string{
			`--export-otlp-*: endpoint "http://collector:4318" must be https:// with a CA file, a client certificate or a server name` + "\n" +
				`protocol must be http/protobuf or grpc, got "thrift"` + "\n" +
				`compression must be gzip or none, got "zstd"` + "\n" +
				"a client certificate needs both its certificate and key files",
			"--export-batch-size must be between 1 and 10000, got 0",
		}},
		{"not a URL", func(e *ExportOptions) { e.OTLP.Endpoint = "collector:4318" }, ArchiveEmbedded,
			[]string{`--export-otlp-*: endpoint "collector:4318" must be an http:// or https:// URL with a host`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newExportOptions()
			tc.change(&e)
			var got []string
			for _, err := range e.validate(tc.archive) {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExportSelectionReloads: the export's selection is the policy file's,
// read again once it changed; a file that no longer loads keeps the last
// selection.
func TestExportSelectionReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	write := func(export string, mtime time.Time) {
		t.Helper()
		data := "apiVersion: eventpolicy.config.events.k8s.io/v1alpha1\nkind: EventPolicy\n" + export
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour)
	write("export: {types: [Warning]}\n", t0)
	o := NewOptions()
	o.EventPolicyConfig = path
	ctx := context.Background()
	want := &export.Selection{Types: sets.New("Warning"), Namespaces: sets.New[string](), ExcludedNamespaces: sets.New[string](),
		Reasons: sets.New[string](), ReportingControllers: sets.New[string](), NamespaceQPS: 100, NamespaceBurst: 1000}
	if diff := cmp.Diff(want, o.exportSelection(ctx)); diff != "" {
		t.Fatalf("selection at start (-want +got):\n%s", diff)
	}

	p := o.exportPolicy
	write("export: {namespaces: [shop], namespaceRate: {qps: 0, burst: 0}}\n", t0.Add(time.Minute))
	if diff := cmp.Diff(want, p.current(ctx, p.checked.Add(time.Second))); diff != "" {
		t.Errorf("selection read again before policyRecheck (-want +got):\n%s", diff)
	}
	reloaded := &export.Selection{Namespaces: sets.New("shop"), Types: sets.New[string](), ExcludedNamespaces: sets.New[string](),
		Reasons: sets.New[string](), ReportingControllers: sets.New[string]()}
	if diff := cmp.Diff(reloaded, p.current(ctx, p.checked.Add(policyRecheck))); diff != "" {
		t.Errorf("selection after the file changed (-want +got):\n%s", diff)
	}

	write("export: {types: [\"\"]}\n", t0.Add(2*time.Minute))
	got := p.current(ctx, p.checked.Add(policyRecheck))
	if diff := cmp.Diff(reloaded, got); diff != "" {
		t.Errorf("selection after the file stopped loading (-want +got):\n%s", diff)
	}
}
