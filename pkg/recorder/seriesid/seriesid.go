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

// Package seriesid is what makes two events isomorphic, occurrences of one
// series: the one definition that the server's validation, its folding of
// creates and the recorder share. It lives in the recorder's module, which
// the server's module imports and which imports nothing of the server, so
// that a controller that imports the recorder gets it without the server.
package seriesid

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
)

// Reference is an object reference as the identity compares it: every
// field, as client-go's recorder compares them.
type Reference struct {
	Kind, Namespace, Name, UID, APIVersion, ResourceVersion, FieldPath string
}

// Key is the identity of a series: events with equal keys are isomorphic.
// A Related that is the zero Reference is no related object. The reporting
// host (source.host) is not part of it: the instance names the reporter.
type Key struct {
	Namespace            string
	Regarding, Related   Reference
	Action, Reason, Type string
	// ReportingController is the effective one (see ReportingController).
	ReportingController string
	ReportingInstance   string
}

// ReportingController is the effective reporting controller of an event:
// its own, or for a legacy event that carries only source.component, that
// component, as events.k8s.io shows it.
func ReportingController(reportingController, sourceComponent string) string {
	if reportingController != "" {
		return reportingController
	}
	return sourceComponent
}

// OfEventsV1 is the key of an events.k8s.io/v1 event.
func OfEventsV1(e *eventsv1.Event) Key {
	key := Key{
		Namespace: e.Namespace,
		Regarding: FromObjectReference(e.Regarding),
		Action:    e.Action,
		Reason:    e.Reason,
		Type:      e.Type,

		ReportingController: ReportingController(e.ReportingController, e.DeprecatedSource.Component),
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Related != nil {
		key.Related = FromObjectReference(*e.Related)
	}
	return key
}

// FromObjectReference is the Reference of a core/v1 object reference.
func FromObjectReference(ref corev1.ObjectReference) Reference {
	return Reference{
		Kind:            ref.Kind,
		Namespace:       ref.Namespace,
		Name:            ref.Name,
		UID:             string(ref.UID),
		APIVersion:      ref.APIVersion,
		ResourceVersion: ref.ResourceVersion,
		FieldPath:       ref.FieldPath,
	}
}
