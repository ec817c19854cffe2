package eventseries

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/core/validation"
)

// The rules of a series that depend on the clock and on the plugin's
// thresholds. Everything else about a series (its content, the transitions,
// its identity) is validation's: pkg/apis/core/validation, which every
// writer meets.

var seriesStatePath = field.NewPath("series", "state")

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

// QuietFor tells whether a series was last observed more than d before now.
func QuietFor(series *core.EventSeries, now time.Time, d time.Duration) bool {
	return !series.LastObservedTime.IsZero() && now.Sub(series.LastObservedTime.Time) > d
}

// StateOfWrite is the state a write of series that chose none gets, seen at
// now, when the stored state was stored ("" for a new series, or when the
// writer dropped it): a write last observed more than finishAfter ago is
// the reporter's final write and finishes the series; a fresh write to an
// Unknown series means its reporter is back, so it is Ongoing again;
// otherwise the stored state stays (Ongoing for a new series). The plugin
// applies it to writes through the API, the series-state controller
// (pkg/registry/event/series) to writes that bypassed it.
func StateOfWrite(series *core.EventSeries, stored core.EventSeriesState, now time.Time, t Thresholds) core.EventSeriesState {
	switch {
	case QuietFor(series, now, t.FinishAfter):
		return core.EventSeriesStateFinished
	case stored == "" || stored == core.EventSeriesStateUnknown:
		return core.EventSeriesStateOngoing
	}
	return stored
}

// defaultState sets the state of a series whose client did not choose one
// (StateOfWrite).
func defaultState(newEvent, oldEvent *core.Event, now time.Time, t Thresholds) {
	series := newEvent.Series
	if series == nil || clientSetState(series, oldEvent) {
		return
	}
	var stored core.EventSeriesState
	if oldEvent != nil && oldEvent.Series != nil {
		stored = oldEvent.Series.State
	}
	series.State = StateOfWrite(series, stored, now, t)
}

// validateUnknown lets a series become Unknown (on create, or from Ongoing)
// only once its reporter has been silent longer than a heartbeat plus
// slack: the sweeper's write, or a client's that states the same fact.
func validateUnknown(newEvent, oldEvent *core.Event, now time.Time, t Thresholds) field.ErrorList {
	series := newEvent.Series
	if series == nil || series.State != core.EventSeriesStateUnknown {
		return nil
	}
	if oldEvent != nil && oldEvent.Series != nil && validation.EffectiveSeriesState(oldEvent.Series.State) != core.EventSeriesStateOngoing {
		return nil // Unknown stays Unknown; Finished is validation's
	}
	if QuietFor(series, now, t.AbandonedAfter()) {
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
