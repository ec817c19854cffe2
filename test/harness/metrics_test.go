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
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMetrics(t *testing.T) {
	before := parse(t, `# TYPE writes_total counter
writes_total{operation="create"} 3
writes_total{operation="update"} 1
# TYPE events_apiserver_leader gauge
events_apiserver_leader{election="controllers"} 0
# TYPE lag_seconds histogram
lag_seconds_bucket{le="0.1"} 10
lag_seconds_bucket{le="1"} 10
lag_seconds_bucket{le="+Inf"} 10
lag_seconds_sum 0.5
lag_seconds_count 10
`)
	after := parse(t, `# TYPE writes_total counter
writes_total{operation="create"} 7
writes_total{operation="update"} 2
# TYPE events_apiserver_leader gauge
events_apiserver_leader{election="controllers"} 1
# TYPE lag_seconds histogram
lag_seconds_bucket{le="0.1"} 10
lag_seconds_bucket{le="1"} 110
lag_seconds_bucket{le="+Inf"} 110
lag_seconds_sum 50.5
lag_seconds_count 110
`)
	since := HistogramSince(before.Histogram("lag_seconds", nil), after.Histogram("lag_seconds", nil))
	tests := []struct {
		name      string
		got, want any
	}{
		{"a counter by label", after.Value("writes_total", map[string]string{"operation": "create"}), 7.0},
		{"a counter summed over its labels", after.Value("writes_total", nil), 9.0},
		{"a gauge", after.Value("events_apiserver_leader", map[string]string{"election": "controllers"}), 1.0},
		{"a metric that is absent", after.Value("missing_total", nil), 0.0},
		{"Has", []bool{after.Has("writes_total"), after.Has("missing_total")}, []bool{true, false}},
		{"Leads", []bool{Leads(before), Leads(after)}, []bool{false, true}},
		// The 100 observations since before all fall in (0.1, 1]: the
		// median is interpolated in the middle of that bucket.
		{"observations since", since.GetAggregatedSampleCount(), uint64(100)},
		{"median since", since.Quantile(0.5), 0.55},
		{"median of all", after.Histogram("lag_seconds", nil).Quantile(0.5), 0.1 + 0.9*45/100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func parse(t *testing.T, text string) Metrics {
	t.Helper()
	m, err := ParseMetrics([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
