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
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/load"
	"github.com/kube-events/events-apiserver/pkg/apis/events"
)

const (
	ongoing  = core.EventSeriesStateOngoing
	finished = core.EventSeriesStateFinished
	unknown  = core.EventSeriesStateUnknown
)

// now is the fake clock's time in every plugin test.
var now = time.Date(2026, time.May, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.MicroTime {
	return metav1.NewMicroTime(now.Add(-d))
}

// event is a kubelet back-off event first observed an hour ago, changed by mods.
func event(mods ...func(*core.Event)) *core.Event {
	e := &core.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0.17a2b3c4d5e6f708", UID: "event-uid", ResourceVersion: "42"},
		InvolvedObject: core.ObjectReference{
			Kind: "Pod", Namespace: "default", Name: "web-0", UID: "pod-uid", APIVersion: "v1", FieldPath: "spec.containers{web}",
		},
		Reason:              "BackOff",
		Action:              "Pulling",
		Message:             "Back-off pulling image",
		Type:                core.EventTypeWarning,
		EventTime:           ago(time.Hour),
		ReportingController: "kubelet",
		ReportingInstance:   "kubelet-node-1",
	}
	for _, mod := range mods {
		mod(e)
	}
	return e
}

// series gives the event a series of count occurrences, last observed
// lastObserved before now, in state (may be empty).
func series(count int32, lastObserved time.Duration, state core.EventSeriesState) func(*core.Event) {
	return func(e *core.Event) {
		e.Series = &core.EventSeries{Count: count, LastObservedTime: ago(lastObserved), State: state}
	}
}

// eventTimeAgo sets the event's eventTime d before now.
func eventTimeAgo(d time.Duration) func(*core.Event) {
	return func(e *core.Event) { e.EventTime = ago(d) }
}

func legacySource(e *core.Event) {
	e.ReportingController = ""
	e.Source.Component = "kubelet"
}

// write is one create (old nil) or update through the plugin.
type write struct {
	name   string
	legacy bool // through core/v1 instead of events.k8s.io
	// strictClock turns on the event policy's series.strictClock.
	strictClock bool
	old         *core.Event
	new         *core.Event
	// wantState is series.state after admission, for allowed writes.
	wantState core.EventSeriesState
	// wantCauses are the refusal's causes, "field: message", each matched
	// as a prefix; none means the write is allowed.
	wantCauses []string
}

func runWrites(t *testing.T, tests []write) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			thresholds := load.Default().Series
			thresholds.StrictClock = tc.strictClock
			plugin, err := NewPlugin(thresholds, clocktesting.NewFakePassiveClock(now))
			if err != nil {
				t.Fatal(err)
			}
			group := events.GroupName
			if tc.legacy {
				group = core.GroupName
			}
			err = admitAndValidate(plugin, group, tc.old, tc.new)
			checkCauses(t, err, tc.wantCauses)
			if err != nil || len(tc.wantCauses) > 0 {
				return
			}
			var gotState core.EventSeriesState
			if tc.new.Series != nil {
				gotState = tc.new.Series.State
			}
			if gotState != tc.wantState {
				t.Errorf("series.state %q after admission, want %q", gotState, tc.wantState)
			}
		})
	}
}

// admitAndValidate runs the plugin the way the admission chain does: Admit,
// then Validate on the admitted object.
func admitAndValidate(plugin *Plugin, group string, oldEvent, newEvent *core.Event) error {
	op := admission.Create
	var old runtime.Object
	if oldEvent != nil {
		op, old = admission.Update, oldEvent
	}
	attrs := admission.NewAttributesRecord(newEvent, old,
		schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Event"},
		newEvent.Namespace, newEvent.Name,
		schema.GroupVersionResource{Group: group, Version: "v1", Resource: "events"},
		"", op, nil, false, nil)
	if err := plugin.Admit(context.Background(), attrs, nil); err != nil {
		return err
	}
	return plugin.Validate(context.Background(), attrs, nil)
}

func checkCauses(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	var status *apierrors.StatusError
	if !errors.As(err, &status) {
		t.Fatalf("got %v, want a refusal with causes %q", err, want)
	}
	if status.ErrStatus.Code != http.StatusUnprocessableEntity || status.ErrStatus.Reason != metav1.StatusReasonInvalid {
		t.Errorf("got %d %s, want 422 Invalid", status.ErrStatus.Code, status.ErrStatus.Reason)
	}
	var got []string
	for _, cause := range status.ErrStatus.Details.Causes {
		got = append(got, cause.Field+": "+cause.Message)
	}
	if len(got) != len(want) {
		t.Fatalf("got causes %q, want %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("cause %d is %q, want it to start with %q", i, got[i], want[i])
		}
	}
}

