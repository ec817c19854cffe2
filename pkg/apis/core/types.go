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

package core

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Event types: the two values of Event.Type that validation accepts for
// events.k8s.io writes.
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)

// NamespaceSystem is where events about cluster-scoped objects live.
const NamespaceSystem = "kube-system"

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Event is the internal representation of an Event: every field of core/v1,
// events.k8s.io/v1beta1 and events.k8s.io/v1 has a home here, so an event
// written through one version reads back through every other.
type Event struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	// InvolvedObject is the object this event is about (events.k8s.io: regarding).
	InvolvedObject ObjectReference

	// Reason is why the action was taken, machine readable.
	Reason string

	// Message is a human readable description (events.k8s.io: note).
	Message string

	// Source is the legacy reporter (events.k8s.io: deprecatedSource).
	Source EventSource

	// FirstTimestamp is when the legacy series was first seen (1s precision).
	FirstTimestamp metav1.Time

	// LastTimestamp is when the legacy series was last seen (1s precision).
	LastTimestamp metav1.Time

	// Count is the legacy occurrence count (events.k8s.io: deprecatedCount).
	Count int32

	// Type is Normal or Warning.
	Type string

	// EventTime is when the event was first observed, with microsecond precision.
	EventTime metav1.MicroTime

	// Series is set when this event stands for a series of isomorphic events.
	Series *EventSeries

	// Action is what was taken or failed regarding InvolvedObject.
	Action string

	// Related is an optional secondary object.
	Related *ObjectReference

	// ReportingController is the controller that emitted the event
	// (core/v1: reportingComponent).
	ReportingController string

	// ReportingInstance is the ID of the controller instance.
	ReportingInstance string

	// DeprecatedHost is never stored: conversion from events.k8s.io/v1beta1
	// sets it only when the write's deprecatedHost disagrees with
	// deprecatedSource.host, so that validation can reject the write with a
	// field path instead of silently picking one of them.
	DeprecatedHost string
}

// EventSeries describes a series of isomorphic events.
type EventSeries struct {
	// Count is the number of occurrences up to the last heartbeat.
	Count int32
	// LastObservedTime is when the last occurrence was seen.
	LastObservedTime metav1.MicroTime
	// State is where the series stands: Ongoing, Finished or Unknown.
	State EventSeriesState
}

// EventSeriesState is the state of an event series.
type EventSeriesState string

// The states of an event series.
const (
	// EventSeriesStateOngoing: the reporter is still observing occurrences.
	EventSeriesStateOngoing EventSeriesState = "Ongoing"
	// EventSeriesStateFinished: the reporter saw the series end; final.
	EventSeriesStateFinished EventSeriesState = "Finished"
	// EventSeriesStateUnknown: the reporter went silent without finishing it.
	EventSeriesStateUnknown EventSeriesState = "Unknown"
)

// EventSource is the legacy description of who reported an event.
type EventSource struct {
	// Component that generated the event.
	Component string
	// Host (node name) on which the event was generated.
	Host string
}

// ObjectReference points at an object, or a piece of one, that an event is about.
type ObjectReference struct {
	Kind            string
	Namespace       string
	Name            string
	UID             types.UID
	APIVersion      string
	ResourceVersion string
	FieldPath       string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// EventList is a list of events.
type EventList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []Event
}
