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
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apiserver"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
)

type restOptionsGetter generic.RESTOptions

func (o restOptionsGetter) GetRESTOptions(schema.GroupResource, runtime.Object) (generic.RESTOptions, error) {
	return generic.RESTOptions(o), nil
}

// newStore is the events store on a fresh etcd, folding with folding (nil:
// no folding) on clk.
func newStore(t *testing.T, folding *eventpolicy.Folding, clk clock.WithDelayedExecution) *eventstorage.REST {
	t.Helper()
	server, config := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	t.Cleanup(func() { server.Terminate(t) })
	factory := apiserver.NewStorageFactory(*config, apiserver.StorageMediaType, compatibility.DefaultBuildEffectiveVersion())
	resourceConfig, err := factory.NewConfig(core.Resource("events"), &core.Event{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := eventstorage.NewRESTWithClock(eventregistry.NewStrategy(apiserver.Scheme), eventstorage.Options{
		RESTOptions: restOptionsGetter{StorageConfig: resourceConfig, ResourcePrefix: "events", DeleteCollectionWorkers: 1},
		TTL:         time.Hour, Folding: folding,
	}, clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.DestroyFunc)
	return store
}

// folding is a folding policy.
func folding(after int32, window, flushInterval time.Duration, cacheSize int32) *eventpolicy.Folding {
	return &eventpolicy.Folding{Enabled: true, After: after, Window: metav1.Duration{Duration: window},
		FlushInterval: metav1.Duration{Duration: flushInterval}, CacheSize: cacheSize}
}

// coreV1Context is the context of a core/v1 request in namespace ns.
func coreV1Context(t *testing.T) context.Context {
	ctx := genericapirequest.WithNamespace(t.Context(), "ns")
	return genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "create", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "events"})
}

// occurrence is what client-go's tools/record creates for one occurrence.
func occurrence(i int) *core.Event {
	now := metav1.Now()
	return &core.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("web.%d", i), Namespace: "ns"},
		InvolvedObject: core.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "web", UID: "uid-web"},
		Reason:         "BackOff", Message: fmt.Sprintf("attempt %d", i), Type: core.EventTypeWarning,
		Source: core.EventSource{Component: "kubelet", Host: "node-1"}, Count: 1, FirstTimestamp: now, LastTimestamp: now,
	}
}

// TestFoldGroupCommit: after the first creates of a burst, an isomorphic
// create is answered only once the write that holds its occurrence
// succeeded, with the event as that write stored it. The first fold is
// written at once; the creates that arrive within the window after a write
// started wait for the end of the window and are written together, in one
// write; a shutdown (Flush) writes the waiting creates at once.
func TestFoldGroupCommit(t *testing.T) {
	const window = time.Second
	clk := testingclock.NewFakeClock(time.Now())
	store := newStore(t, folding(2, time.Minute, window, 10), clk)
	folder := store.Folder()
	writes, _ := folder.InterceptWrites()
	ctx := coreV1Context(t)
	create := func(i int) (*core.Event, error) {
		obj, err := store.Create(ctx, occurrence(i), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("create %d: %w", i, err)
		}
		return obj.(*core.Event), nil
	}
	// createAll creates the occurrences of ids at once and waits until
	// each is answered or waits for a write.
	createAll := func(ids ...int) <-chan *core.Event {
		t.Helper()
		answers := make(chan *core.Event, len(ids))
		waiting := folder.Waiting()
		for _, i := range ids {
			go func() {
				got, err := create(i)
				if err != nil {
					t.Error(err)
				}
				answers <- got
			}()
		}
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return folder.Waiting()+int32(len(answers)) >= waiting+int32(len(ids)), nil
		}); err != nil {
			t.Fatalf("creates %v neither answered nor waiting", ids)
		}
		return answers
	}
	// stored is what a read of the live event finds.
	stored := func() *core.Event {
		t.Helper()
		obj, err := store.Get(ctx, "web.1", &metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*core.Event)
	}
	// answered waits for n answers and checks that each is the live event
	// as stored then, with count occurrences.
	answered := func(answers <-chan *core.Event, n int, count int32) {
		t.Helper()
		var got []*core.Event
		for range n {
			got = append(got, <-answers)
		}
		want := stored()
		if want.Count != count || want.Series == nil || want.Series.Count != count || want.Series.State != core.EventSeriesStateOngoing {
			t.Fatalf("stored: count %d, series %+v; want count %d, Ongoing", want.Count, want.Series, count)
		}
		for _, answer := range got {
			if diff := cmp.Diff(want, answer); diff != "" {
				t.Errorf("answer of a folded create (-stored +answered):\n%s", diff)
			}
		}
	}

	for i := range 2 {
		got, err := create(i)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != fmt.Sprintf("web.%d", i) || got.Series != nil {
			t.Fatalf("create %d of the burst: answered %s with series %+v, want it stored as sent", i, got.Name, got.Series)
		}
	}
	if got := writes(); got != 0 {
		t.Fatalf("%d writes of folded occurrences before the first fold", got)
	}

	// The first fold is written at once: no clock step.
	answered(createAll(2), 1, 2)
	if _, err := store.Get(ctx, "web.2", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("folded web.2: got %v, want NotFound", err)
	}

	// Three creates within the window wait for its end, then one write.
	answers := createAll(3, 4, 5)
	if got := folder.Waiting(); got != 3 {
		t.Fatalf("%d folded creates waiting within the window, want 3", got)
	}
	if got := stored().Count; got != 2 {
		t.Errorf("stored count %d before the end of the window, want 2", got)
	}
	clk.Step(window)
	answered(answers, 3, 5)
	if got := writes(); got != 2 {
		t.Errorf("%d writes for 4 folded creates, want 2: the first, and one for the three within its window", got)
	}

	// A shutdown writes the waiting creates without waiting for the window.
	answers = createAll(6)
	folder.Flush(ctx)
	answered(answers, 1, 6)
}