func TestCreate(t *testing.T) {
	runWrites(t, []write{
		{
			name: "singleton",
			new:  event(),
		},
		{
			name:      "series without state starts Ongoing",
			new:       event(series(2, time.Second, "")),
			wantState: ongoing,
		},
		{
			name:      "series last observed more than finishAfter ago is created Finished",
			new:       event(series(7, 7*time.Minute, "")),
			wantState: finished,
		},
		{
			name:      "series last observed before its eventTime",
			new:       event(series(2, time.Minute, ""), eventTimeAgo(time.Second)),
			wantState: ongoing,
		},
		{
			name:        "strict clock: series last observed before its eventTime",
			strictClock: true,
			new:         event(series(2, time.Minute, ""), eventTimeAgo(time.Second)),
			wantCauses:  []string{`series.lastObservedTime: Invalid value: "2026-05-01T11:59:00.000000Z": may not be before eventTime (2026-05-01T11:59:59.000000Z)`},
		},
		{
			name:      "series last observed exactly finishAfter ago is still Ongoing",
			new:       event(series(7, 6*time.Minute, "")),
			wantState: ongoing,
		},
		{
			name:      "client's Finished is obeyed",
			new:       event(series(3, time.Second, finished)),
			wantState: finished,
		},
		{
			name:      "client's Ongoing is obeyed on a late write",
			new:       event(series(3, 10*time.Minute, ongoing)),
			wantState: ongoing,
		},
		{
			name:      "client's Unknown on a series silent for longer than heartbeat and slack",
			new:       event(series(3, 37*time.Minute, unknown)),
			wantState: unknown,
		},
		{
			name:       "client's Unknown on a series observed recently",
			new:        event(series(3, 35*time.Minute, unknown)),
			wantCauses: []string{`series.state: Invalid value: "Unknown": may only be set on a series not observed for more than 36m0s (heartbeatInterval 30m0s + heartbeatSlack 6m0s); it was last observed 35m0s ago`},
		},
		{
			name: "lastObservedTime equal to eventTime",
			new: event(series(2, time.Minute, ""), func(e *core.Event) {
				e.EventTime = ago(time.Minute)
			}),
			wantState: ongoing,
		},
		{
			name:   "legacy core/v1 series without eventTime",
			legacy: true,
			new: event(series(2, time.Second, ""), legacySource, func(e *core.Event) {
				e.EventTime = metav1.MicroTime{}
			}),
			wantState: ongoing,
		},
	})
}

func TestUpdateDrivenByClientGoRecorder(t *testing.T) {
	// client-go's tools/events recorder patches series.count and
	// series.lastObservedTime with a strategic merge patch; the server merges
	// it onto the stored event, so the merged object carries the stored state.
	runWrites(t, []write{
		{
			name:      "second occurrence turns the singleton into an Ongoing series",
			old:       event(),
			new:       event(series(2, time.Second, "")),
			wantState: ongoing,
		},
		{
			// Kubernetes' Events conformance test patches a series last
			// observed years ago onto a singleton, then updates its count.
			name:      "singleton turned into a series last observed more than finishAfter ago",
			old:       event(),
			new:       event(series(2, 7*time.Minute, "")),
			wantState: ongoing,
		},
		{
			name:        "strict clock: singleton turned into a series last observed more than finishAfter ago",
			strictClock: true,
			old:         event(),
			new:         event(series(2, 7*time.Minute, "")),
			wantState:   finished,
		},
		{
			name:      "heartbeat keeps the series Ongoing",
			old:       event(series(2, 29*time.Minute, ongoing)),
			new:       event(series(4242, 10*time.Second, ongoing)),
			wantState: ongoing,
		},
		{
			name:      "late write with the merged stored state is the final write",
			old:       event(series(4242, 20*time.Minute, ongoing)),
			new:       event(series(424242, 7*time.Minute, ongoing)),
			wantState: finished,
		},
		{
			name:      "final write that repeats the last heartbeat",
			old:       event(series(4242, 7*time.Minute, ongoing)),
			new:       event(series(4242, 7*time.Minute, ongoing)),
			wantState: finished,
		},
		{
			name:      "final write sent again after the series finished",
			old:       event(series(4242, 7*time.Minute, finished)),
			new:       event(series(4242, 7*time.Minute, finished)),
			wantState: finished,
		},
		{
			name:      "series re-created after the event expired, with the final count",
			new:       event(series(424242, 7*time.Minute, "")),
			wantState: finished,
		},
		{
			name:        "strict clock: a series moved before its eventTime",
			strictClock: true,
			old:         event(series(2, time.Second, ongoing), eventTimeAgo(2*time.Second)),
			new:         event(series(3, time.Minute, ongoing), eventTimeAgo(2*time.Second)),
			wantCauses:  []string{`series.lastObservedTime: Invalid value: "2026-05-01T11:59:00.000000Z": may not be before eventTime (2026-05-01T11:59:58.000000Z)`},
		},
		{
			name:        "strict clock: a metadata update of a series stored before its eventTime",
			strictClock: true,
			old:         event(series(2, time.Minute, ongoing), eventTimeAgo(time.Second)),
			new:         event(series(2, time.Minute, ongoing), eventTimeAgo(time.Second), func(e *core.Event) { e.Labels = map[string]string{"team": "web"} }),
			wantState:   ongoing,
		},
		{
			name:      "reporter back after being marked Unknown",
			old:       event(series(10, 40*time.Minute, unknown)),
			new:       event(series(11, time.Second, unknown)),
			wantState: ongoing,
		},
		{
			name:      "reporter back after being marked Unknown only to finish",
			old:       event(series(10, 40*time.Minute, unknown)),
			new:       event(series(10, 40*time.Minute, unknown)),
			wantState: finished,
		},
	})
}

