package eventseries

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/events"
	"github.com/kube-events/events-apiserver/pkg/conversion"
)

var (
	seriesPath           = field.NewPath("series")
	seriesCountPath      = seriesPath.Child("count")
	seriesLastObserved   = seriesPath.Child("lastObservedTime")
	seriesStatePath      = seriesPath.Child("state")
	eventSeriesStates    = []string{string(core.EventSeriesStateOngoing), string(core.EventSeriesStateFinished), string(core.EventSeriesStateUnknown)}
	finalStateDetailTail = "a Finished series is final; report a new occurrence as a new event"
	identityDetail       = "field is immutable: it is part of the event series' identity (regarding, related, action, reason, reportingController, reportingInstance, type); report a different occurrence as a new event"
)

// fieldNames are the field paths that differ between the request's API
// group: core/v1 keeps the legacy names, events.k8s.io renamed them.
type fieldNames struct {
	regarding           *field.Path
	reportingController *field.Path
	sourceComponent     *field.Path
}

func fieldNamesFor(group string) fieldNames {
	if group == events.GroupName {
		return fieldNames{
			regarding:           field.NewPath("regarding"),
			reportingController: field.NewPath("reportingController"),
			sourceComponent:     field.NewPath("deprecatedSource", "component"),
		}
	}
	return fieldNames{
		regarding:           field.NewPath("involvedObject"),
		reportingController: field.NewPath("reportingComponent"),
		sourceComponent:     field.NewPath("source", "component"),
	}
}

// effectiveState reads an unset state as Ongoing: series stored before the
// plugin was enabled, or written while it was disabled, carry no state.
func effectiveState(state core.EventSeriesState) core.EventSeriesState {
	if state == "" {
		return core.EventSeriesStateOngoing
	}
	return state
}

// clientSetState tells whether the client chose the series state itself. A
// patch is merged onto the stored event before admission, so an unchanged
// state is the stored one, not the client's choice; only a state that
// differs from the stored one (or any state on a new series) is.
func clientSetState(newSeries *core.EventSeries, oldEvent *core.Event) bool {
	if newSeries.State == "" {
		return false
	}
	if oldEvent == nil || oldEvent.Series == nil {
		return true
	}
	return newSeries.State != oldEvent.Series.State
}

// quietFor tells whether a series was last observed more than d before now.
func quietFor(series *core.EventSeries, now time.Time, d time.Duration) bool {
	return !series.LastObservedTime.IsZero() && now.Sub(series.LastObservedTime.Time) > d
}

// defaultState sets the state of a series whose client did not choose one:
// it keeps the stored state (Ongoing for a new series); a write that reports
// the series last observed more than finishAfter ago is its final write and
// finishes it; a fresh write to an Unknown series means its reporter is back,
// so it is Ongoing again.
func defaultState(newEvent, oldEvent *core.Event, now time.Time, t Thresholds) {
	series := newEvent.Series
	if series == nil || clientSetState(series, oldEvent) {
		return
	}
	state := core.EventSeriesStateOngoing
	if oldEvent != nil && oldEvent.Series != nil && oldEvent.Series.State != "" {
		state = oldEvent.Series.State
	}
	switch {
	case quietFor(series, now, t.FinishAfter):
		state = core.EventSeriesStateFinished
	case state == core.EventSeriesStateUnknown:
		state = core.EventSeriesStateOngoing
	}
	series.State = state
}

