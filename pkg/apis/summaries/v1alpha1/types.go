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

// +genclient
// +genclient:onlyVerbs=list
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// EventSummary counts the events of one namespace that share a type, a
// reason, the kind of the object they regard and a reporting controller,
// among the events a list of events with the same field and label
// selectors returns (with history.since, the history's).
type EventSummary struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object's metadata: the namespace of the
	// counted events, and a name that stands for the four fields below.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// type of the counted events: Normal or Warning.
	// +optional
	Type string `json:"type,omitempty"`

	// reason of the counted events.
	// +optional
	Reason string `json:"reason,omitempty"`

	// regardingKind is the kind of the objects the counted events regard
	// (core/v1: involvedObject.kind).
	// +optional
	RegardingKind string `json:"regardingKind,omitempty"`

	// reportingController of the counted events (core/v1: reportingComponent,
	// else source.component).
	// +optional
	ReportingController string `json:"reportingController,omitempty"`

	// occurrences is how many occurrences the counted events stand for: an
	// event with a series counts series.count, another its count
	// (events.k8s.io: deprecatedCount), each at least 1.
	Occurrences int64 `json:"occurrences"`

	// events is how many events were counted.
	Events int64 `json:"events"`

	// objects is how many distinct objects the counted events regard.
	Objects int64 `json:"objects"`

	// firstObserved is the earliest first observation of the counted events.
	FirstObserved metav1.MicroTime `json:"firstObserved"`

	// lastObserved is the latest last observation of the counted events
	// (series.lastObservedTime, else lastTimestamp, else eventTime).
	LastObserved metav1.MicroTime `json:"lastObserved"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// EventSummaryList is a list of event summaries, most occurrences first.
type EventSummaryList struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the summaries, most occurrences first.
	Items []EventSummary `json:"items"`
}
