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

package livestore_test

// The history watches resume from is bounded by Config.HistoryWindow and
// Config.HistoryBytes: a watch from a resourceVersion the history still
// covers gets every change since, one from before it 410 Expired.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/livestore"
)

func TestHistoryBytes(t *testing.T) {
	const (
		writes = 64
		// Each write's object holds about 1 KiB.
		objectBytes = 1 << 10
	)
	tests := []struct {
		name         string
		historyBytes int
		// resumable is how many of the last writes a watch must
		// resume before; expired, whether a watch from the first write
		// must answer 410 Expired.
		resumable int
		expired   bool
	}{
		{name: "default", historyBytes: 0, resumable: writes - 1},
		{name: "16KiB", historyBytes: 16 << 10, resumable: 4, expired: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, withHistoryBytes(tt.historyBytes))
			ctx := context.Background()
			var written []*example.Pod
			for i := 0; i < writes; i++ {
				pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{
					Namespace:   "history",
					Name:        fmt.Sprintf("pod-%d", i),
					Annotations: map[string]string{"fill": strings.Repeat("x", objectBytes)},
				}}
				out := &example.Pod{}
				if err := env.store.Create(ctx, podKey(pod), pod, out, 0); err != nil {
					t.Fatal(err)
				}
				written = append(written, out)
			}
			// A consistent list: the store has seen every write.
			if err := env.store.GetList(ctx, resourcePrefix, storage.ListOptions{Predicate: storage.Everything, Recursive: true}, &example.PodList{}); err != nil {
				t.Fatal(err)
			}

			from := written[writes-1-tt.resumable]
			w, err := env.store.Watch(ctx, "/pods/history", storage.ListOptions{ResourceVersion: from.ResourceVersion, Predicate: storage.Everything, Recursive: true})
			if err != nil {
				t.Fatalf("watch from %s: %v", from.ResourceVersion, err)
			}
			defer w.Stop()
			var want, got []watch.Event
			for _, pod := range written[writes-tt.resumable:] {
				want = append(want, watch.Event{Type: watch.Added, Object: pod})
			}
			timeout := time.After(wait.ForeverTestTimeout)
			for len(got) < len(want) {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						t.Fatalf("watch from %s closed after %d events", from.ResourceVersion, len(got))
					}
					got = append(got, watch.Event{Type: ev.Type, Object: unwrap(ev.Object)})
				case <-timeout:
					t.Fatalf("%d events after %v from %s, want %d", len(got), wait.ForeverTestTimeout, from.ResourceVersion, len(want))
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events from %s (-want +got):\n%s", from.ResourceVersion, diff)
			}

			first := written[0].ResourceVersion
			w0, err := env.store.Watch(ctx, "/pods/history", storage.ListOptions{ResourceVersion: first, Predicate: storage.Everything, Recursive: true})
			if err != nil {
				if !tt.expired || !apierrors.IsResourceExpired(err) {
					t.Fatalf("watch from %s: %v", first, err)
				}
				return
			}
			defer w0.Stop()
			select {
			case ev := <-w0.ResultChan():
				isExpired := ev.Type == watch.Error && apierrors.IsResourceExpired(apierrors.FromObject(ev.Object))
				if isExpired != tt.expired {
					what := fmt.Sprintf("%T", ev.Object)
					if m, err := metaAccessor(unwrap(ev.Object)); err == nil {
						what = fmt.Sprintf("%s at %s", m.GetName(), m.GetResourceVersion())
					}
					t.Errorf("watch from the first write %s: first event %s (%s), want expired %v", first, ev.Type, what, tt.expired)
				}
			case <-time.After(wait.ForeverTestTimeout):
				t.Fatalf("watch from %s: no event in %v", first, wait.ForeverTestTimeout)
			}
		})
	}
}

// The history keeps the changes of its window, however many, and lets go
// of those past it: a watch resumes from a change inside the window, and
// answers 410 Expired from one before.
func TestHistoryWindow(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	env := newControlledEnv(t, func(c *livestore.Config) {
		c.Clock = clk
		c.HistoryWindow = 10 * time.Second
	})
	ctx := context.Background()
	early := createPod(ctx, t, env.etcd, "ns", "early", "node-1", nil)
	waitStoreHolds(t, env.store, 1)
	clk.Step(6 * time.Second)
	createPod(ctx, t, env.etcd, "ns", "late", "node-1", nil)
	waitStoreHolds(t, env.store, 2)
	clk.Step(6 * time.Second) // early is 12 s old, late 6 s

	resume := func(from *example.Pod) (watch.Event, error) {
		w, err := env.store.Watch(ctx, resourcePrefix, storage.ListOptions{ResourceVersion: from.ResourceVersion, Recursive: true, Predicate: storage.Everything})
		if err != nil {
			return watch.Event{}, err
		}
		defer w.Stop()
		e, _ := next(t, w)
		return e, nil
	}
	// The bookmark ticker lets go of the history past the window.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		clk.Step(time.Second / 10)
		e, err := resume(createdBefore(early))
		return err == nil && e.Type == watch.Error && apierrors.IsResourceExpired(apierrors.FromObject(e.Object)), nil
	}); err != nil {
		t.Fatalf("a watch from before a change past the window was not answered 410: %v", err)
	}
	e, err := resume(early)
	if err != nil {
		t.Fatal(err)
	}
	if pod, ok := e.Object.(*example.Pod); e.Type != watch.Added || !ok || pod.Name != "late" {
		t.Errorf("watch from %s, inside the window: %s %v, want ADDED late", early.ResourceVersion, e.Type, e.Object)
	}
}

// createdBefore is a Pod at the revision before pod's.
func createdBefore(pod *example.Pod) *example.Pod {
	rv, _ := strconv.ParseUint(pod.ResourceVersion, 10, 64)
	before := pod.DeepCopy()
	before.ResourceVersion = strconv.FormatUint(rv-1, 10)
	return before
}

// With the default configuration, a watch resumes from before thousands
// of changes of a few seconds (10 MiB of states): the window, not a ring
// of a few MiB, bounds what it can resume from.
func TestHistoryHoldsThousandsOfChanges(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	const pods = 5000
	annotations := map[string]string{"pad": strings.Repeat("x", 2000)}
	first := createPod(ctx, t, env.storage, "ns", "pod-0000", "node-1", annotations)
	for i := 1; i < pods; i++ {
		createPod(ctx, t, env.storage, "ns", fmt.Sprintf("pod-%04d", i), "node-1", annotations)
	}
	waitStoreHolds(t, env.store, pods)
	w, err := env.store.Watch(ctx, resourcePrefix, storage.ListOptions{ResourceVersion: first.ResourceVersion, Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := 1; i < pods; i++ {
		e, ok := next(t, w)
		if !ok {
			t.Fatalf("watch ended after %d changes", i-1)
		}
		if pod, isPod := e.Object.(*example.Pod); e.Type != watch.Added || !isPod || pod.Name != fmt.Sprintf("pod-%04d", i) {
			t.Fatalf("change %d: %s %v", i, e.Type, e.Object)
		}
	}
}
