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

package validation

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/recorder/seriesid"
)

// The series state machine, which every write meets whoever makes it (a
// client through any version, the mirror, the series controllers): what
// does not depend on the clock or on configuration. When a series becomes
// Unknown, and which state a write that chose none gets, are the event
// policy's rules (pkg/apis/eventpolicy), which the EventSeries admission
// plugin and the series controllers apply.

// Error details of the series rules.
const (
	// FinishedIsFinalDetail ends every refusal to change a Finished series.
	FinishedIsFinalDetail = "a Finished series is final; report a new occurrence as a new event"
	// SeriesIdentityDetail refuses a change to what makes events of a series
	// isomorphic.
	SeriesIdentityDetail = "field is immutable: it is part of the event series' identity (regarding, related, action, reason, reportingController, reportingInstance, type); report a different occurrence as a new event"
)

var (
	seriesPath             = field.NewPath("series")
	seriesCountPath        = seriesPath.Child("count")
	seriesLastObservedPath = seriesPath.Child("lastObservedTime")
	seriesStatePath        = seriesPath.Child("state")
)

// EffectiveSeriesState reads an unset state as Ongoing: series stored
// before states existed, or by a writer that knows none, until they get one.
func EffectiveSeriesState(state core.EventSeriesState) core.EventSeriesState {
	if state == "" {
		return core.EventSeriesStateOngoing
	}
	return state
}

// validateSeriesUpdate checks an update against the series rules: a series
// is never removed; its count never decreases and its lastObservedTime
// never moves backwards; a Finished series is final; and (core/v1, whose
// update rules do not otherwise hold the identity) what makes its events
// isomorphic never changes.
func validateSeriesUpdate(newEvent, oldEvent *core.Event, r rules) field.ErrorList {
	newSeries, oldSeries := newEvent.Series, oldEvent.Series
	if newSeries == nil && oldSeries == nil {
		return nil
	}
	var allErrs field.ErrorList
	if !r.strict {
		allErrs = append(allErrs, validateSeriesIdentity(newEvent, oldEvent, r)...)
	}
	if newSeries == nil {
		return append(allErrs, field.Required(seriesPath, fmt.Sprintf(
			"may not be removed from an event series (was count %d, state %s)", oldSeries.Count, EffectiveSeriesState(oldSeries.State))))
	}
	if !isKnownSeriesState(newSeries.State) {
		return allErrs // validateSeriesState names it
	}
	if oldSeries == nil || newSeries.Count != oldSeries.Count || !sameMicro(newSeries.LastObservedTime, oldSeries.LastObservedTime) {
		allErrs = append(allErrs, validateSeriesContent(newEvent, r)...)
	}
	if oldSeries == nil {
		return allErrs
	}
	return append(allErrs, validateSeriesTransition(newSeries, oldSeries)...)
}

// validateSeriesContent checks what every written series carries: at least
// two occurrences, and when the last one was observed. That it was not
// observed before eventTime is the event policy's strict clock (the
// EventSeries admission plugin): Kubernetes does not require it, and its
// conformance tests write series that break it.
func validateSeriesContent(event *core.Event, r rules) field.ErrorList {
	series := event.Series
	if series == nil {
		return nil
	}
	var allErrs field.ErrorList
	if series.Count < 2 {
		allErrs = append(allErrs, field.Invalid(seriesCountPath, series.Count, r.seriesCountDetail))
	}
	if series.LastObservedTime.IsZero() {
		allErrs = append(allErrs, field.Required(seriesLastObservedPath, r.lastObservedRequiredDetail))
	}
	return allErrs
}

// validateSeriesTransition checks an update of an existing series: Ongoing
// may become Finished or Unknown (when, is admission's business); Unknown
// may become Ongoing (its reporter is back) or Finished; Finished is final.
func validateSeriesTransition(newSeries, oldSeries *core.EventSeries) field.ErrorList {
	var allErrs field.ErrorList
	movedBack := micro(newSeries.LastObservedTime).Before(micro(oldSeries.LastObservedTime))
	if newSeries.Count < oldSeries.Count {
		allErrs = append(allErrs, field.Invalid(seriesCountPath, newSeries.Count, fmt.Sprintf("may not decrease (was %d)", oldSeries.Count)))
	}
	if movedBack {
		allErrs = append(allErrs, field.Invalid(seriesLastObservedPath, formatMicro(newSeries.LastObservedTime),
			fmt.Sprintf("may not move backwards (was %s)", formatMicro(oldSeries.LastObservedTime))))
	}
	if EffectiveSeriesState(oldSeries.State) != core.EventSeriesStateFinished {
		return allErrs
	}
	if newState := EffectiveSeriesState(newSeries.State); newState != core.EventSeriesStateFinished {
		allErrs = append(allErrs, field.Invalid(seriesStatePath, string(newState), "may not change once the series is Finished: "+FinishedIsFinalDetail))
	}
	if newSeries.Count > oldSeries.Count {
		allErrs = append(allErrs, field.Invalid(seriesCountPath, newSeries.Count,
			fmt.Sprintf("may not change once the series is Finished (was %d): %s", oldSeries.Count, FinishedIsFinalDetail)))
	}
	if !movedBack && !sameMicro(newSeries.LastObservedTime, oldSeries.LastObservedTime) {
		allErrs = append(allErrs, field.Invalid(seriesLastObservedPath, formatMicro(newSeries.LastObservedTime),
			fmt.Sprintf("may not change once the series is Finished (was %s): %s", formatMicro(oldSeries.LastObservedTime), FinishedIsFinalDetail)))
	}
	return allErrs
}

