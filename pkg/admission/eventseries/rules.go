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

package eventseries

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/core/validation"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
)

// How the plugin applies the rules of a series that depend on the clock and
// on the policy's thresholds (pkg/apis/eventpolicy: StateOfWrite, QuietFor).
// Everything else about a series (its content, the transitions, its
// identity) is validation's: pkg/apis/core/validation, which every writer
// meets.

var (
	seriesStatePath        = field.NewPath("series", "state")
	seriesLastObservedPath = field.NewPath("series", "lastObservedTime")
)

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

// defaultState sets the state of a series whose client did not choose one
// (the policy's StateOfWrite).
func defaultState(newEvent, oldEvent *core.Event, now time.Time, t eventpolicy.Series) {
	series := newEvent.Series
	if series == nil || clientSetState(series, oldEvent) {
		return
	}
	var stored core.EventSeriesState
	if oldEvent != nil && oldEvent.Series != nil {
		stored = oldEvent.Series.State
	}
	fromSingleton := oldEvent != nil && oldEvent.Series == nil
	series.State = t.StateOfWrite(series, stored, fromSingleton, now)
}

// validateStrictClock applies the strict clock's rule on a series' content
// (series.lastObservedTime not before eventTime) to a write that sets it: a
// new series, or a changed count or lastObservedTime, as validation checks
// the rest of the content.
func validateStrictClock(newEvent, oldEvent *core.Event, t eventpolicy.Series) field.ErrorList {
	series := newEvent.Series
	if !t.StrictClock || !eventpolicy.ObservedBeforeEventTime(newEvent) {
		return nil
	}
	if oldEvent != nil && oldEvent.Series != nil && oldEvent.Series.Count == series.Count &&
		oldEvent.Series.LastObservedTime.Truncate(time.Microsecond).Equal(series.LastObservedTime.Truncate(time.Microsecond)) {
		return nil
	}
	return field.ErrorList{field.Invalid(seriesLastObservedPath, formatMicro(series.LastObservedTime),
		fmt.Sprintf("may not be before eventTime (%s) (the event policy's series.strictClock)", formatMicro(newEvent.EventTime)))}
}

func formatMicro(t metav1.MicroTime) string {
	return t.UTC().Format(metav1.RFC3339Micro)
}

// validateUnknown lets a series become Unknown (on create, or from Ongoing)
// only once its reporter has been silent longer than a heartbeat plus
// slack: the sweeper's write, or a client's that states the same fact.
func validateUnknown(newEvent, oldEvent *core.Event, now time.Time, t eventpolicy.Series) field.ErrorList {
	series := newEvent.Series
	if series == nil || series.State != core.EventSeriesStateUnknown {
		return nil
	}
	if oldEvent != nil && oldEvent.Series != nil && validation.EffectiveSeriesState(oldEvent.Series.State) != core.EventSeriesStateOngoing {
		return nil // Unknown stays Unknown; Finished is validation's
	}
	if eventpolicy.QuietFor(series, now, t.AbandonedAfter()) {
		return nil
	}
	observed := "it has no lastObservedTime"
	if !series.LastObservedTime.IsZero() {
		observed = fmt.Sprintf("it was last observed %s ago", now.Sub(series.LastObservedTime.Time).Round(time.Second))
	}
	return field.ErrorList{field.Invalid(seriesStatePath, string(series.State), fmt.Sprintf(
		"may only be set on a series not observed for more than %s (heartbeatInterval %s + heartbeatSlack %s); %s",
		t.AbandonedAfter(), t.HeartbeatInterval.Duration, t.HeartbeatSlack.Duration, observed))}
}
