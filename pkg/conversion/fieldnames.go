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

package conversion

// FieldNames are the names that a served version gives the event fields
// core/v1 and events.k8s.io name differently: its field selector labels
// (FieldLabels) and the field paths of its validation errors are built
// from them, so that a client reads every name in its own version.
type FieldNames struct {
	// Regarding is the object the event is about: involvedObject, regarding.
	Regarding string
	// Note is the human-readable description: message, note.
	Note string
	// Source is the legacy reporter: source, deprecatedSource.
	Source string
	// FirstTimestamp, LastTimestamp and Count are the legacy occurrence
	// fields; events.k8s.io deprecated them.
	FirstTimestamp string
	LastTimestamp  string
	Count          string
	// ReportingController is the reporter: reportingComponent, reportingController.
	ReportingController string
}

// The names of core/v1 (the legacy ones) and of events.k8s.io (v1beta1 and v1).
var (
	CoreV1FieldNames = FieldNames{
		Regarding:           "involvedObject",
		Note:                "message",
		Source:              "source",
		FirstTimestamp:      "firstTimestamp",
		LastTimestamp:       "lastTimestamp",
		Count:               "count",
		ReportingController: "reportingComponent",
	}
	EventsFieldNames = FieldNames{
		Regarding:           "regarding",
		Note:                "note",
		Source:              "deprecatedSource",
		FirstTimestamp:      "deprecatedFirstTimestamp",
		LastTimestamp:       "deprecatedLastTimestamp",
		Count:               "deprecatedCount",
		ReportingController: "reportingController",
	}
)