// validateSeries checks a write of newEvent (oldEvent is nil on create)
// against the series rules.
func validateSeries(newEvent, oldEvent *core.Event, now time.Time, t Thresholds, names fieldNames) field.ErrorList {
	var oldSeries *core.EventSeries
	if oldEvent != nil {
		oldSeries = oldEvent.Series
	}
	newSeries := newEvent.Series
	if newSeries == nil && oldSeries == nil {
		return nil
	}

	var errs field.ErrorList
	if oldEvent != nil {
		errs = append(errs, validateIdentity(newEvent, oldEvent, names)...)
	}
	if newSeries == nil {
		return append(errs, field.Required(seriesPath, fmt.Sprintf(
			"may not be removed from an event series (was count %d, state %s)", oldSeries.Count, effectiveState(oldSeries.State))))
	}
	if newSeries.State != "" && !isKnownState(newSeries.State) {
		return append(errs, field.NotSupported(seriesStatePath, newSeries.State, eventSeriesStates))
	}
	if oldSeries == nil || newSeries.Count != oldSeries.Count || !sameMicro(newSeries.LastObservedTime, oldSeries.LastObservedTime) {
		errs = append(errs, validateSeriesContent(newEvent)...)
	}
	if oldSeries == nil {
		return append(errs, validateUnknown(newSeries, now, t)...)
	}
	return append(errs, validateTransition(newSeries, oldSeries, now, t)...)
}

// validateSeriesContent checks what every written series must carry.
func validateSeriesContent(event *core.Event) field.ErrorList {
	var errs field.ErrorList
	series := event.Series
	if series.Count < 2 {
		errs = append(errs, field.Invalid(seriesCountPath, series.Count,
			"must be at least 2: an event observed once is a singleton and has no series"))
	}
	switch {
	case series.LastObservedTime.IsZero():
		errs = append(errs, field.Required(seriesLastObserved, "a series must say when it was last observed"))
	case !event.EventTime.IsZero() && micro(series.LastObservedTime).Before(micro(event.EventTime)):
		errs = append(errs, field.Invalid(seriesLastObserved, formatMicro(series.LastObservedTime),
			fmt.Sprintf("may not be before eventTime (%s)", formatMicro(event.EventTime))))
	}
	return errs
}

// validateTransition checks an update of an existing series.
func validateTransition(newSeries, oldSeries *core.EventSeries, now time.Time, t Thresholds) field.ErrorList {
	var errs field.ErrorList
	oldState, newState := effectiveState(oldSeries.State), effectiveState(newSeries.State)
	countDecreased := newSeries.Count < oldSeries.Count
	movedBack := micro(newSeries.LastObservedTime).Before(micro(oldSeries.LastObservedTime))
	if countDecreased {
		errs = append(errs, field.Invalid(seriesCountPath, newSeries.Count, fmt.Sprintf("may not decrease (was %d)", oldSeries.Count)))
	}
	if movedBack {
		errs = append(errs, field.Invalid(seriesLastObserved, formatMicro(newSeries.LastObservedTime),
			fmt.Sprintf("may not move backwards (was %s)", formatMicro(oldSeries.LastObservedTime))))
	}

	switch oldState {
	case core.EventSeriesStateFinished:
		if newState != core.EventSeriesStateFinished {
			errs = append(errs, field.Invalid(seriesStatePath, string(newState), "may not change once the series is Finished: "+finalStateDetailTail))
		}
		if newSeries.Count > oldSeries.Count {
			errs = append(errs, field.Invalid(seriesCountPath, newSeries.Count,
				fmt.Sprintf("may not change once the series is Finished (was %d): %s", oldSeries.Count, finalStateDetailTail)))
		}
		if !movedBack && !sameMicro(newSeries.LastObservedTime, oldSeries.LastObservedTime) {
			errs = append(errs, field.Invalid(seriesLastObserved, formatMicro(newSeries.LastObservedTime),
				fmt.Sprintf("may not change once the series is Finished (was %s): %s", formatMicro(oldSeries.LastObservedTime), finalStateDetailTail)))
		}
	case core.EventSeriesStateOngoing:
		if newState == core.EventSeriesStateUnknown {
			errs = append(errs, validateUnknown(newSeries, now, t)...)
		}
	}
	// Unknown may become Ongoing (its reporter is back), Finished, or stay.
	return errs
}

