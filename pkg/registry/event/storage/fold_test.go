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
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	store, err := eventstorage.NewRESTWithClock(apiserver.Scheme, restOptionsGetter{
		StorageConfig: resourceConfig, Decorator: generic.UndecoratedStorage, ResourcePrefix: "events", DeleteCollectionWorkers: 1,
	}, time.Hour, folding, clk)
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

// TestFoldBoundsWrites: after the first creates of a burst, isomorphic
// creates are answered with the live event and written at most once per
// flush interval; a shutdown flush writes what is pending.
func TestFoldBoundsWrites(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	store := newStore(t, folding(2, time.Minute, 10*time.Second, 10), clk)
	folder := store.Folder()
	ctx := coreV1Context(t)
	create := func(i int) *core.Event {
		t.Helper()
		obj, err := store.Create(ctx, occurrence(i), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		return obj.(*core.Event)
	}
	stored := func() *core.Event {
		t.Helper()
		obj, err := store.Get(ctx, "web.1", &metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*core.Event)
	}
	waitForCount := func(count int32) *core.Event {
		t.Helper()
		var got *core.Event
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			got = stored()
			return got.Count == count, nil
		})
		if err != nil {
			t.Fatalf("waiting for stored count %d: got %d", count, got.Count)
		}
		return got
	}

	for i := range 2 {
		if got := create(i); got.Name != fmt.Sprintf("web.%d", i) || got.Series != nil {
			t.Fatalf("create %d of the burst: answered %s with series %+v, want it stored as sent", i, got.Name, got.Series)
		}
	}
	for i := 2; i < 5; i++ {
		got := create(i)
		if got.Name != "web.1" || got.Count != int32(i) || got.Series == nil || got.Series.Count != int32(i) ||
			got.Series.State != core.EventSeriesStateOngoing {
			t.Fatalf("create %d: answered %s, count %d, series %+v; want web.1, count %d, Ongoing", i, got.Name, got.Count, got.Series, i)
		}
		if _, err := store.Get(ctx, fmt.Sprintf("web.%d", i), &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("folded web.%d: got %v, want NotFound", i, err)
		}
	}

	clk.Step(0) // the first fold is written at once
	first := waitForCount(4)
	if first.Series == nil || first.Series.Count != 4 || first.Series.State != core.EventSeriesStateOngoing {
		t.Errorf("stored series: %+v, want count 4, Ongoing", first.Series)
	}

	create(5)
	// The next flush is scheduled FlushInterval after the first, by the
	// first flush once its write returns or by this fold if that came
	// first; the first flush's goroutine may still be finishing, so the
	// clock moves only once the flush is scheduled.
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return clk.HasWaiters(), nil
	}); err != nil {
		t.Fatal("no flush scheduled after the fifth create")
	}
	clk.Step(5 * time.Second)
	if got := stored(); got.ResourceVersion != first.ResourceVersion {
		t.Errorf("written again %v after the last write, before the flush interval", 5*time.Second)
	}
	clk.Step(5 * time.Second)
	waitForCount(5)

	create(6)
	folder.Flush(ctx)
	if got := stored(); got.Count != 6 || got.Series.Count != 6 {
		t.Errorf("after the shutdown flush: count %d, series %+v; want 6", got.Count, got.Series)
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
