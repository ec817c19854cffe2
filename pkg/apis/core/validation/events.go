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

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	eventsv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	eventsv1beta1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1beta1"
	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
)

// Length limits of the free-form event fields, in bytes, as kube-apiserver
// enforces them.
const (
	ReportingInstanceLengthLimit = 128
	ActionLengthLimit            = 128
	ReasonLengthLimit            = 128
	NoteLengthLimit              = 1024
)

// Error details that clients may want to match on.
const (
	// DeprecatedHostConflictDetail rejects a v1beta1 write whose deprecatedHost
	// and deprecatedSource.host disagree.
	DeprecatedHostConflictDetail = "must equal deprecatedSource.host when both are set"
	// MustBeUnsetOnCreateDetail rejects deprecated fields on events.k8s.io creates.
	MustBeUnsetOnCreateDetail = "needs to be unset when creating an event through events.k8s.io"
	// SeriesCountDetail rejects a series of fewer than two occurrences.
	SeriesCountDetail = "must be at least 2: a series stands for two or more occurrences"
)

// deprecatedHostPath is where the v1beta1-only deprecatedHost lives.
var deprecatedHostPath = field.NewPath("deprecatedHost")

// supportedEventTypes are the values of type that events.k8s.io accepts.
var supportedEventTypes = []string{core.EventTypeNormal, core.EventTypeWarning}

// supportedSeriesStates are the values of series.state, in every version.
var supportedSeriesStates = []core.EventSeriesState{
	core.EventSeriesStateOngoing, core.EventSeriesStateFinished, core.EventSeriesStateUnknown,
}

// rules is what a write is checked against: whether the strict
// events.k8s.io rules apply, and the names its version gives the fields
// whose names differ between core/v1 and events.k8s.io.
type rules struct {
	strict bool

	regarding           *field.Path
	note                *field.Path
	source              *field.Path
	firstTimestamp      *field.Path
	lastTimestamp       *field.Path
	count               *field.Path
	reportingController *field.Path
	// sourceUnsetDetail explains why the source may not be set on create.
	sourceUnsetDetail string
	// seriesCountDetail and lastObservedRequiredDetail explain the series
	// content rules, in the words each version has always used.
	seriesCountDetail          string
	lastObservedRequiredDetail string
}

// newRules returns the rules of a version with the given field names.
func newRules(strict bool, names eventconversion.FieldNames) rules {
	r := rules{
		strict:                     strict,
		regarding:                  field.NewPath(names.Regarding),
		note:                       field.NewPath(names.Note),
		source:                     field.NewPath(names.Source),
		firstTimestamp:             field.NewPath(names.FirstTimestamp),
		lastTimestamp:              field.NewPath(names.LastTimestamp),
		count:                      field.NewPath(names.Count),
		reportingController:        field.NewPath(names.ReportingController),
		seriesCountDetail:          SeriesCountDetail,
		lastObservedRequiredDetail: "the time the last occurrence of the series was observed",
	}
	if strict {
		r.sourceUnsetDetail = MustBeUnsetOnCreateDetail
	} else {
		r.seriesCountDetail = "must be at least 2: an event observed once is a singleton and has no series"
		r.lastObservedRequiredDetail = "a series must say when it was last observed"
	}
	return r
}

var (
	coreV1Rules        = newRules(false, eventconversion.CoreV1FieldNames)
	eventsV1Rules      = newRules(true, eventconversion.EventsFieldNames)
	eventsV1beta1Rules = func() rules {
		r := eventsV1Rules
		r.sourceUnsetDetail = MustBeUnsetOnCreateDetail + " (deprecatedHost included)"
		return r
	}()
)

// rulesFor returns the rules for a write through requestVersion. Only core/v1
// writes get the legacy rules; events.k8s.io and any version this server does
// not know (such as a call without request info) get the strict ones.
func rulesFor(requestVersion schema.GroupVersion) rules {
	switch requestVersion {
	case corev1.SchemeGroupVersion:
		return coreV1Rules
	case eventsv1beta1.SchemeGroupVersion:
		return eventsV1beta1Rules
	case eventsv1.SchemeGroupVersion:
		return eventsV1Rules
	default:
		return eventsV1Rules
	}
}

