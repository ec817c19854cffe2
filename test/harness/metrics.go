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
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
)

// Metrics is one scrape of a Prometheus text endpoint, by metric name, as
// component-base's testutil parses it.
type Metrics map[string]*dto.MetricFamily

// ParseMetrics parses the Prometheus text format.
func ParseMetrics(body []byte) (Metrics, error) {
	families, err := testutil.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return families, nil
}

// GatherMetrics reads the metrics of gatherer: component-base's legacy
// registry (legacyregistry.DefaultGatherer), for what this process serves.
func GatherMetrics(gatherer metrics.Gatherer) (Metrics, error) {
	families, err := gatherer.Gather()
	if err != nil {
		return nil, err
	}
	m := Metrics{}
	for _, family := range families {
		m[family.GetName()] = family
	}
	return m, nil
}

// ScrapeMetrics reads /metrics through client, with its credentials.
func ScrapeMetrics(ctx context.Context, client rest.Interface) (Metrics, error) {
	body, err := client.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	return ParseMetrics(body)
}

// ScrapeMetricsURL reads the metrics at url over plain HTTP (etcd's
// /metrics, say).
func ScrapeMetricsURL(ctx context.Context, url string) (Metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return ParseMetrics(body)
}

// Has says whether the scrape has metric name.
func (m Metrics) Has(name string) bool {
	return m[name] != nil
}

// Value is the sum of the counters, gauges or untyped samples of metric
// name whose labels include labels (nil: every sample); 0 when there are
// none.
func (m Metrics) Value(name string, labels map[string]string) float64 {
	family := m[name]
	if family == nil {
		return 0
	}
	sum := 0.0
	for _, metric := range family.GetMetric() {
		if !testutil.LabelsMatch(metric, labels) {
			continue
		}
		switch {
		case metric.Counter != nil:
			sum += metric.GetCounter().GetValue()
		case metric.Gauge != nil:
			sum += metric.GetGauge().GetValue()
		case metric.Untyped != nil:
			sum += metric.GetUntyped().GetValue()
		}
	}
	return sum
}

// Histogram is the histograms of metric name whose labels include labels.
func (m Metrics) Histogram(name string, labels map[string]string) testutil.HistogramVec {
	family := m[name]
	if family == nil {
		return nil
	}
	var vec testutil.HistogramVec
	for _, metric := range family.GetMetric() {
		if h := metric.GetHistogram(); h != nil && testutil.LabelsMatch(metric, labels) {
			vec = append(vec, &testutil.Histogram{Histogram: h})
		}
	}
	return vec
}

// HistogramSince is what the histograms of after observed since before
// (the same histograms, scraped earlier): one histogram of the
// differences, to take quantiles of with its Quantile.
func HistogramSince(before, after testutil.HistogramVec) testutil.HistogramVec {
	sum := func(vec testutil.HistogramVec) (count uint64, total float64, buckets map[float64]uint64) {
		buckets = map[float64]uint64{}
		for _, h := range vec {
			count += h.GetSampleCount()
			total += h.GetSampleSum()
			for _, b := range h.GetBucket() {
				buckets[b.GetUpperBound()] += b.GetCumulativeCount()
			}
		}
		return count, total, buckets
	}
	countBefore, sumBefore, bucketsBefore := sum(before)
	countAfter, sumAfter, bucketsAfter := sum(after)
	count, total := countAfter-countBefore, sumAfter-sumBefore
	h := &dto.Histogram{SampleCount: &count, SampleSum: &total}
	if len(after) > 0 {
		for _, b := range after[0].GetBucket() {
			bound := b.GetUpperBound()
			if math.IsInf(bound, 1) {
				continue
			}
			n := bucketsAfter[bound] - bucketsBefore[bound]
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: &bound, CumulativeCount: &n})
		}
	}
	return testutil.HistogramVec{{Histogram: h}}
}