// TestFoldConcurrentCreates: writers storming one series on a real clock.
// Every answered create's occurrence is in the stored count, each folded
// create is answered with the event as the write that held it stored it
// (the answers of one write are that write's occurrences), and the writes
// are at most one per window.
func TestFoldConcurrentCreates(t *testing.T) {
	const (
		after   = 3
		window  = 100 * time.Millisecond
		writers = 16
		creates = 25 // per writer
	)
	store := newStore(t, folding(after, time.Minute, window, 10), clock.RealClock{})
	writes, _ := store.Folder().InterceptWrites()
	ctx := coreV1Context(t)

	// The first creates of the burst, stored as sent.
	for i := range after {
		if _, err := store.Create(ctx, occurrence(i), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu      sync.Mutex
		answers = map[string][]int32{} // counts answered, by resourceVersion
	)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range creates {
				obj, err := store.Create(ctx, occurrence(after+w*creates+i), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				e := obj.(*core.Event)
				mu.Lock()
				answers[e.ResourceVersion] = append(answers[e.ResourceVersion], e.Count)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)

	obj, err := store.List(ctx, &metainternalversion.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var occurrences int32
	for _, e := range obj.(*core.EventList).Items {
		occurrences += e.Count
	}
	if want := int32(after + writers*creates); occurrences != want {
		t.Errorf("the store counts %d occurrences, want the %d creates answered", occurrences, want)
	}

	// Each write stored its occurrences on top of the previous one's: the
	// answers of a write are as many as the count it added.
	type batch struct{ Count, Answers int32 }
	var batches []batch
	for rv, counts := range answers {
		for _, c := range counts[1:] {
			if c != counts[0] {
				t.Errorf("resourceVersion %s answered with counts %v, want one count", rv, counts)
			}
		}
		batches = append(batches, batch{counts[0], int32(len(counts))})
	}
	slices.SortFunc(batches, func(a, b batch) int { return int(a.Count - b.Count) })
	previous := int32(1) // the last create stored as sent is the live event
	for _, b := range batches {
		if diff := cmp.Diff(batch{previous + b.Answers, b.Answers}, b); diff != "" {
			t.Errorf("write after count %d (-want +got):\n%s", previous, diff)
		}
		previous = b.Count
	}

	// Writes start a window apart at least, the first at once.
	bound := int32(math.Ceil(float64(elapsed)/float64(window))) + 1
	t.Logf("%d folded creates from %d writers in %v: %d writes (at most %d)", writers*creates, writers, elapsed.Round(time.Millisecond), writes(), bound)
	if got := writes(); got > bound || int(got) != len(batches) {
		t.Errorf("%d writes, %d distinct answers; want one answer per write, and at most %d writes in %v with a window of %v",
			got, len(batches), bound, elapsed, window)
	}
}

// TestFoldOnlySingletons: creates that count themselves (a series, a count
// above 1), and dry runs, are stored as sent even in a hot series.
func TestFoldOnlySingletons(t *testing.T) {
	store := newStore(t, folding(1, time.Minute, time.Second, 10), testingclock.NewFakeClock(time.Now()))
	ctx := coreV1Context(t)
	if _, err := store.Create(ctx, occurrence(0), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	counted := occurrence(1)
	counted.Count = 3
	dryRun := occurrence(2)
	for _, tt := range []struct {
		name    string
		event   *core.Event
		options *metav1.CreateOptions
	}{
		{"count above 1", counted, &metav1.CreateOptions{}},
		{"dry run", dryRun, &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := store.Create(ctx, tt.event, rest.ValidateAllObjectFunc, tt.options)
			if err != nil {
				t.Fatal(err)
			}
			if got := obj.(*core.Event).Name; got != tt.event.Name {
				t.Errorf("answered %s, want %s stored as sent", got, tt.event.Name)
			}
		})
	}
}