// ValidateEventCreate validates a new event written through requestVersion.
func ValidateEventCreate(event *core.Event, requestVersion schema.GroupVersion) field.ErrorList {
	r := rulesFor(requestVersion)
	if !r.strict {
		return append(validateLegacyEvent(event, r), validateSeriesContent(event, r)...)
	}

	allErrs := apimachineryvalidation.ValidateObjectMeta(&event.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateEventNamespace(event, r)...)
	if event.EventTime.IsZero() {
		allErrs = append(allErrs, field.Required(field.NewPath("eventTime"), "the time the event was first observed"))
	}
	allErrs = append(allErrs, validateReportingFields(event, r)...)
	allErrs = append(allErrs, validateEventType(event.Type)...)
	allErrs = append(allErrs, validateSeriesState(event.Series)...)
	allErrs = append(allErrs, validateSeriesContent(event, r)...)
	allErrs = append(allErrs, validateDeprecatedHost(event)...)

	// The deprecated fields belong to core/v1 writers; events.k8s.io writers
	// describe occurrences with eventTime and series.
	if !event.FirstTimestamp.IsZero() {
		allErrs = append(allErrs, field.Invalid(r.firstTimestamp, event.FirstTimestamp, MustBeUnsetOnCreateDetail))
	}
	if !event.LastTimestamp.IsZero() {
		allErrs = append(allErrs, field.Invalid(r.lastTimestamp, event.LastTimestamp, MustBeUnsetOnCreateDetail))
	}
	if event.Count != 0 {
		allErrs = append(allErrs, field.Invalid(r.count, event.Count, MustBeUnsetOnCreateDetail))
	}
	if event.Source != (core.EventSource{}) {
		allErrs = append(allErrs, field.Invalid(r.source, event.Source, r.sourceUnsetDetail))
	}
	return allErrs
}

// ValidateEventUpdate validates an update of oldEvent to newEvent written
// through requestVersion. Every update must leave a valid legacy event and
// meet the series rules (series.go); events.k8s.io updates may moreover only
// advance the series (and metadata): what identifies the event and what it
// reported stays as it was.
func ValidateEventUpdate(newEvent, oldEvent *core.Event, requestVersion schema.GroupVersion) field.ErrorList {
	r := rulesFor(requestVersion)
	allErrs := validateLegacyEvent(newEvent, r)
	allErrs = append(allErrs, validateSeriesUpdate(newEvent, oldEvent, r)...)
	if !r.strict {
		return allErrs
	}

	allErrs = append(allErrs, apimachineryvalidation.ValidateObjectMetaUpdate(&newEvent.ObjectMeta, &oldEvent.ObjectMeta, field.NewPath("metadata"))...)

	immutable := func(newVal, oldVal any, path *field.Path) {
		allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(newVal, oldVal, path)...)
	}
	// What makes events isomorphic: an update changing any of these would
	// make the event stand for a different series.
	immutable(newEvent.InvolvedObject, oldEvent.InvolvedObject, r.regarding)
	immutable(newEvent.Related, oldEvent.Related, field.NewPath("related"))
	immutable(newEvent.Action, oldEvent.Action, field.NewPath("action"))
	immutable(newEvent.Reason, oldEvent.Reason, field.NewPath("reason"))
	// Compare what events.k8s.io clients read back, which falls back to
	// source.component for legacy events without a reporting controller.
	immutable(effectiveReportingController(newEvent), effectiveReportingController(oldEvent), r.reportingController)
	immutable(newEvent.ReportingInstance, oldEvent.ReportingInstance, field.NewPath("reportingInstance"))
	immutable(newEvent.Type, oldEvent.Type, field.NewPath("type"))
	// What was reported, as kube-apiserver keeps it.
	immutable(newEvent.Message, oldEvent.Message, r.note)
	immutable(newEvent.Source, oldEvent.Source, r.source)
	immutable(newEvent.FirstTimestamp, oldEvent.FirstTimestamp, r.firstTimestamp)
	immutable(newEvent.LastTimestamp, oldEvent.LastTimestamp, r.lastTimestamp)
	immutable(newEvent.Count, oldEvent.Count, r.count)
	// eventTime is serialized with microsecond precision, so a change below a
	// microsecond is what a correct client's round trip of a
	// nanosecond-precision value looks like, not a change.
	if !newEvent.EventTime.Truncate(time.Microsecond).Equal(oldEvent.EventTime.Truncate(time.Microsecond)) {
		immutable(newEvent.EventTime, oldEvent.EventTime, field.NewPath("eventTime"))
	}
	return allErrs
}

// validateLegacyEvent holds every event, whatever its version, to the rules
// kube-apiserver applies to core/v1 writes: the namespace must fit what the
// event is about, and an event with an eventTime (a "new" event) must name
// its reporter, action and reason. On top of upstream: a series state must be
// known, and a v1beta1 host conflict is rejected.
func validateLegacyEvent(event *core.Event, r rules) field.ErrorList {
	allErrs := validateEventNamespace(event, r)
	if !event.EventTime.IsZero() {
		allErrs = append(allErrs, validateReportingFields(event, r)...)
	}
	allErrs = append(allErrs, validateSeriesState(event.Series)...)
	allErrs = append(allErrs, validateDeprecatedHost(event)...)
	return allErrs
}

