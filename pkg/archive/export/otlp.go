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

package export

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"google.golang.org/grpc/credentials"
)

// The OTLP protocols.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// The compressions of the requests.
const (
	CompressionGzip = "gzip"
	CompressionNone = "none"
)

// OTLPConfig configures the OTLP exporter.
type OTLPConfig struct {
	// Protocol is ProtocolHTTP or ProtocolGRPC.
	Protocol string
	// Endpoint is the receiver's URL: http:// is plain text, https://
	// TLS. For ProtocolHTTP its path is where the logs are posted,
	// /v1/logs when it has none; ProtocolGRPC ignores the path.
	Endpoint string
	// Headers go with every request (credentials).
	Headers map[string]string
	// Compression is CompressionGzip or CompressionNone.
	Compression string
	// CAFile verifies the receiver's certificate (the system's roots when
	// empty); CertFile and KeyFile are the client certificate, if any;
	// ServerName is the name the certificate must hold when it is not
	// the endpoint's host.
	CAFile, CertFile, KeyFile, ServerName string
	// Timeout bounds one export request.
	Timeout time.Duration
}

// Validate checks c.
func (c OTLPConfig) Validate() error {
	var errs []error
	u, err := url.Parse(c.Endpoint)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("endpoint %q: %w", c.Endpoint, err))
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		errs = append(errs, fmt.Errorf("endpoint %q must be an http:// or https:// URL with a host", c.Endpoint))
	case u.Scheme == "http" && (c.CAFile != "" || c.CertFile != "" || c.ServerName != ""):
		errs = append(errs, fmt.Errorf("endpoint %q must be https:// with a CA file, a client certificate or a server name", c.Endpoint))
	}
	if c.Protocol != ProtocolHTTP && c.Protocol != ProtocolGRPC {
		errs = append(errs, fmt.Errorf("protocol must be %s or %s, got %q", ProtocolHTTP, ProtocolGRPC, c.Protocol))
	}
	if c.Compression != CompressionGzip && c.Compression != CompressionNone {
		errs = append(errs, fmt.Errorf("compression must be %s or %s, got %q", CompressionGzip, CompressionNone, c.Compression))
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		errs = append(errs, errors.New("a client certificate needs both its certificate and key files"))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout must be positive, got %v", c.Timeout))
	}
	return errors.Join(errs...)
}

// NewOTLPExporter returns the OpenTelemetry SDK's OTLP log exporter for
// c, with its own retries off: the export retries a batch itself, with a
// backoff, for as long as the receiver fails, and counts the retries.
func NewOTLPExporter(ctx context.Context, c OTLPConfig) (sdklog.Exporter, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	u, _ := url.Parse(c.Endpoint)
	var tlsConfig *tls.Config
	if u.Scheme == "https" {
		var err error
		if tlsConfig, err = c.tlsConfig(); err != nil {
			return nil, err
		}
	}
	if c.Protocol == ProtocolGRPC {
		opts := []otlploggrpc.Option{
			otlploggrpc.WithEndpoint(u.Host),
			otlploggrpc.WithTimeout(c.Timeout),
			otlploggrpc.WithRetry(otlploggrpc.RetryConfig{Enabled: false}),
		}
		if tlsConfig == nil {
			opts = append(opts, otlploggrpc.WithInsecure())
		} else {
			opts = append(opts, otlploggrpc.WithTLSCredentials(credentials.NewTLS(tlsConfig)))
		}
		if len(c.Headers) > 0 {
			opts = append(opts, otlploggrpc.WithHeaders(c.Headers))
		}
		if c.Compression == CompressionGzip {
			opts = append(opts, otlploggrpc.WithCompressor("gzip"))
		}
		return otlploggrpc.New(ctx, opts...)
	}
	path := u.Path
	if path == "" || path == "/" {
		path = "/v1/logs"
	}
	opts := []otlploghttp.Option{
		otlploghttp.WithEndpoint(u.Host),
		otlploghttp.WithURLPath(path),
		otlploghttp.WithTimeout(c.Timeout),
		otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false}),
	}
	if tlsConfig == nil {
		opts = append(opts, otlploghttp.WithInsecure())
	} else {
		opts = append(opts, otlploghttp.WithTLSClientConfig(tlsConfig))
	}
	if len(c.Headers) > 0 {
		opts = append(opts, otlploghttp.WithHeaders(c.Headers))
	}
	if c.Compression == CompressionGzip {
		opts = append(opts, otlploghttp.WithCompression(otlploghttp.GzipCompression))
	} else {
		opts = append(opts, otlploghttp.WithCompression(otlploghttp.NoCompression))
	}
	return otlploghttp.New(ctx, opts...)
}

// tlsConfig reads c's files. They are read when the exporter is made, at
// each start of the export (a new leader term, or after its client failed
// to start).
func (c OTLPConfig) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("OTLP CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTLP CA file %s holds no PEM certificate", c.CAFile)
		}
		cfg.RootCAs = pool
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("OTLP client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
