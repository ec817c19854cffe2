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

package event_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/component-base/metrics/legacyregistry"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	"github.com/kube-events/events-apiserver/test/harness"
)

// TestFoldPaths drives the folder through the paths a burst of isomorphic
// creates takes besides folding itself, on a fake clock and an in-memory
// store: a window gap that starts a new burst, a live event finished
// meanwhile (its occurrences continue in a new event), a flush that keeps
// failing (given up), and a series evicted from the folder's cache
// (flushed at once).
func TestFoldPaths(t *testing.T) {
	config := eventregistry.FoldConfig{After: 2, Window: time.Minute, FlushInterval: 10 * time.Second, CacheSize: 10}
	tests := []struct {
		name   string
		config func(*eventregistry.FoldConfig)
		run    func(t *testing.T, f *foldFixture)
		// want: the stored events, and the changes of the folder's
		// write counter by result.
		wantEvents []storedSummary
		wantWrites map[string]float64
	}{{
		name: "a gap longer than the window starts a new burst",
		run: func(t *testing.T, f *foldFixture) {
			f.create(t, "web", 0, 1, 2) // 2 is folded into web.1
			f.clock.Step(0)
			f.waitFor(t, "the first fold written", func() bool { return f.store.count("web.1") == 2 })
			f.clock.Step(config.Window + time.Second)
			f.create(t, "web", 3, 4, 5) // a new burst: 3 and 4 stored, 5 folded into web.4
		},
		wantEvents: []storedSummary{{"web.0", 1, ""}, {"web.1", 2, core.EventSeriesStateOngoing}, {"web.3", 1, ""}, {"web.4", 2, core.EventSeriesStateOngoing}},
		wantWrites: map[string]float64{"written": 2},
	}, {
		name: "occurrences folded after the live event was finished continue in a new event",
		run: func(t *testing.T, f *foldFixture) {
			f.create(t, "web", 0, 1)
			f.store.finish("web.1")
			f.create(t, "web", 2) // folded into web.1, which is Finished on the server
			f.clock.Step(0)
			f.waitFor(t, "the continuation created", func() bool { return f.store.has("web.1-0") })
			f.create(t, "web", 3) // a new burst after the finished event
		},
		wantEvents: []storedSummary{{"web.0", 1, ""}, {"web.1", 1, core.EventSeriesStateFinished}, {"web.1-0", 1, ""}, {"web.3", 1, ""}},
		wantWrites: map[string]float64{"written": 1},
	}, {
		name: "a flush that keeps failing is given up after five tries",
		run: func(t *testing.T, f *foldFixture) {
			f.store.failUpdates(5)
			f.create(t, "web", 0, 1, 2)
			for try := 1; try <= 5; try++ {
				// Each failed flush schedules the next one an interval later.
				f.waitFor(t, fmt.Sprintf("flush %d scheduled", try), f.clock.HasWaiters)
				f.clock.Step(config.FlushInterval)
				f.waitFor(t, fmt.Sprintf("flush %d failed", try), func() bool { return f.store.updateCalls() == try })
			}
			f.waitFor(t, "the occurrence given up", func() bool { return f.writes()["given_up"] == 1 })
			if f.clock.HasWaiters() {
				t.Errorf("a flush is still scheduled after the occurrence was given up")
			}
		},
		wantEvents: []storedSummary{{"web.0", 1, ""}, {"web.1", 1, ""}},
		wantWrites: map[string]float64{"error": 4, "given_up": 1},
	}, {
		name:   "a series evicted from the cache is flushed at once",
		config: func(c *eventregistry.FoldConfig) { c.After, c.CacheSize = 1, 1 },
		run: func(t *testing.T, f *foldFixture) {
			f.create(t, "web", 0, 1) // 1 is folded into web.0; its flush waits for the clock
			f.create(t, "db", 2)     // another series takes the only place
			f.waitFor(t, "web.0 flushed without the clock moving", func() bool { return f.store.count("web.0") == 2 })
		},
		wantEvents: []storedSummary{{"db.2", 1, ""}, {"web.0", 2, core.EventSeriesStateOngoing}},
		wantWrites: map[string]float64{"written": 1},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config
			if tc.config != nil {
				tc.config(&cfg)
			}
			f := &foldFixture{store: &memStore{events: map[string]*core.Event{}}, clock: testingclock.NewFakeClock(time.Now())}
			var err error
			if f.folder, err = eventregistry.NewFolder(cfg, f.store, f.clock); err != nil {
				t.Fatal(err)
			}
			f.ctx = coreV1Context(t)
			before := f.writes()
			tc.run(t, f)
			// What the run left in flight, as at the server's stop.
			flushCtx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			f.folder.Flush(flushCtx)
			if diff := cmp.Diff(tc.wantEvents, f.store.summary()); diff != "" {
				t.Errorf("stored events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWrites, delta(f.writes(), before)); diff != "" {
				t.Errorf("fold writes by result (-want +got):\n%s", diff)
			}
		})
	}
}