// validateEventNamespace checks the event's namespace against the namespace
// of the object it is about, as kube-apiserver does. Events without an
// eventTime (legacy) about a namespaced object must be in its namespace, and
// about a cluster-scoped object in "default" (or no namespace). Events with an
// eventTime about a cluster-scoped object may be in "default" or
// "kube-system"; their namespace is otherwise not compared.
func validateEventNamespace(event *core.Event, r rules) field.ErrorList {
	path := r.regarding.Child("namespace")
	regardingNamespace := event.InvolvedObject.Namespace
	if event.EventTime.IsZero() {
		switch {
		case regardingNamespace == "" && event.Namespace != metav1.NamespaceNone && event.Namespace != metav1.NamespaceDefault:
			return field.ErrorList{field.Invalid(path, regardingNamespace, fmt.Sprintf(
				"does not match metadata.namespace %q: an event about a cluster-scoped object must be in namespace %q",
				event.Namespace, metav1.NamespaceDefault))}
		case regardingNamespace != "" && event.Namespace != regardingNamespace:
			return field.ErrorList{field.Invalid(path, regardingNamespace, fmt.Sprintf(
				"does not match metadata.namespace %q", event.Namespace))}
		}
		return nil
	}
	if regardingNamespace == "" && event.Namespace != metav1.NamespaceDefault && event.Namespace != metav1.NamespaceSystem {
		return field.ErrorList{field.Invalid(path, regardingNamespace, fmt.Sprintf(
			"does not match metadata.namespace %q: an event about a cluster-scoped object must be in namespace %q or %q",
			event.Namespace, metav1.NamespaceDefault, metav1.NamespaceSystem))}
	}
	return nil
}

// validateReportingFields checks the fields that say who reported what:
// reportingController (a qualified name), reportingInstance, action and
// reason are required and bounded, the note is bounded.
func validateReportingFields(event *core.Event, r rules) field.ErrorList {
	var allErrs field.ErrorList
	if event.ReportingController == "" {
		allErrs = append(allErrs, field.Required(r.reportingController, "the name of the controller that emitted the event, e.g. kubernetes.io/kubelet"))
	} else {
		for _, msg := range utilvalidation.IsQualifiedName(event.ReportingController) {
			allErrs = append(allErrs, field.Invalid(r.reportingController, event.ReportingController, msg))
		}
	}
	allErrs = append(allErrs, requiredBounded(event.ReportingInstance, ReportingInstanceLengthLimit, field.NewPath("reportingInstance"), "the ID of the controller instance, e.g. kubelet-xyzf")...)
	allErrs = append(allErrs, requiredBounded(event.Action, ActionLengthLimit, field.NewPath("action"), "what action was taken or failed")...)
	allErrs = append(allErrs, requiredBounded(event.Reason, ReasonLengthLimit, field.NewPath("reason"), "why the action was taken")...)
	if len(event.Message) > NoteLengthLimit {
		allErrs = append(allErrs, field.TooLong(r.note, "", NoteLengthLimit))
	}
	return allErrs
}

// requiredBounded checks that value is set and at most limit bytes long.
func requiredBounded(value string, limit int, path *field.Path, what string) field.ErrorList {
	switch {
	case value == "":
		return field.ErrorList{field.Required(path, what)}
	case len(value) > limit:
		return field.ErrorList{field.TooLong(path, "", limit)}
	}
	return nil
}

// validateEventType checks that type is Normal or Warning.
func validateEventType(eventType string) field.ErrorList {
	path := field.NewPath("type")
	switch eventType {
	case core.EventTypeNormal, core.EventTypeWarning:
		return nil
	case "":
		return field.ErrorList{field.Required(path, fmt.Sprintf("must be %q or %q", core.EventTypeNormal, core.EventTypeWarning))}
	}
	return field.ErrorList{field.NotSupported(path, eventType, supportedEventTypes)}
}

// validateSeriesState checks that a series' state, when set, is one of the
// known states. An empty state is left for admission (or, for writes that
// bypass it, the series-state controller) to set.
func validateSeriesState(series *core.EventSeries) field.ErrorList {
	if series == nil || series.State == "" {
		return nil
	}
	for _, state := range supportedSeriesStates {
		if series.State == state {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(field.NewPath("series", "state"), string(series.State), supportedSeriesStates)}
}

// validateDeprecatedHost rejects a v1beta1 write whose deprecatedHost
// disagrees with deprecatedSource.host; conversion sets DeprecatedHost only
// in that case.
func validateDeprecatedHost(event *core.Event) field.ErrorList {
	if event.DeprecatedHost == "" {
		return nil
	}
	return field.ErrorList{field.Invalid(deprecatedHostPath, event.DeprecatedHost, DeprecatedHostConflictDetail)}
}

// effectiveReportingController is what events.k8s.io shows as
// reportingController: the event's own, or its legacy source.component.
func effectiveReportingController(event *core.Event) string {
	return eventconversion.ReportingController(event.ReportingController, event.Source.Component)
}
