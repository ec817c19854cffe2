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

package summaries

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// EventSummary counts the events of one namespace that share a type, a
// reason, the kind of the object they regard and a reporting controller.
type EventSummary struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	// Type, Reason, RegardingKind and ReportingController are what the
	// counted events share.
	Type                string
	Reason              string
	RegardingKind       string
	ReportingController string

	// Occurrences is how many occurrences the events stand for: a series
	// counts its series.count, an event its count, at least 1.
	Occurrences int64
	// Events is how many events were counted.
	Events int64
	// Objects is how many distinct objects the events regard.
	Objects int64
	// FirstObserved is the earliest first observation of the events.
	FirstObserved metav1.MicroTime
	// LastObserved is the latest last observation of the events.
	LastObserved metav1.MicroTime
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// EventSummaryList is a list of event summaries, most occurrences first.
type EventSummaryList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []EventSummary
}
