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
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/load"
	"github.com/kube-events/events-apiserver/pkg/apiserver"
	"github.com/kube-events/events-apiserver/pkg/archive/export"
)

// ExportOptions configure the OTLP export of the archive (see
// pkg/archive/export). What is exported is the event policy's (its export
// section).
type ExportOptions struct {
	OTLP      export.OTLPConfig
	BatchSize int
}

func newExportOptions() ExportOptions {
	return ExportOptions{
		OTLP:      export.OTLPConfig{Protocol: export.ProtocolHTTP, Compression: export.CompressionGzip, Timeout: 10 * time.Second},
		BatchSize: export.DefaultBatchSize,
	}
}

func (e *ExportOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&e.OTLP.Endpoint, "export-otlp-endpoint", e.OTLP.Endpoint, "URL of the OpenTelemetry (OTLP) logs receiver every archived event state is exported to "+
		"(an OpenTelemetry Collector, or a backend that takes OTLP): http:// in plain text, https:// over TLS. With --export-otlp-protocol=http/protobuf "+
		"its path is where logs are posted (/v1/logs when it has none). Needs an archive (--archive); empty exports nothing.")
	fs.StringVar(&e.OTLP.Protocol, "export-otlp-protocol", e.OTLP.Protocol, "OTLP protocol of --export-otlp-endpoint: http/protobuf or grpc.")
	fs.StringToStringVar(&e.OTLP.Headers, "export-otlp-headers", e.OTLP.Headers, "Headers (or gRPC metadata) sent with every export request, as key=value pairs separated by commas: "+
		"the receiver's credentials.")
	fs.StringVar(&e.OTLP.Compression, "export-otlp-compression", e.OTLP.Compression, "Compression of the export requests: gzip or none.")
	fs.StringVar(&e.OTLP.CAFile, "export-otlp-ca-file", e.OTLP.CAFile, "PEM file of the CAs that sign the certificate of the https:// --export-otlp-endpoint; the system's roots when empty.")
	fs.StringVar(&e.OTLP.CertFile, "export-otlp-cert-file", e.OTLP.CertFile, "PEM client certificate presented to --export-otlp-endpoint; needs --export-otlp-key-file.")
	fs.StringVar(&e.OTLP.KeyFile, "export-otlp-key-file", e.OTLP.KeyFile, "PEM private key of --export-otlp-cert-file.")
	fs.StringVar(&e.OTLP.ServerName, "export-otlp-tls-server-name", e.OTLP.ServerName, "Name the certificate of --export-otlp-endpoint must hold, when it is not the endpoint's host.")
	fs.DurationVar(&e.OTLP.Timeout, "export-otlp-timeout", e.OTLP.Timeout, "How long one export request may take before it is retried.")
	fs.IntVar(&e.BatchSize, "export-batch-size", e.BatchSize, "Most event states one export request carries: what the export holds in memory, "+
		"and what a receiver may get twice after an interruption.")
}

// validate checks the options of a server whose archive mode is
// archiveMode.
func (e *ExportOptions) validate(archiveMode string) []error {
	if e.OTLP.Endpoint == "" {
		return nil
	}
	var errs []error
	if archiveMode != ArchiveEmbedded && archiveMode != ArchiveURL {
		errs = append(errs, fmt.Errorf("--export-otlp-endpoint exports the archive and needs --archive=embedded or url, got %q", archiveMode))
	}
	if err := e.OTLP.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--export-otlp-*: %w", err))
	}
	if e.BatchSize <= 0 || e.BatchSize > 10000 {
		errs = append(errs, fmt.Errorf("--export-batch-size must be between 1 and 10000, got %d", e.BatchSize))
	}
	return errs
}

// config is the server's export configuration, nil for none; selection is
// the event policy's.
func (e ExportOptions) config(selection func(context.Context) *export.Selection) *apiserver.ExportConfig {
	if e.OTLP.Endpoint == "" {
		return nil
	}
	return &apiserver.ExportConfig{OTLP: e.OTLP, BatchSize: e.BatchSize, Selection: selection}
}

// policyRecheck is how often, at most, the export looks whether
// --event-policy-config changed.
const policyRecheck = 5 * time.Second

// exportPolicy holds the export selection of the event policy, read again
// from --event-policy-config when the file changes, so that an edited
// selection applies from the export's next batch without a restart. A file
// that no longer loads keeps the selection before it. The rest of the
// policy is read once, at start.
type exportPolicy struct {
	path string

	mu        sync.Mutex
	checked   time.Time
	modified  time.Time
	size      int64
	selection *export.Selection
}

// exportSelection is the export's Config.Selection; call it after the
// policy was loaded (Config).
func (o *Options) exportSelection(ctx context.Context) *export.Selection {
	o.exportPolicyOnce.Do(func() {
		p := &exportPolicy{path: o.EventPolicyConfig}
		if policy, err := o.eventPolicy(); err == nil {
			p.selection = selectionOf(policy.Export)
		}
		if info, err := os.Stat(p.path); p.path != "" && err == nil {
			p.modified, p.size = info.ModTime(), info.Size()
		}
		p.checked = time.Now()
		o.exportPolicy = p
	})
	return o.exportPolicy.current(ctx, time.Now())
}

// current returns the selection, reading the file again first if it
// changed since the last look, at most once per policyRecheck.
func (p *exportPolicy) current(ctx context.Context, now time.Time) *export.Selection {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.path == "" || now.Sub(p.checked) < policyRecheck {
		return p.selection
	}
	p.checked = now
	info, err := os.Stat(p.path)
	if err != nil || (info.ModTime().Equal(p.modified) && info.Size() == p.size) {
		return p.selection
	}
	p.modified, p.size = info.ModTime(), info.Size()
	versioned, err := decodePolicyFile(p.path)
	if err == nil {
		var policy *eventpolicy.EventPolicy
		if policy, err = load.Complete(versioned); err == nil {
			p.selection = selectionOf(policy.Export)
			klog.FromContext(ctx).Info("Reloaded the export selection of the event policy", "file", p.path)
			return p.selection
		}
	}
	klog.FromContext(ctx).Error(err, "The event policy no longer loads; the export keeps its selection", "file", p.path)
	return p.selection
}

// selectionOf is the export's selection of the policy's.
func selectionOf(e eventpolicy.Export) *export.Selection {
	return &export.Selection{
		Namespaces:           sets.New(e.Namespaces...),
		ExcludedNamespaces:   sets.New(e.ExcludedNamespaces...),
		Types:                sets.New(e.Types...),
		Reasons:              sets.New(e.Reasons...),
		ReportingControllers: sets.New(e.ReportingControllers...),
		NamespaceQPS:         e.NamespaceRate.QPS,
		NamespaceBurst:       int(e.NamespaceRate.Burst),
	}
}
