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

package storedevent

import (
	"k8s.io/apimachinery/pkg/fields"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
)

// FieldStatelessSeries selects the series stored without a state ("true";
// "" for every other event), for the series-state controller to list and
// watch those alone instead of every event without a state, singletons
// included. No served version accepts it (their field label conversions
// refuse labels they do not map), so it changes no user's selector; it is
// for in-process callers of the store.
const FieldStatelessSeries = "series.stateless"

// IsStatelessSeries tells whether event is a series stored without a
// state: what FieldStatelessSeries selects.
func IsStatelessSeries(event *core.Event) bool {
	return event.Series != nil && event.Series.State == ""
}

// SelectableLabels are the canonical labels of the selectable fields, in
// the order of AppendSelectableValues. Read only.
var SelectableLabels = func() []string {
	labels := []string{eventconversion.FieldName, eventconversion.FieldNamespace}
	for _, prefix := range []string{eventconversion.PrefixInvolvedObject, eventconversion.PrefixRelated} {
		for _, f := range eventconversion.ObjectReferenceFields {
			labels = append(labels, prefix+f)
		}
	}
	return append(labels, eventconversion.FieldReason, eventconversion.FieldAction, eventconversion.FieldSource,
		eventconversion.FieldReportingComponent, eventconversion.FieldReportingInstance, eventconversion.FieldType,
		eventconversion.FieldSeriesState, FieldStatelessSeries, eventconversion.FieldAncestor)
}()

// AppendSelectableValues appends the values of an event's selectable
// fields to values, in the order of SelectableLabels ("" for an unset
// field).
func AppendSelectableValues(values []string, event *core.Event) []string {
	values = append(values, event.Name, event.Namespace)
	values = appendReference(values, &event.InvolvedObject)
	related := event.Related
	if related == nil {
		related = &core.ObjectReference{}
	}
	values = appendReference(values, related)

	seriesState, stateless := "", ""
	if event.Series != nil {
		seriesState = string(event.Series.State)
	}
	if IsStatelessSeries(event) {
		stateless = "true"
	}
	// source is the legacy reporter, falling back to the new one, and
	// reportingComponent the new one, falling back to the legacy one, so
	// that either selects events written through either API.
	source := event.Source.Component
	if source == "" {
		source = event.ReportingController
	}
	return append(values, event.Reason, event.Action, source,
		eventconversion.ReportingController(event.ReportingController, event.Source.Component),
		event.ReportingInstance, event.Type, seriesState, stateless, event.Annotations[ownerchain.Annotation])
}

// appendReference appends the values of eventconversion.ObjectReferenceFields.
func appendReference(values []string, ref *core.ObjectReference) []string {
	return append(values, ref.Kind, ref.Namespace, ref.Name, string(ref.UID), ref.APIVersion, ref.ResourceVersion, ref.FieldPath)
}

// SelectableFields returns the selectable fields of an event under their
// canonical (core/v1) labels as a plain set: what the store's packed sets
// read as, and what the archive keeps beside each state of an event, so
// that a history query selects exactly as the live store does; see
// pkg/conversion for how each served version names them. It holds only the fields that are set: fields.Set
// reads an absent label as "", so an unset field selects exactly as an
// empty one would (related.name= matches events without a related object).
func SelectableFields(event *core.Event) fields.Set {
	set := fields.Set{}
	for i, value := range AppendSelectableValues(nil, event) {
		if value != "" {
			set[SelectableLabels[i]] = value
		}
	}
	return set
}
