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

package series

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	"github.com/kube-events/events-apiserver/pkg/apis/core/validation"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/load"
	"github.com/kube-events/events-apiserver/pkg/apis/events"
)

const (
	ongoing  = core.EventSeriesStateOngoing
	finished = core.EventSeriesStateFinished
	unknown  = core.EventSeriesStateUnknown
)

// now is the fake clock's time in every sweeper test.
var now = time.Date(2026, time.May, 1, 12, 0, 0, 0, time.UTC)

func duration(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

func ago(d time.Duration) metav1.MicroTime {
	return metav1.NewMicroTime(now.Add(-d))
}

// series gives the event a series of count occurrences, last observed
// lastObserved before now, in state (may be empty).
func series(count int32, lastObserved time.Duration, state core.EventSeriesState) func(*core.Event) {
	return func(e *core.Event) {
		e.Series = &core.EventSeries{Count: count, LastObservedTime: ago(lastObserved), State: state}
	}
}

// memoryStore is an in-memory SeriesStore with resourceVersions, where
// other writers can get in between the sweeper's read and write. Every
// write it accepts passes the store's validation first, as the sweeper's
// writes to the registry store do.
type memoryStore struct {
	mu      sync.Mutex
	events  map[string]*core.Event
	lastRV  int
	lists   int
	writes  []string
	listErr error
	// concurrent runs once, before the store applies the sweeper's write of
	// that event: another writer that got there first.
	concurrent map[string]func(s *memoryStore, key string)
	// failing makes every write of that event fail with the error.
	failing map[string]error
}

func newMemoryStore(t *testing.T, stored ...*core.Event) *memoryStore {
	t.Helper()
	s := &memoryStore{events: map[string]*core.Event{}, concurrent: map[string]func(*memoryStore, string){}, failing: map[string]error{}}
	for _, e := range stored {
		s.put(e.DeepCopy())
	}
	return s
}

func eventKey(e *core.Event) string { return e.Namespace + "/" + e.Name }

// put stores e under a new resourceVersion; callers hold mu or own s.
func (s *memoryStore) put(e *core.Event) {
	s.lastRV++
	e.ResourceVersion = strconv.Itoa(s.lastRV)
	s.events[eventKey(e)] = e
}

func (s *memoryStore) ListSeries(context.Context) ([]*core.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	if s.listErr != nil {
		return nil, s.listErr
	}
	keys := make([]string, 0, len(s.events))
	for key := range s.events {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	list := make([]*core.Event, 0, len(keys))
	for _, key := range keys {
		list = append(list, s.events[key].DeepCopy())
	}
	return list, nil
}

func (s *memoryStore) GetEvent(_ context.Context, namespace, name string) (*core.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, ok := s.events[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(events.Resource("events"), name)
	}
	return stored.DeepCopy(), nil
}

func (s *memoryStore) UpdateSeriesState(_ context.Context, event *core.Event, state core.EventSeriesState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := eventKey(event)
	if concurrent, ok := s.concurrent[key]; ok {
		delete(s.concurrent, key)
		concurrent(s, key)
	}
	if err := s.failing[key]; err != nil {
		return err
	}
	stored, ok := s.events[key]
	if !ok {
		return apierrors.NewNotFound(events.Resource("events"), event.Name)
	}
	if stored.ResourceVersion != event.ResourceVersion {
		return apierrors.NewConflict(events.Resource("events"), event.Name, errors.New("the object has been modified"))
	}
	updated := stored.DeepCopy()
	updated.Series.State = state
	if errs := validation.ValidateEventUpdate(updated, stored, corev1.SchemeGroupVersion); len(errs) > 0 {
		return apierrors.NewInvalid(core.Kind("Event"), event.Name, errs)
	}
	s.put(updated)
	s.writes = append(s.writes, key+"="+string(state))
	return nil
}

func (s *memoryStore) state(t *testing.T, key string) core.EventSeriesState {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, ok := s.events[key]
	if !ok {
		t.Fatalf("event %s is gone", key)
	}
	if stored.Series == nil {
		return ""
	}
	return stored.Series.State
}

// stored is a kubelet back-off event of the sweeper tests, first observed
// three hours ago, changed by mods.
func stored(name string, mods ...func(*core.Event)) *core.Event {
	e := &core.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: "event-uid"},
		InvolvedObject: core.ObjectReference{
			Kind: "Pod", Namespace: "default", Name: "web-0", UID: "pod-uid", APIVersion: "v1", FieldPath: "spec.containers{web}",
		},
		Reason:              "BackOff",
		Action:              "Pulling",
		Message:             "Back-off pulling image",
		Type:                core.EventTypeWarning,
		EventTime:           ago(3 * time.Hour),
		ReportingController: "kubelet",
		ReportingInstance:   "kubelet-node-1",
	}
	for _, mod := range mods {
		mod(e)
	}
	return e
}

