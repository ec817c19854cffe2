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

package eventpolicy

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// EventPolicy is the event policy, defaulted and validated.
type EventPolicy struct {
	metav1.TypeMeta

	// Limits are the token buckets every event create and update takes a
	// token from (the EventRateLimit admission plugin). Empty: no limit.
	Limits []Limit
	// Folding is the folding of isomorphic creates, which the store does.
	Folding Folding
	// Series are the thresholds of event series, which the EventSeries
	// admission plugin and the series controllers apply.
	Series Series
	// Export selects what the OTLP export of the archive sends.
	Export Export
}

// Export selects the archived event states the OTLP export sends: those
// whose namespace, type, reason and reporting controller are each in its
// list (an empty list takes every value) and whose namespace is not
// excluded, within NamespaceRate.
type Export struct {
	Namespaces           []string
	ExcludedNamespaces   []string
	Types                []string
	Reasons              []string
	ReportingControllers []string
	// NamespaceRate bounds the states of one namespace exported, by the
	// events' own time, so that one storm cannot flood the pipeline. A QPS
	// of 0 is no bound.
	NamespaceRate ExportRate
}

// ExportRate is a token bucket: QPS tokens a second, Burst at most.
type ExportRate struct {
	QPS   float64
	Burst int32
}

// LimitType is what a limit keeps a token bucket for.
type LimitType string

const (
	// Reporter: one bucket per reporter, that is per authenticated user and,
	// within it, per reportingController and reportingInstance (for legacy
	// events: source.component and source.host).
	Reporter LimitType = "Reporter"
	// Namespace: one bucket per namespace.
	Namespace LimitType = "Namespace"
	// Object: one bucket per regarding object (core/v1: involvedObject).
	Object LimitType = "Object"
)

// LimitTypes are the known limit types, in the order the plugin checks
// them: the most specific first, so that a reporter over its own budget is
// refused before it takes tokens from the budgets it shares with others.
var LimitTypes = []LimitType{Reporter, Object, Namespace}

// Limit is one limit type's token buckets.
type Limit struct {
	// Type is Reporter, Namespace or Object.
	Type LimitType
	// QPS is how many writes per second a bucket refills.
	QPS float64
	// Burst is the bucket's size: writes allowed at once after a quiet time.
	Burst int32
	// CacheSize is how many buckets of this type are kept; the least
	// recently used are forgotten (and start full again).
	CacheSize int32
}

// Folding says when isomorphic creates are folded into the live event of
// their series instead of being stored as new events.
type Folding struct {
	// Enabled turns folding on.
	Enabled bool
	// After is how many isomorphic creates, each arriving within Window of
	// the previous one, are stored as events of their own; the ones after
	// them are folded into the last one stored.
	After int32
	// Window is the longest gap between two isomorphic creates for them to
	// count as one burst. A longer gap starts over.
	Window metav1.Duration
	// FlushInterval is the group-commit window of a folded series: the
	// folded creates that arrive while a write of the series is in flight
	// or within this window after it started are written together, at most
	// one write per window. Values above MaxFoldFlushInterval are taken as
	// it.
	FlushInterval metav1.Duration
	// CacheSize is how many series are tracked at once (least recently used
	// ones have their waiting creates written at once and are forgotten).
	CacheSize int32
}

// MaxFoldFlushInterval is the longest group-commit window of folding: a
// folded create is answered once the write that holds it succeeded, so the
// window is what a storming reporter waits, at most, beyond that write.
// Policies written when the flush interval bounded writes held in memory
// (10s by default, any length) still load; their flushInterval is taken as
// this.
const MaxFoldFlushInterval = time.Second

// Series are the thresholds of event series.
type Series struct {
	// FinishAfter: a write whose series.lastObservedTime is older than this
	// when it arrives, and that does not set series.state itself, finishes
	// the series.
	FinishAfter metav1.Duration
	// HeartbeatInterval is how often reporters re-send an ongoing series.
	HeartbeatInterval metav1.Duration
	// HeartbeatSlack is how late a heartbeat may be before the series is
	// considered abandoned.
	HeartbeatSlack metav1.Duration
	// SweepInterval is how often the sweeper looks for abandoned series.
	SweepInterval metav1.Duration
	// StrictClock adds the clock rules beyond Kubernetes' own, which
	// Kubernetes' Events conformance tests break: a series' lastObservedTime
	// may not be before the event's eventTime, and a write that turns a
	// singleton into a series already quiet for longer than FinishAfter
	// finishes it at once. Off, such a series is Ongoing.
	StrictClock bool
}
