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

package eventpolicy

import (
	"time"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

// The rules of a series that depend on the clock and on the thresholds,
// shared by the EventSeries admission plugin (writes through the API) and
// the series controllers (writes that bypassed it). Everything else about a
// series (its content, the transitions, its identity) is validation's:
// pkg/apis/core/validation, which every writer meets.

// AbandonedAfter is how long an Ongoing series may go without being
// observed before the sweeper marks it Unknown: a heartbeat plus slack.
func (s Series) AbandonedAfter() time.Duration {
	return s.HeartbeatInterval.Duration + s.HeartbeatSlack.Duration
}

// QuietFor tells whether a series was last observed more than d before now.
func QuietFor(series *core.EventSeries, now time.Time, d time.Duration) bool {
	return !series.LastObservedTime.IsZero() && now.Sub(series.LastObservedTime.Time) > d
}

// StateOfWrite is the state a write of series that chose none gets, seen at
// now, when the stored state was stored ("" for a new series, or when the
// writer dropped it); fromSingleton tells whether the write turns a stored
// singleton into a series. A write last observed more than finishAfter ago
// is the reporter's final write and finishes the series, unless it turns a
// singleton into a series and the policy's clock is not strict: a reporter
// sends the second occurrence as it happens (client-go's recorder does), so
// an old lastObservedTime there is the reporter's clock, and Kubernetes'
// conformance tests write one and update the series after. A fresh write to
// an Unknown series means its reporter is back, so it is Ongoing again;
// otherwise the stored state stays (Ongoing for a new series).
func (s Series) StateOfWrite(series *core.EventSeries, stored core.EventSeriesState, fromSingleton bool, now time.Time) core.EventSeriesState {
	switch {
	case QuietFor(series, now, s.FinishAfter.Duration) && (!fromSingleton || s.StrictClock):
		return core.EventSeriesStateFinished
	case stored == "" || stored == core.EventSeriesStateUnknown:
		return core.EventSeriesStateOngoing
	}
	return stored
}

// ObservedBeforeEventTime is the strict clock's rule on a series' content:
// its last occurrence may not be observed before the event's eventTime.
// Kubernetes does not have it, and its conformance tests break it.
func ObservedBeforeEventTime(event *core.Event) bool {
	return event.Series != nil && !event.EventTime.IsZero() && !event.Series.LastObservedTime.IsZero() &&
		event.Series.LastObservedTime.Truncate(time.Microsecond).Before(event.EventTime.Truncate(time.Microsecond))
}
