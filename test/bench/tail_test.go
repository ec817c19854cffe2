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

package bench

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-events/events-apiserver/test/harness"
)

func TestTail(t *testing.T) {
	before := parse(t, `# HELP apiserver_request_duration_seconds ...
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1",le="0.05"} 90
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1",le="0.1"} 99
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1",le="+Inf"} 100
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="LIST",version="v1",le="+Inf"} 7
# TYPE go_sched_latencies_seconds histogram
go_sched_latencies_seconds_bucket{le="0.001"} 900
go_sched_latencies_seconds_bucket{le="0.01"} 1000
go_sched_latencies_seconds_bucket{le="+Inf"} 1000
`)
	after := parse(t, `# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="POST",version="v1",le="0.1"} 100
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="POST",version="v1",le="+Inf"} 100
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1",le="0.1"} 1089
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1",le="+Inf"} 1100
# TYPE go_sched_latencies_seconds histogram
go_sched_latencies_seconds_bucket{le="0.001"} 1000
go_sched_latencies_seconds_bucket{le="0.01"} 1900
go_sched_latencies_seconds_bucket{le="+Inf"} 2000
`)
	var b, a tailUse
	readServerTail(before, &b)
	readServerTail(after, &a)
	d := a.sub(b)

	tests := []struct {
		name      string
		got, want any
	}{
		// Both groups' creates count: 1,200 in all, 1 slow before, 11 after.
		{"creates", d.serverCreates, 1100.0},
		{"slow creates", d.serverSlow, 10.0},
		// 1,000 waits in the phase: 100 up to 1 ms, 800 up to 10 ms, 100 longer.
		{"wait p99", serverSchedP99(d.serverSched), "> 10ms"},
		{"wait p99 before", serverSchedP99(b.serverSched), "≤ 10ms"},
		{"no waits", serverSchedP99(map[float64]float64{}), "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func parse(t *testing.T, text string) harness.Metrics {
	t.Helper()
	m, err := harness.ParseMetrics([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
