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

package storage_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/registry/rest"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
)

// storedEvent is what a test checks of a stored event.
type storedEvent struct {
	Name        string // a generated suffix reads "*"
	Count       int32
	SeriesCount int32
	State       core.EventSeriesState
}

// foldHarness drives a folding store on a fake clock.
type foldHarness struct {
	t     *testing.T
	ctx   context.Context
	store *eventstorage.REST
	clk   *testingclock.FakeClock
	// failWrites makes the folder's writes fail with an error (nil: not).
	failWrites func(error)
}

// tryCreate creates the i-th occurrence of the series about object in ctx.
func (h *foldHarness) tryCreate(ctx context.Context, object string, i int) error {
	e := occurrence(i)
	e.Name = fmt.Sprintf("%s.%d", object, i)
	e.InvolvedObject.Name, e.InvolvedObject.UID = object, types.UID("uid-"+object)
	_, err := h.store.Create(ctx, e, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	return err
}

// create creates the i-th occurrence of the series about object and waits
// for its answer: stored as sent, or folded and written at once.
func (h *foldHarness) create(object string, i int) {
	h.t.Helper()
	if err := h.tryCreate(h.ctx, object, i); err != nil {
		h.t.Fatalf("create %s.%d: %v", object, i, err)
	}
}

// fold starts a create that waits for a scheduled write, returns once it
// waits, and returns its answer's error.
func (h *foldHarness) fold(ctx context.Context, object string, i int) <-chan error {
	h.t.Helper()
	waiting := h.store.Folder().Waiting()
	answer := make(chan error, 1)
	go func() { answer <- h.tryCreate(ctx, object, i) }()
	h.until(fmt.Sprintf("create %s.%d waiting", object, i), func() bool { return h.store.Folder().Waiting() > waiting })
	return answer
}

// answered fails unless the create of answer succeeded, within 30s.
func (h *foldHarness) answered(answer <-chan error) {
	h.t.Helper()
	select {
	case err := <-answer:
		if err != nil {
			h.t.Fatalf("folded create: %v", err)
		}
	case <-time.After(30 * time.Second):
		h.t.Fatal("folded create not answered within 30s")
	}
}

// until waits for done, failing with what.
func (h *foldHarness) until(what string, done func() bool) {
	h.t.Helper()
	if err := wait.PollUntilContextTimeout(h.ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return done(), nil
	}); err != nil {
		h.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// stepWhenScheduled moves the clock by d once a flush is scheduled.
func (h *foldHarness) stepWhenScheduled(d time.Duration) {
	h.t.Helper()
	h.until("a scheduled flush", h.clk.HasWaiters)
	h.clk.Step(d)
}

// stored lists the stored events, by name.
func (h *foldHarness) stored() []storedEvent {
	h.t.Helper()
	obj, err := h.store.List(h.ctx, &metainternalversion.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var events []storedEvent
	for _, e := range obj.(*core.EventList).Items {
		name := e.Name
		if i := strings.LastIndex(name, "-"); i > 0 {
			name = name[:i+1] + "*"
		}
		s := storedEvent{Name: name, Count: e.Count}
		if e.Series != nil {
			s.SeriesCount, s.State = e.Series.Count, e.Series.State
		}
		events = append(events, s)
	}
	slices.SortFunc(events, func(a, b storedEvent) int { return strings.Compare(a.Name, b.Name) })
	return events
}

// waitStored waits until the stored events are want.
func (h *foldHarness) waitStored(want ...storedEvent) {
	h.t.Helper()
	var got []storedEvent
	if err := wait.PollUntilContextTimeout(h.ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got = h.stored()
		return cmp.Equal(want, got), nil
	}); err != nil {
		h.t.Fatalf("stored events (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// finish makes a client finish the series of the stored event name.
func (h *foldHarness) finish(name string) {
	h.t.Helper()
	obj, err := h.store.Get(h.ctx, name, &metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	e := obj.(*core.Event)
	e.Series.State = core.EventSeriesStateFinished
	if _, _, err := h.store.Update(h.ctx, name, rest.DefaultUpdatedObjectInfo(e), rest.ValidateAllObjectFunc,
		rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{}); err != nil {
		h.t.Fatalf("finishing %s: %v", name, err)
	}
}

// TestFoldPaths follows folding through the paths a burst can take, on a
// fake clock: the live event finished meanwhile (continuation), a gap
// longer than the window (a new burst), a failed write (its creates
// answered 503 with a Retry-After, their occurrences not counted), a
// request that ends before its write, a window above its bound, and a
// series forgotten to make room for another (written at once).
func TestFoldPaths(t *testing.T) {
	const flushInterval = time.Second
	ongoing, finished := core.EventSeriesStateOngoing, core.EventSeriesStateFinished
	tests := []struct {
		name    string
		folding *eventpolicy.Folding
		run     func(h *foldHarness)
		want    []storedEvent
	}{
		{
			name:    "continuation: occurrences folded into a series finished meanwhile become a new event, and the next create a new burst",
			folding: folding(1, time.Minute, flushInterval, 10),
			run: func(h *foldHarness) {
				h.create("web", 0)
				h.create("web", 1) // folded, written at once
				h.waitStored(storedEvent{"web.0", 2, 2, ongoing})
				h.finish("web.0")
				answer := h.fold(h.ctx, "web", 2) // folded into web.0, which the folder still takes for live
				h.stepWhenScheduled(flushInterval)
				h.answered(answer)
				h.waitStored(storedEvent{"web.0", 2, 2, finished}, storedEvent{"web.0-*", 1, 0, ""})
				h.create("web", 3) // stored: a new burst
			},
			want: []storedEvent{{"web.0", 2, 2, finished}, {"web.0-*", 1, 0, ""}, {"web.3", 1, 0, ""}},
		},
		{
			name:    "window reset: a create after a gap longer than the window starts a new burst",
			folding: folding(1, time.Minute, flushInterval, 10),
			run: func(h *foldHarness) {
				h.create("web", 0)
				h.create("web", 1) // folded
				h.waitStored(storedEvent{"web.0", 2, 2, ongoing})
				h.clk.Step(2 * time.Minute)
				h.create("web", 2) // stored: a new burst
				h.create("web", 3) // folded into web.2, written at once
			},
			want: []storedEvent{{"web.0", 2, 2, ongoing}, {"web.2", 2, 2, ongoing}},
		},
		{
			name:    "failed write: its creates are answered 503 with a Retry-After and their occurrences are not counted",
			folding: folding(1, time.Minute, flushInterval, 10),
			run: func(h *foldHarness) {
				h.create("web", 0)
				h.failWrites(errors.New("write failed"))
				err := h.tryCreate(h.ctx, "web", 1) // folded; its write fails
				if !apierrors.IsServiceUnavailable(err) {
					h.t.Fatalf("create whose write failed: got %v, want 503 ServiceUnavailable", err)
				}
				if delay, ok := apierrors.SuggestsClientDelay(err); !ok || delay != 1 {
					h.t.Errorf("create whose write failed: Retry-After %d (%t), want 1", delay, ok)
				}
				h.failWrites(nil)
				answer := h.fold(h.ctx, "web", 2)
				h.stepWhenScheduled(flushInterval)
				h.answered(answer)
			},
			want: []storedEvent{{"web.0", 2, 2, ongoing}},
		},
		{
			name:    "failed write with a Retry-After of the storage's own (etcd out of space): its creates get that answer",
			folding: folding(1, time.Minute, flushInterval, 10),
			run: func(h *foldHarness) {
				h.create("web", 0)
				noSpace := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusServiceUnavailable,
					Reason: metav1.StatusReasonServiceUnavailable, Message: "etcd is out of space, retry later",
					Details: &metav1.StatusDetails{RetryAfterSeconds: 3}}}
				h.failWrites(noSpace)
				err := h.tryCreate(h.ctx, "web", 1)
				var status apierrors.APIStatus
				if !errors.As(err, &status) {
					h.t.Fatalf("create whose write failed: got %v, want the storage's 503", err)
				}
				if diff := cmp.Diff(noSpace.ErrStatus, status.Status()); diff != "" {
					h.t.Errorf("answer of a create whose write failed (-storage's +answered):\n%s", diff)
				}
			},
			want: []storedEvent{{"web.0", 1, 0, ""}},
		},
		{
			name:    "request ended: a create whose request ends before its write is answered 504; its occurrence is written",
			folding: folding(1, time.Minute, flushInterval, 10),
			run: func(h *foldHarness) {
				h.create("web", 0)
				h.create("web", 1) // folded
				ctx, cancel := context.WithCancel(h.ctx)
				answer := h.fold(ctx, "web", 2)
				cancel()
				if err := <-answer; !apierrors.IsTimeout(err) {
					h.t.Errorf("create whose request ended: got %v, want 504 Timeout", err)
				}
				h.stepWhenScheduled(flushInterval)
			},
			want: []storedEvent{{"web.0", 3, 3, ongoing}},
		},
		{
			name:    "bounded window: a flushInterval above a second is taken as a second",
			folding: folding(1, time.Minute, 30*time.Minute, 10),
			run: func(h *foldHarness) {
				h.create("web", 0)
				h.create("web", 1) // folded, written at once
				answer := h.fold(h.ctx, "web", 2)
				h.stepWhenScheduled(eventpolicy.MaxFoldFlushInterval)
				h.answered(answer)
			},
			want: []storedEvent{{"web.0", 3, 3, ongoing}},
		},
		{
			name:    "eviction: a series forgotten for another has its waiting creates written at once",
			folding: folding(1, time.Minute, flushInterval, 1),
			run: func(h *foldHarness) {
				h.create("web", 0)
				h.create("web", 1)                // folded, written at once
				answer := h.fold(h.ctx, "web", 2) // waits for the window; the clock does not move
				h.create("db", 0)                 // another series: web's is forgotten
				h.answered(answer)
			},
			want: []storedEvent{{"db.0", 1, 0, ""}, {"web.0", 3, 3, ongoing}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			h := &foldHarness{t: t, ctx: coreV1Context(t), store: newStore(t, tt.folding, clk), clk: clk}
			_, h.failWrites = h.store.Folder().InterceptWrites()
			tt.run(h)
			h.waitStored(tt.want...)
		})
	}
}