func TestUpdateStateChosenByClient(t *testing.T) {
	runWrites(t, []write{
		{
			name:      "client finishes a fresh series",
			old:       event(series(5, time.Minute, ongoing)),
			new:       event(series(6, time.Second, finished)),
			wantState: finished,
		},
		{
			name:      "client revives an Unknown series although its write is late",
			old:       event(series(5, 40*time.Minute, unknown)),
			new:       event(series(6, 10*time.Minute, ongoing)),
			wantState: ongoing,
		},
		{
			name:      "client finishes an Unknown series",
			old:       event(series(5, 40*time.Minute, unknown)),
			new:       event(series(5, 40*time.Minute, finished)),
			wantState: finished,
		},
		{
			name:      "sweeper marks an abandoned Ongoing series Unknown",
			old:       event(series(5, 37*time.Minute, ongoing)),
			new:       event(series(5, 37*time.Minute, unknown)),
			wantState: unknown,
		},
		{
			name:      "abandoned series without a stored state may become Unknown",
			old:       event(series(5, 37*time.Minute, "")),
			new:       event(series(5, 37*time.Minute, unknown)),
			wantState: unknown,
		},
		{
			name:       "Unknown for a series observed recently",
			old:        event(series(5, 10*time.Minute, ongoing)),
			new:        event(series(5, 10*time.Minute, unknown)),
			wantCauses: []string{`series.state: Invalid value: "Unknown": may only be set on a series not observed for more than 36m0s (heartbeatInterval 30m0s + heartbeatSlack 6m0s); it was last observed 10m0s ago`},
		},
		{
			name:       "Unknown together with a new occurrence",
			old:        event(series(5, 40*time.Minute, ongoing)),
			new:        event(series(6, time.Second, unknown)),
			wantCauses: []string{`series.state: Invalid value: "Unknown": may only be set on a series not observed for more than 36m0s`},
		},
	})
}

func TestUpdateWithoutClientState(t *testing.T) {
	runWrites(t, []write{
		{
			name: "lastObservedTime differs below a microsecond",
			old: event(series(5, time.Minute, ongoing), func(e *core.Event) {
				e.Series.LastObservedTime = metav1.NewMicroTime(e.Series.LastObservedTime.Add(999 * time.Nanosecond))
			}),
			new:       event(series(5, time.Minute, ongoing)),
			wantState: ongoing,
		},
		{
			name:      "client dropping the state it does not know keeps the stored Finished",
			old:       event(series(5, time.Minute, finished)),
			new:       event(series(5, time.Minute, "")),
			wantState: finished,
		},
		{
			name:      "client dropping the state it does not know keeps the stored Ongoing",
			old:       event(series(5, time.Minute, ongoing)),
			new:       event(series(6, time.Second, "")),
			wantState: ongoing,
		},
		{
			name: "metadata-only update of a series",
			old:  event(series(5, time.Minute, ongoing)),
			new: event(series(5, time.Minute, ongoing), func(e *core.Event) {
				e.Labels = map[string]string{"team": "web"}
			}),
			wantState: ongoing,
		},
		{
			name:       "singleton becomes an Unknown series",
			old:        event(),
			new:        event(series(2, time.Second, unknown)),
			wantCauses: []string{`series.state: Invalid value: "Unknown": may only be set`},
		},
		{
			name: "legacy core/v1 update of a singleton",
			old:  event(legacySource),
			new: event(legacySource, func(e *core.Event) {
				e.Count = 7
				e.Reason = "Failed"
			}),
			legacy: true,
		},
	})
}

