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
	"compress/gzip"
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // the server's gzip decompressor
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

// request is what a test receiver saw of one export request.
type request struct {
	Path, Authorization, Encoding string
	Bodies                        []string
}

// bodies are the bodies of the records of req.
func bodies(req *collogspb.ExportLogsServiceRequest) []string {
	var out []string
	for _, rl := range req.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			for _, lr := range sl.GetLogRecords() {
				out = append(out, lr.GetBody().GetStringValue())
			}
		}
	}
	return out
}

// httpReceiver is an OTLP/HTTP protobuf receiver.
func httpReceiver(t *testing.T, tlsServer bool) (*httptest.Server, func() []request) {
	var mu sync.Mutex
	var got []request
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		data, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := &collogspb.ExportLogsServiceRequest{}
		if err := proto.Unmarshal(data, req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, request{Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Encoding: r.Header.Get("Content-Encoding"), Bodies: bodies(req)})
		mu.Unlock()
		resp, _ := proto.Marshal(&collogspb.ExportLogsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	})
	var s *httptest.Server
	if tlsServer {
		s = httptest.NewTLSServer(handler)
	} else {
		s = httptest.NewServer(handler)
	}
	t.Cleanup(s.Close)
	return s, func() []request {
		mu.Lock()
		defer mu.Unlock()
		return append([]request(nil), got...)
	}
}

// grpcReceiver is an OTLP/gRPC receiver.
type grpcReceiver struct {
	collogspb.UnimplementedLogsServiceServer
	mu  sync.Mutex
	got []request
	// compressed: the last message arrived smaller than it decoded, as
	// its stats tell (gRPC keeps grpc-encoding out of the metadata).
	compressed bool
}

func (g *grpcReceiver) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (g *grpcReceiver) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (g *grpcReceiver) HandleConn(context.Context, stats.ConnStats) {}

func (g *grpcReceiver) HandleRPC(_ context.Context, s stats.RPCStats) {
	if in, ok := s.(*stats.InPayload); ok {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.compressed = in.CompressedLength < in.Length
	}
}

func (g *grpcReceiver) Export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	r := request{Path: "grpc", Bodies: bodies(req)}
	if v := md.Get("authorization"); len(v) > 0 {
		r.Authorization = v[0]
	}
	g.mu.Lock()
	if g.compressed {
		r.Encoding = "gzip"
	}
	defer g.mu.Unlock()
	g.got = append(g.got, r)
	return &collogspb.ExportLogsServiceResponse{}, nil
}

func (g *grpcReceiver) requests() []request {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]request(nil), g.got...)
}

// TestOTLPExporter sends records through the SDK's exporters NewOTLPExporter
// makes, to receivers that decode what arrives: OTLP/HTTP protobuf in
// plain text and over TLS (verified with a CA file), and gRPC, each with
// the credentials header and gzip.
func TestOTLPExporter(t *testing.T) {
	ctx := context.Background()
	plain, plainGot := httpReceiver(t, false)
	secure, secureGot := httpReceiver(t, true)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: secure.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &grpcReceiver{}
	server := grpc.NewServer(grpc.StatsHandler(g))
	collogspb.RegisterLogsServiceServer(server, g)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)

	headers := map[string]string{"Authorization": "Bearer token"}
	base := OTLPConfig{Protocol: ProtocolHTTP, Compression: CompressionGzip, Headers: headers, Timeout: 5 * time.Second}
	tests := []struct {
		name     string
		change   func(c *OTLPConfig)
		received func() []request
		want     request
	}{
		{"http, the default path", func(c *OTLPConfig) { c.Endpoint = plain.URL }, plainGot,
			request{Path: "/v1/logs", Authorization: "Bearer token", Encoding: "gzip"}},
		{"https with a CA file, a path of its own, no compression", func(c *OTLPConfig) {
			c.Endpoint, c.CAFile, c.Compression = secure.URL+"/insert/opentelemetry/v1/logs", caFile, CompressionNone
		}, secureGot, request{Path: "/insert/opentelemetry/v1/logs", Authorization: "Bearer token"}},
		{"grpc", func(c *OTLPConfig) { c.Endpoint, c.Protocol = "http://"+listener.Addr().String(), ProtocolGRPC }, g.requests,
			request{Path: "grpc", Authorization: "Bearer token", Encoding: "gzip"}},
	}
	enc := newEncoder(nil)
	defer enc.shutdown()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.change(&c)
			exporter, err := NewOTLPExporter(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = exporter.Shutdown(ctx) }()
			var batch []sdklog.Record
			for _, note := range []string{"first", "second"} {
				event := &core.Event{ObjectMeta: metav1.ObjectMeta{Name: note, Namespace: "ns", UID: types.UID("uid-" + note)},
					EventTime: metav1.NowMicro(), Type: "Normal", Message: note}
				batch = append(batch, enc.encode(newRecord(ctx, event, "1")))
			}
			if err := exporter.Export(ctx, batch); err != nil {
				t.Fatal(err)
			}
			want := tc.want
			want.Bodies = []string{"first", "second"}
			if diff := cmp.Diff([]request{want}, tc.received()); diff != "" {
				t.Errorf("received (-want +got):\n%s", diff)
			}
		})
	}
}
