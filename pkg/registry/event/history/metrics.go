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

package history

import (
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Results, the label values of historyLists.
const (
	resultSuccess     = "success"
	resultInvalid     = "invalid"
	resultThrottled   = "throttled"
	resultUnavailable = "unavailable"
	resultError       = "error"
)

var (
	historyLists = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "events_apiserver", Subsystem: "history", Name: "lists_total",
		Help:           "Lists with history.since, by result (success, invalid, throttled, unavailable, error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	historyListDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace: "events_apiserver", Subsystem: "history", Name: "list_duration_seconds",
		Help:           "Time to answer one page of a list with history.since, live store and archive together.",
		Buckets:        []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		StabilityLevel: metrics.ALPHA,
	})
	historyLiveReads = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "events_apiserver", Subsystem: "history", Name: "live_events_read",
		Help: "Live events one page of a list with history.since read, by how it read them: " +
			"in order of last observation (timeline; bounded by the page) or every matching event (list; a selector on an indexed field).",
		Buckets:        metrics.ExponentialBuckets(10, 4, 9),
		StabilityLevel: metrics.ALPHA,
	}, []string{"read"})

	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(historyLists, historyListDuration, historyLiveReads)
	})
}

// How a page read the live events, the label values of historyLiveReads.
const (
	readTimeline = "timeline"
	readList     = "list"
)

// resultOf is the result label of a history list's error.
func resultOf(err error) string {
	switch {
	case err == nil:
		return resultSuccess
	case apierrors.IsBadRequest(err):
		return resultInvalid
	case apierrors.IsServiceUnavailable(err):
		return resultUnavailable
	default:
		return resultError
	}
}