func TestSweep(t *testing.T) {
	heartbeat := func(s *memoryStore, key string) {
		e := s.events[key].DeepCopy()
		e.Series.Count++
		e.Series.LastObservedTime = ago(time.Second)
		s.put(e)
	}
	tests := []struct {
		name       string
		thresholds eventpolicy.Series
		events     []*core.Event
		setup      func(*memoryStore)
		wantMarked int
		wantStates map[string]core.EventSeriesState
		wantWrites []string
		wantErr    string
	}{
		{
			name: "selects only Ongoing series silent for longer than heartbeat and slack",
			events: []*core.Event{
				stored("abandoned", series(9, 37*time.Minute, ongoing)),
				stored("quiet", series(9, 35*time.Minute, ongoing)),
				stored("at-threshold", series(9, 36*time.Minute, ongoing)),
				stored("abandoned-without-state", series(9, 40*time.Minute, "")),
				stored("finished", series(9, 2*time.Hour, finished)),
				stored("unknown", series(9, 2*time.Hour, unknown)),
				stored("singleton"),
			},
			wantMarked: 2,
			wantStates: map[string]core.EventSeriesState{
				"abandoned": unknown, "quiet": ongoing, "at-threshold": ongoing, "abandoned-without-state": unknown,
				"finished": finished, "unknown": unknown, "singleton": "",
			},
			wantWrites: []string{"default/abandoned=Unknown", "default/abandoned-without-state=Unknown"},
		},
		{
			name:       "configured thresholds",
			thresholds: eventpolicy.Series{FinishAfter: duration(time.Minute), HeartbeatInterval: duration(10 * time.Minute), HeartbeatSlack: duration(time.Minute), SweepInterval: duration(time.Minute)},
			events: []*core.Event{
				stored("abandoned", series(9, 12*time.Minute, ongoing)),
				stored("quiet", series(9, 10*time.Minute+30*time.Second, ongoing)),
			},
			wantMarked: 1,
			wantStates: map[string]core.EventSeriesState{"abandoned": unknown, "quiet": ongoing},
			wantWrites: []string{"default/abandoned=Unknown"},
		},
		{
			name:   "heartbeat lands between list and write",
			events: []*core.Event{stored("revived", series(9, 40*time.Minute, ongoing))},
			setup: func(s *memoryStore) {
				s.concurrent["default/revived"] = heartbeat
			},
			wantStates: map[string]core.EventSeriesState{"revived": ongoing},
		},
		{
			name:   "unrelated change between list and write",
			events: []*core.Event{stored("labeled", series(9, 40*time.Minute, ongoing))},
			setup: func(s *memoryStore) {
				s.concurrent["default/labeled"] = func(s *memoryStore, key string) {
					e := s.events[key].DeepCopy()
					e.Labels = map[string]string{"team": "web"}
					s.put(e)
				}
			},
			wantMarked: 1,
			wantStates: map[string]core.EventSeriesState{"labeled": unknown},
			wantWrites: []string{"default/labeled=Unknown"},
		},
		{
			name:   "reporter finishes the series between list and write",
			events: []*core.Event{stored("finishing", series(9, 40*time.Minute, ongoing))},
			setup: func(s *memoryStore) {
				s.concurrent["default/finishing"] = func(s *memoryStore, key string) {
					e := s.events[key].DeepCopy()
					e.Series.State = finished
					s.put(e)
				}
			},
			wantStates: map[string]core.EventSeriesState{"finishing": finished},
		},
		{
			name: "event expires between list and write",
			events: []*core.Event{
				stored("expiring", series(9, 40*time.Minute, ongoing)),
				stored("abandoned", series(9, 40*time.Minute, ongoing)),
			},
			setup: func(s *memoryStore) {
				s.concurrent["default/expiring"] = func(s *memoryStore, key string) { delete(s.events, key) }
			},
			wantMarked: 1,
			wantStates: map[string]core.EventSeriesState{"abandoned": unknown},
			wantWrites: []string{"default/abandoned=Unknown"},
		},
		{
			name: "an event that keeps conflicting is given up, the others are swept",
			events: []*core.Event{
				stored("busy", series(9, 40*time.Minute, ongoing)),
				stored("abandoned", series(9, 40*time.Minute, ongoing)),
			},
			setup: func(s *memoryStore) {
				s.failing["default/busy"] = apierrors.NewConflict(events.Resource("events"), "busy", errors.New("the object has been modified"))
			},
			wantMarked: 1,
			wantStates: map[string]core.EventSeriesState{"busy": ongoing, "abandoned": unknown},
			wantWrites: []string{"default/abandoned=Unknown"},
			wantErr:    "event default/busy: gave up after 5 conflicting writes",
		},
		{
			name: "a failing write is reported, the others are swept",
			events: []*core.Event{
				stored("abandoned", series(9, 40*time.Minute, ongoing)),
				stored("broken", series(9, 40*time.Minute, ongoing)),
			},
			setup: func(s *memoryStore) {
				s.failing["default/broken"] = apierrors.NewServiceUnavailable("etcd is down")
			},
			wantMarked: 1,
			wantStates: map[string]core.EventSeriesState{"abandoned": unknown, "broken": ongoing},
			wantWrites: []string{"default/abandoned=Unknown"},
			wantErr:    "event default/broken: etcd is down",
		},
		{
			name:   "list fails",
			events: []*core.Event{stored("abandoned", series(9, 40*time.Minute, ongoing))},
			setup: func(s *memoryStore) {
				s.listErr = apierrors.NewServiceUnavailable("etcd is down")
			},
			wantStates: map[string]core.EventSeriesState{"abandoned": ongoing},
			wantErr:    "listing event series: etcd is down",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			thresholds := tc.thresholds
			if thresholds == (eventpolicy.Series{}) {
				thresholds = load.Default().Series
			}
			clock := clocktesting.NewFakeClock(now)
			store := newMemoryStore(t, tc.events...)
			if tc.setup != nil {
				tc.setup(store)
			}
			sweeper, err := newSweeper(store, thresholds, clock)
			if err != nil {
				t.Fatal(err)
			}

			marked, err := sweeper.Sweep(context.Background())
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("got error %v, want one containing %q", err, tc.wantErr)
			}
			if marked != tc.wantMarked {
				t.Errorf("marked %d, want %d", marked, tc.wantMarked)
			}
			for name, want := range tc.wantStates {
				if got := store.state(t, "default/"+name); got != want {
					t.Errorf("%s: state %q, want %q", name, got, want)
				}
			}
			if strings.Join(store.writes, ",") != strings.Join(tc.wantWrites, ",") {
				t.Errorf("writes %q, want %q", store.writes, tc.wantWrites)
			}
		})
	}
}