// SeriesKey is the identity of event's series (see seriesid.Key): the one
// that validation, folding and the recorder share.
func SeriesKey(event *core.Event) seriesid.Key {
	key := seriesid.Key{
		Namespace:           event.Namespace,
		Regarding:           seriesReference(event.InvolvedObject),
		Action:              event.Action,
		Reason:              event.Reason,
		Type:                event.Type,
		ReportingController: seriesid.ReportingController(event.ReportingController, event.Source.Component),
		ReportingInstance:   event.ReportingInstance,
	}
	if event.Related != nil {
		key.Related = seriesReference(*event.Related)
	}
	return key
}

func seriesReference(ref core.ObjectReference) seriesid.Reference {
	return seriesid.Reference{
		Kind:            ref.Kind,
		Namespace:       ref.Namespace,
		Name:            ref.Name,
		UID:             string(ref.UID),
		APIVersion:      ref.APIVersion,
		ResourceVersion: ref.ResourceVersion,
		FieldPath:       ref.FieldPath,
	}
}

// validateSeriesIdentity refuses changes to what makes events isomorphic
// (SeriesKey), naming the fields as r's version does.
func validateSeriesIdentity(newEvent, oldEvent *core.Event, r rules) field.ErrorList {
	newKey, oldKey := SeriesKey(newEvent), SeriesKey(oldEvent)
	if newKey == oldKey {
		return nil
	}
	allErrs := validateReferenceIdentity(newKey.Regarding, oldKey.Regarding, r.regarding)

	relatedPath := field.NewPath("related")
	switch {
	case newKey.Related == oldKey.Related:
	case newKey.Related == seriesid.Reference{}:
		allErrs = append(allErrs, field.Required(relatedPath, "may not be removed: "+SeriesIdentityDetail))
	case oldKey.Related == seriesid.Reference{}:
		allErrs = append(allErrs, field.Forbidden(relatedPath, "may not be added: "+SeriesIdentityDetail))
	default:
		allErrs = append(allErrs, validateReferenceIdentity(newKey.Related, oldKey.Related, relatedPath)...)
	}

	// The effective reporting controller is named by the field it comes
	// from: the event's own, or the legacy source component.
	reportingControllerPath := r.reportingController
	if newEvent.ReportingController == "" && newEvent.Source.Component != "" {
		reportingControllerPath = r.source.Child("component")
	}
	for _, f := range []struct {
		path     *field.Path
		new, old string
	}{
		{field.NewPath("metadata", "namespace"), newKey.Namespace, oldKey.Namespace},
		{field.NewPath("action"), newKey.Action, oldKey.Action},
		{field.NewPath("reason"), newKey.Reason, oldKey.Reason},
		{reportingControllerPath, newKey.ReportingController, oldKey.ReportingController},
		{field.NewPath("reportingInstance"), newKey.ReportingInstance, oldKey.ReportingInstance},
		{field.NewPath("type"), newKey.Type, oldKey.Type},
	} {
		if f.new != f.old {
			allErrs = append(allErrs, field.Invalid(f.path, f.new, SeriesIdentityDetail))
		}
	}
	return allErrs
}

func validateReferenceIdentity(newRef, oldRef seriesid.Reference, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, f := range []struct {
		name     string
		new, old string
	}{
		{"kind", newRef.Kind, oldRef.Kind},
		{"namespace", newRef.Namespace, oldRef.Namespace},
		{"name", newRef.Name, oldRef.Name},
		{"uid", newRef.UID, oldRef.UID},
		{"apiVersion", newRef.APIVersion, oldRef.APIVersion},
		{"resourceVersion", newRef.ResourceVersion, oldRef.ResourceVersion},
		{"fieldPath", newRef.FieldPath, oldRef.FieldPath},
	} {
		if f.new != f.old {
			allErrs = append(allErrs, field.Invalid(path.Child(f.name), f.new, SeriesIdentityDetail))
		}
	}
	return allErrs
}

// isKnownSeriesState tells whether state is unset or one of the states.
func isKnownSeriesState(state core.EventSeriesState) bool {
	switch state {
	case "", core.EventSeriesStateOngoing, core.EventSeriesStateFinished, core.EventSeriesStateUnknown:
		return true
	}
	return false
}

// micro drops what MicroTime does not serialize, so that a value that went
// through JSON compares equal to one that did not.
func micro(t metav1.MicroTime) time.Time {
	return t.Truncate(time.Microsecond)
}

func sameMicro(a, b metav1.MicroTime) bool {
	return micro(a).Equal(micro(b))
}

func formatMicro(t metav1.MicroTime) string {
	return t.UTC().Format(metav1.RFC3339Micro)
}