func TestRefusalNamesKindAndEvent(t *testing.T) {
	const tooEarly = `series.state: Invalid value: "Unknown": may only be set on a series not observed for more than 36m0s (heartbeatInterval 30m0s + heartbeatSlack 6m0s); it was last observed 1m0s ago`
	plugin, err := NewPlugin(load.Default().Series, clocktesting.NewFakePassiveClock(now))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		group string
		want  string
	}{
		{events.GroupName, `Event.events.k8s.io "web-0.17a2b3c4d5e6f708" is invalid: ` + tooEarly},
		{core.GroupName, `Event "web-0.17a2b3c4d5e6f708" is invalid: ` + tooEarly},
	} {
		err := admitAndValidate(plugin, tc.group, event(series(5, time.Minute, ongoing)), event(series(5, time.Minute, unknown)))
		if err == nil || err.Error() != tc.want {
			t.Errorf("group %q: got %v, want %s", tc.group, err, tc.want)
		}
	}
}

func TestCustomThresholds(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(now)
	plugin, err := NewPlugin(eventpolicy.Series{FinishAfter: metav1.Duration{Duration: time.Minute}, HeartbeatInterval: metav1.Duration{Duration: 5 * time.Minute},
		HeartbeatSlack: metav1.Duration{Duration: time.Minute}, SweepInterval: metav1.Duration{Duration: time.Minute}}, clock)
	if err != nil {
		t.Fatal(err)
	}
	late := event(series(5, 90*time.Second, ""))
	if err := admitAndValidate(plugin, events.GroupName, event(series(4, 2*time.Minute, ongoing)), late); err != nil {
		t.Fatalf("late write refused: %v", err)
	}
	if late.Series.State != finished {
		t.Errorf("write 90s late with finishAfter 1m: state %q, want Finished", late.Series.State)
	}
	abandoned := event(series(4, 7*time.Minute, unknown))
	if err := admitAndValidate(plugin, events.GroupName, event(series(4, 7*time.Minute, ongoing)), abandoned); err != nil {
		t.Errorf("Unknown after 7m with heartbeat 5m + slack 1m refused: %v", err)
	}
	clock.SetTime(now.Add(-2 * time.Minute))
	err = admitAndValidate(plugin, events.GroupName, event(series(4, 7*time.Minute, ongoing)), event(series(4, 7*time.Minute, unknown)))
	checkCauses(t, err, []string{`series.state: Invalid value: "Unknown": may only be set on a series not observed for more than 6m0s (heartbeatInterval 5m0s + heartbeatSlack 1m0s); it was last observed 5m0s ago`})
}

func TestRequestsNotForEvents(t *testing.T) {
	plugin, err := NewPlugin(load.Default().Series, clocktesting.NewFakePassiveClock(now))
	if err != nil {
		t.Fatal(err)
	}
	bad := event(series(5, time.Minute, ongoing))
	worse := event(series(1, time.Minute, ""))
	tests := []struct {
		name     string
		resource schema.GroupVersionResource
		sub      string
		object   runtime.Object
		wantErr  func(error) bool
	}{
		{name: "other resource", resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, object: worse},
		{name: "events of another group", resource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "events"}, object: worse},
		{name: "subresource", resource: schema.GroupVersionResource{Version: "v1", Resource: "events"}, sub: "status", object: worse},
		{
			name:     "not an internal Event",
			resource: schema.GroupVersionResource{Group: events.GroupName, Version: "v1", Resource: "events"},
			object:   &metav1.Status{},
			wantErr:  apierrors.IsBadRequest,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			attrs := admission.NewAttributesRecord(tc.object, bad, schema.GroupVersionKind{Group: tc.resource.Group, Version: "v1", Kind: "Event"},
				"default", "x", tc.resource, tc.sub, admission.Update, nil, false, nil)
			for name, call := range map[string]func(context.Context, admission.Attributes, admission.ObjectInterfaces) error{
				"Admit": plugin.Admit, "Validate": plugin.Validate,
			} {
				err := call(context.Background(), attrs, nil)
				switch {
				case tc.wantErr == nil && err != nil:
					t.Errorf("%s: unexpected error %v", name, err)
				case tc.wantErr != nil && !tc.wantErr(err):
					t.Errorf("%s: got error %v", name, err)
				}
			}
			if worse.Series.State != "" {
				t.Errorf("ignored request was mutated: state %q", worse.Series.State)
			}
		})
	}
}