// validateUnknown lets a series become Unknown only once its reporter has
// been silent longer than a heartbeat plus slack: the sweeper's write, or a
// client's that states the same fact.
func validateUnknown(series *core.EventSeries, now time.Time, t Thresholds) field.ErrorList {
	if effectiveState(series.State) != core.EventSeriesStateUnknown || quietFor(series, now, t.AbandonedAfter()) {
		return nil
	}
	observed := "it has no lastObservedTime"
	if !series.LastObservedTime.IsZero() {
		observed = fmt.Sprintf("it was last observed %s ago", now.Sub(series.LastObservedTime.Time).Round(time.Second))
	}
	return field.ErrorList{field.Invalid(seriesStatePath, string(series.State), fmt.Sprintf(
		"may only be set on a series not observed for more than %s (heartbeatInterval %s + heartbeatSlack %s); %s",
		t.AbandonedAfter(), t.HeartbeatInterval, t.HeartbeatSlack, observed))}
}

// validateIdentity refuses changes to what makes events isomorphic.
func validateIdentity(newEvent, oldEvent *core.Event, names fieldNames) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateReference(newEvent.InvolvedObject, oldEvent.InvolvedObject, names.regarding)...)

	relatedPath := field.NewPath("related")
	newRelated, oldRelated := derefReference(newEvent.Related), derefReference(oldEvent.Related)
	switch {
	case newRelated == oldRelated:
	case newRelated == core.ObjectReference{}:
		errs = append(errs, field.Required(relatedPath, "may not be removed: "+identityDetail))
	case oldRelated == core.ObjectReference{}:
		errs = append(errs, field.Forbidden(relatedPath, "may not be added: "+identityDetail))
	default:
		errs = append(errs, validateReference(newRelated, oldRelated, relatedPath)...)
	}

	for _, f := range []struct {
		path     *field.Path
		new, old string
	}{
		{field.NewPath("action"), newEvent.Action, oldEvent.Action},
		{field.NewPath("reason"), newEvent.Reason, oldEvent.Reason},
		{reportingControllerPath(newEvent, names), conversion.ReportingController(newEvent.ReportingController, newEvent.Source.Component),
			conversion.ReportingController(oldEvent.ReportingController, oldEvent.Source.Component)},
		{field.NewPath("reportingInstance"), newEvent.ReportingInstance, oldEvent.ReportingInstance},
		{field.NewPath("type"), newEvent.Type, oldEvent.Type},
	} {
		if f.new != f.old {
			errs = append(errs, field.Invalid(f.path, f.new, identityDetail))
		}
	}
	return errs
}

// reportingControllerPath names the field the event's effective reporting
// controller comes from: its own, or the legacy source component.
func reportingControllerPath(event *core.Event, names fieldNames) *field.Path {
	if event.ReportingController == "" && event.Source.Component != "" {
		return names.sourceComponent
	}
	return names.reportingController
}

func validateReference(newRef, oldRef core.ObjectReference, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name     string
		new, old string
	}{
		{"kind", newRef.Kind, oldRef.Kind},
		{"namespace", newRef.Namespace, oldRef.Namespace},
		{"name", newRef.Name, oldRef.Name},
		{"uid", string(newRef.UID), string(oldRef.UID)},
		{"apiVersion", newRef.APIVersion, oldRef.APIVersion},
		{"resourceVersion", newRef.ResourceVersion, oldRef.ResourceVersion},
		{"fieldPath", newRef.FieldPath, oldRef.FieldPath},
	} {
		if f.new != f.old {
			errs = append(errs, field.Invalid(path.Child(f.name), f.new, identityDetail))
		}
	}
	return errs
}

// derefReference reads an absent related object as the zero reference, as
// client-go's recorder does when it keys isomorphic events.
func derefReference(ref *core.ObjectReference) core.ObjectReference {
	if ref == nil {
		return core.ObjectReference{}
	}
	return *ref
}

func isKnownState(state core.EventSeriesState) bool {
	switch state {
	case core.EventSeriesStateOngoing, core.EventSeriesStateFinished, core.EventSeriesStateUnknown:
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
