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

package harness

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/test/freeport"
)

// Collector is an OpenTelemetry Collector built from its Go modules
// (hack/otelcol-assets.sh): the OTLP receiver on both protocols, and the
// file exporter writing what it receives to Output.
type Collector struct {
	*Process
	// HTTPEndpoint is the OTLP/HTTP receiver's URL, GRPCEndpoint the
	// OTLP/gRPC one's (http://, plain text).
	HTTPEndpoint, GRPCEndpoint string
	// Output is the file exporter's file: each request's logs, protobuf,
	// after its length (4 bytes, big endian).
	Output string
}

// collectorConfig is the Collector's configuration: the gRPC and the HTTP
// receiver's addresses and the output file.
const collectorConfig = `receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
exporters:
  file:
    path: %s
    format: proto
    flush_interval: 50ms
service:
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [file]
`

// StartCollector starts the Collector of dir (OTELCOL_ASSETS, from
// hack/otelcol-assets.sh) with its files in work, and returns it once both
// receivers take connections.
func StartCollector(ctx context.Context, dir, work string) (*Collector, error) {
	if dir == "" {
		return nil, errors.New("OTELCOL_ASSETS is not set: export OTELCOL_ASSETS=$(hack/otelcol-assets.sh)")
	}
	ports, err := freeport.Ports(2)
	if err != nil {
		return nil, err
	}
	grpcAddr, httpAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	c := &Collector{HTTPEndpoint: "http://" + httpAddr, GRPCEndpoint: "http://" + grpcAddr, Output: filepath.Join(work, "logs.pb")}
	config := filepath.Join(work, "otelcol.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, collectorConfig, grpcAddr, httpAddr, c.Output), 0o600); err != nil {
		return nil, err
	}
	c.Process = &Process{Name: "otelcol", Path: filepath.Join(dir, "otelcol"), Args: []string{"--config=file:" + config},
		LogPath: filepath.Join(work, "otelcol.log")}
	if err := c.Start(); err != nil {
		return nil, err
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if !c.Running() {
			return false, fmt.Errorf("otelcol exited: %v\n%s", c.Err(), c.Tail())
		}
		for _, addr := range []string{grpcAddr, httpAddr} {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return false, nil
			}
			_ = conn.Close()
		}
		return true, nil
	})
	if err != nil {
		_ = c.Kill()
		return nil, fmt.Errorf("otelcol not serving: %w", err)
	}
	return c, nil
}

// Record is a log record the Collector received, flattened as VictoriaLogs
// stores one: "_msg" is the body, "_time" the timestamp (RFC 3339, UTC),
// "observed_time", "severity_text", "severity_number", "event_name",
// "trace_id" and "span_id" (hex), and the resource's and the record's
// attributes by key, an integer in decimal and an array as JSON.
type Record map[string]string

// Records reads every record the Collector has written out so far. A
// request the file exporter is still writing is left for the next read.
func (c *Collector) Records() ([]Record, error) {
	data, err := os.ReadFile(c.Output)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var records []Record
	for len(data) >= 4 {
		n := int(binary.BigEndian.Uint32(data))
		if len(data) < 4+n {
			break
		}
		var req collogspb.ExportLogsServiceRequest
		if err := proto.Unmarshal(data[4:4+n], &req); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", c.Output, err)
		}
		data = data[4+n:]
		for _, rl := range req.GetResourceLogs() {
			for _, sl := range rl.GetScopeLogs() {
				for _, lr := range sl.GetLogRecords() {
					r := Record{
						"_msg":            anyString(lr.GetBody()),
						"_time":           time.Unix(0, int64(lr.GetTimeUnixNano())).UTC().Format(time.RFC3339Nano),
						"observed_time":   time.Unix(0, int64(lr.GetObservedTimeUnixNano())).UTC().Format(time.RFC3339Nano),
						"severity_text":   lr.GetSeverityText(),
						"severity_number": strconv.Itoa(int(lr.GetSeverityNumber())),
						"event_name":      lr.GetEventName(),
					}
					if id := lr.GetTraceId(); len(id) > 0 {
						r["trace_id"] = hex.EncodeToString(id)
					}
					if id := lr.GetSpanId(); len(id) > 0 {
						r["span_id"] = hex.EncodeToString(id)
					}
					for _, kv := range append(rl.GetResource().GetAttributes(), lr.GetAttributes()...) {
						r[kv.GetKey()] = anyString(kv.GetValue())
					}
					records = append(records, r)
				}
			}
		}
	}
	return records, nil
}

// anyString is v as text: a string as it is, a number in decimal, an
// array as a JSON array of its values as text.
func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_ArrayValue:
		values := make([]string, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			values = append(values, anyString(e))
		}
		data, _ := json.Marshal(values)
		return string(data)
	default:
		return ""
	}
}