func TestSweeperRun(t *testing.T) {
	clock := clocktesting.NewFakeClock(now)
	store := newMemoryStore(t, stored("crashloop", series(9, 35*time.Minute, ongoing)))
	thresholds := load.Default().Series
	thresholds.SweepInterval = duration(time.Minute)
	sweeper, err := newSweeper(store, thresholds, clock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sweeper.Run(ctx)
	}()

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			store.mu.Lock()
			defer store.mu.Unlock()
			return cond(), nil
		})
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	waitFor("the first sweep at start", func() bool { return store.lists == 1 })
	if got := store.state(t, "default/crashloop"); got != ongoing {
		t.Fatalf("state %q after the first sweep, want Ongoing: 35m is within heartbeat and slack", got)
	}

	clock.Step(2 * time.Minute)
	waitFor("the sweep one interval later", func() bool { return store.lists == 2 && len(store.writes) == 1 })
	if got := store.state(t, "default/crashloop"); got != unknown {
		t.Errorf("state %q after 37m of silence, want Unknown", got)
	}

	cancel()
	clock.Step(time.Minute)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context was canceled")
	}
}

func TestNewSweeperRejectsInvalidThresholds(t *testing.T) {
	_, err := newSweeper(nil, eventpolicy.Series{FinishAfter: duration(time.Minute), HeartbeatInterval: duration(time.Minute), HeartbeatSlack: duration(-time.Minute), SweepInterval: duration(time.Minute)}, clocktesting.NewFakeClock(now))
	if err == nil || !strings.Contains(err.Error(), "heartbeatSlack") {
		t.Errorf("got %v, want an error about heartbeatSlack", err)
	}
}