// foldFixture is a folder on an in-memory store and a fake clock.
type foldFixture struct {
	folder *eventregistry.Folder
	store  *memStore
	clock  *testingclock.FakeClock
	ctx    context.Context
}

// create sends occurrence i of the series about regarding, for each i.
func (f *foldFixture) create(t *testing.T, regarding string, occurrences ...int) {
	t.Helper()
	for _, i := range occurrences {
		e := occurrence(i)
		e.Name = fmt.Sprintf("%s.%d", regarding, i)
		e.InvolvedObject.Name, e.InvolvedObject.UID = regarding, types.UID("uid-"+regarding)
		if _, err := f.folder.Create(f.ctx, e, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", e.Name, err)
		}
	}
}

func (f *foldFixture) waitFor(t *testing.T, what string, done func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return done(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; stored %+v", what, err, f.store.summary())
	}
}

// writes is the folder's write counter by result.
func (f *foldFixture) writes() map[string]float64 {
	m, err := harness.GatherMetrics(legacyregistry.DefaultGatherer)
	if err != nil {
		panic(err)
	}
	out := map[string]float64{}
	for _, result := range []string{"written", "error", "given_up"} {
		out[result] = m.Value("events_apiserver_fold_writes_total", map[string]string{"result": result})
	}
	return out
}

// delta is after minus before, without the zeros.
func delta(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// storedSummary is what a test checks of a stored event.
type storedSummary struct {
	Name  string
	Count int32
	State core.EventSeriesState
}

// memStore is an events store in memory, as the folder uses it: creates,
// and updates that apply the folder's function to the stored event (or to
// an empty one when it is gone). Updates can be made to fail.
type memStore struct {
	mu        sync.Mutex
	events    map[string]*core.Event
	version   int
	generated int
	failing   int // updates still to fail
	updates   int // update calls
}

func (s *memStore) New() runtime.Object { return &core.Event{} }
func (s *memStore) Destroy()            {}

func (s *memStore) Create(_ context.Context, obj runtime.Object, _ rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := obj.(*core.Event).DeepCopy()
	if e.Name == "" {
		e.Name = fmt.Sprintf("%s%d", e.GenerateName, s.generated)
		s.generated++
	}
	if _, ok := s.events[e.Name]; ok {
		return nil, apierrors.NewAlreadyExists(core.Resource("events"), e.Name)
	}
	s.version++
	e.ResourceVersion = fmt.Sprint(s.version)
	s.events[e.Name] = e
	return e.DeepCopy(), nil
}

func (s *memStore) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc, _ rest.ValidateObjectUpdateFunc, _ bool, _ *metav1.UpdateOptions) (runtime.Object, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updates++
	if s.failing > 0 {
		s.failing--
		return nil, false, apierrors.NewServiceUnavailable("etcd is away")
	}
	old, ok := s.events[name]
	if !ok {
		old = &core.Event{}
	}
	obj, err := objInfo.UpdatedObject(ctx, old.DeepCopy())
	if err != nil {
		return nil, false, err
	}
	e := obj.(*core.Event)
	s.version++
	e.ResourceVersion = fmt.Sprint(s.version)
	s.events[name] = e
	return e.DeepCopy(), !ok, nil
}

// finish marks the series of the stored event name Finished, as the
// series controller does.
func (s *memStore) finish(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.events[name]
	e.Series = &core.EventSeries{Count: e.Count, LastObservedTime: metav1.NewMicroTime(e.LastTimestamp.Time), State: core.EventSeriesStateFinished}
}

func (s *memStore) failUpdates(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = n
}

func (s *memStore) updateCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updates
}

func (s *memStore) has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.events[name]
	return ok
}

func (s *memStore) count(name string) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.events[name]; ok {
		return e.Count
	}
	return 0
}

func (s *memStore) summary() []storedSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []storedSummary
	for _, e := range s.events {
		sum := storedSummary{Name: e.Name, Count: e.Count}
		if e.Series != nil {
			sum.State = e.Series.State
		}
		out = append(out, sum)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
