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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// EventPolicy is the event policy: rate limits, folding and series
// thresholds. Every field is optional; unset ones take their defaults.
type EventPolicy struct {
	metav1.TypeMeta `json:",inline"`

	// Limits are the token buckets every event create and update must take
	// a token from. Unset: the defaults (Reporter 20/s burst 200, Object
	// 10/s burst 100, Namespace 200/s burst 2000). Set, it replaces them: an
	// empty list limits nothing.
	Limits []Limit `json:"limits,omitempty"`
	// Folding configures the folding of isomorphic creates; on by default.
	Folding Folding `json:"folding,omitempty"`
	// Series are the thresholds of event series.
	Series Series `json:"series,omitempty"`
	// Export selects what the OTLP export of the archive sends
	// (--export-otlp-endpoint); the file is read again while the server
	// runs, and a change applies from the export's next batch.
	Export Export `json:"export,omitempty"`
}

// Export selects the archived event states the OTLP export sends: those
// whose namespace, type, reason and reporting controller are each in its
// list (an empty or unset list takes every value) and whose namespace is
// not excluded, within namespaceRate.
type Export struct {
	// Namespaces are the namespaces exported; every one when empty.
	Namespaces []string `json:"namespaces,omitempty"`
	// ExcludedNamespaces are never exported.
	ExcludedNamespaces []string `json:"excludedNamespaces,omitempty"`
	// Types are the types exported (Normal, Warning).
	Types []string `json:"types,omitempty"`
	// Reasons are the reasons exported.
	Reasons []string `json:"reasons,omitempty"`
	// ReportingControllers are the reporting controllers exported
	// (core/v1: reportingComponent).
	ReportingControllers []string `json:"reportingControllers,omitempty"`
	// NamespaceRate bounds the states of one namespace exported per second
	// of the events' own time (their last observation), so that a backlog
	// sent after an outage is bounded as it was live, and one storm cannot
	// flood the pipeline; a folded series exports as its states. Default
	// 100/s, burst 1000; a qps of 0 is no bound.
	NamespaceRate *ExportRate `json:"namespaceRate,omitempty"`
}

// ExportRate is a token bucket.
type ExportRate struct {
	// QPS is how many states per second the bucket refills.
	QPS float64 `json:"qps"`
	// Burst is the bucket's size.
	Burst int32 `json:"burst"`
}

// LimitType is what a limit keeps a token bucket for: Reporter, Namespace
// or Object.
type LimitType string

// Limit is one limit type's token buckets.
type Limit struct {
	// Type is Reporter, Namespace or Object.
	Type LimitType `json:"type"`
	// QPS is how many writes per second a bucket refills.
	QPS float64 `json:"qps"`
	// Burst is the bucket's size: writes allowed at once after a quiet time.
	Burst int32 `json:"burst"`
	// CacheSize is how many buckets of this type are kept (least recently
	// used first forgotten); default 4096.
	CacheSize int32 `json:"cacheSize,omitempty"`
}

// Folding is the folding of isomorphic creates, which the events store does.
type Folding struct {
	// Enabled turns folding on or off; default true.
	Enabled *bool `json:"enabled,omitempty"`
	// After is how many isomorphic creates in a row are stored as events of
	// their own before the next ones are folded (default 10).
	After *int32 `json:"after,omitempty"`
	// Window is the longest gap between two isomorphic creates of one burst
	// (default 10m).
	Window *metav1.Duration `json:"window,omitempty"`
	// FlushInterval is the group-commit window of a folded series: the
	// folded creates of a series that arrive while its write is in flight
	// or within this window after it started are written together, and
	// each is answered once that write succeeded; at most one write per
	// series and window (default 1s). Values above 1s, from policies
	// written when folded counts were held in memory up to this interval,
	// are taken as 1s.
	FlushInterval *metav1.Duration `json:"flushInterval,omitempty"`
	// CacheSize is how many series are tracked at once (default 4096).
	CacheSize *int32 `json:"cacheSize,omitempty"`
}

// Series are the thresholds of event series. The defaults match client-go's
// tools/events recorder: it finishes a series once it has seen no
// occurrence for 6 minutes (finishTime) and re-sends every ongoing series
// every 30 minutes (refreshTime).
type Series struct {
	// FinishAfter: a write whose series.lastObservedTime is older than this
	// when it arrives, and that does not set series.state itself, finishes
	// the series (default 6m).
	FinishAfter *metav1.Duration `json:"finishAfter,omitempty"`
	// HeartbeatInterval is how often reporters re-send an ongoing series
	// (default 30m).
	HeartbeatInterval *metav1.Duration `json:"heartbeatInterval,omitempty"`
	// HeartbeatSlack is how late a heartbeat may be before the series is
	// considered abandoned: an Ongoing series last observed more than
	// heartbeatInterval+heartbeatSlack ago becomes Unknown (default 6m).
	HeartbeatSlack *metav1.Duration `json:"heartbeatSlack,omitempty"`
	// SweepInterval is how often the sweeper looks for abandoned series, so
	// an abandoned series is marked Unknown at most this long after it
	// crossed heartbeatInterval+heartbeatSlack (default 1m).
	SweepInterval *metav1.Duration `json:"sweepInterval,omitempty"`
	// StrictClock adds the clock rules beyond Kubernetes' own, which
	// Kubernetes' Events conformance tests break (default false): a series'
	// lastObservedTime may not be before the event's eventTime, and a write
	// that turns a singleton into a series already quiet for longer than
	// finishAfter finishes it at once.
	StrictClock bool `json:"strictClock,omitempty"`
}
