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

package apiserver

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/archive/archiver"
	"github.com/kube-events/events-apiserver/pkg/archive/victorialogs"
	"github.com/kube-events/events-apiserver/pkg/continuetoken"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	"github.com/kube-events/events-apiserver/pkg/registry/event/history"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
	"github.com/kube-events/events-apiserver/test/harness"
)

// TestHistoryPageReadsItsOwnLiveEvents builds the events store with
// history as the server does (the watch cache fed through the timeline,
// on a real etcd, the embedded archive) over 100,000 live events, and
// lists pages of 100 with a selector that names no indexed field: each
// page reads about its own live events from the timeline (the matching
// half of the events it walks), not the 50,000 that match, and answers
// what the whole store and the archive hold, merged: the archive's events
// that are no longer live in their place, the archived older states of
// live events not at all, and the changes made just before the first page.
//
// It runs over either of the store's caches, the compact live store and
// the watch cache, which feed the timeline alike.
func TestHistoryPageReadsItsOwnLiveEvents(t *testing.T) {
	for _, cache := range eventstorage.StoreCaches {
		t.Run(string(cache), func(t *testing.T) { testHistoryPageReadsItsOwnLiveEvents(t, cache) })
	}
}

func testHistoryPageReadsItsOwnLiveEvents(t *testing.T, cache eventstorage.StoreCache) {
	const (
		namespace  = "shop"
		liveEvents = 100_000
		pageSize   = 100
		gone       = 10 // archived events no longer live
	)
	ctx := genericapirequest.WithNamespace(t.Context(), namespace)
	etcdClient := testserver.RunEtcd(t, nil)
	resourceConfig := eventsStorageConfig(t, etcdClient.Endpoints())
	codec := resourceConfig.Codec

	// One event every 10 ms back from a minute ago; every other one a
	// Warning. Written straight to etcd, so that the watch cache lists
	// them when it starts, as after a restart.
	base := time.Now().Add(-time.Minute)
	event := func(name string, observed time.Time, typ string) *core.Event {
		return &core.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID("uid-" + name)},
			InvolvedObject:      core.ObjectReference{Kind: "Pod", Namespace: namespace, Name: "web-" + name},
			Reason:              "BackOff",
			Type:                typ,
			EventTime:           metav1.NewMicroTime(observed),
			ReportingController: "kubelet", ReportingInstance: "node-1", Action: "Restarting",
		}
	}
	var want []*core.Event // the Warnings, live and gone, newest first
	var ops []clientv3.Op
	put := func(ops []clientv3.Op) {
		if _, err := etcdClient.Txn(t.Context()).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range liveEvents {
		typ := core.EventTypeNormal
		if i%2 == 0 {
			typ = core.EventTypeWarning
		}
		e := event(fmt.Sprintf("e-%06d", i), base.Add(-time.Duration(i)*10*time.Millisecond), typ)
		data, err := runtime.Encode(codec, e)
		if err != nil {
			t.Fatal(err)
		}
		if ops = append(ops, clientv3.OpPut("/registry/events/"+namespace+"/"+e.Name, string(data))); len(ops) == 128 {
			put(ops)
			ops = nil
		}
		if typ == core.EventTypeWarning {
			want = append(want, e)
		}
	}
	put(ops)

	// The archive: events that are no longer live, among the newest, and
	// older states of live ones.
	a, err := victorialogs.OpenEmbedded(t.Context(), victorialogs.EmbeddedConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	var records []archive.Record
	for k := range gone {
		e := event(fmt.Sprintf("gone-%d", k), base.Add(-time.Duration(20*k+5)*10*time.Millisecond-5*time.Millisecond), core.EventTypeWarning)
		records = append(records, record(t, codec, e, int64(k+1)))
		want = append(want, e)
	}
	for i := 0; i < gone; i += 2 {
		older := event(fmt.Sprintf("e-%06d", i), base.Add(-30*time.Minute), core.EventTypeWarning)
		records = append(records, record(t, codec, older, int64(100+i)))
	}
	if err := a.Append(t.Context(), records); err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	timeline := eventstorage.NewTimeline()
	store, err := eventstorage.NewREST(eventregistry.NewStrategy(Scheme), eventstorage.Options{
		RESTOptions: fixedRESTOptions{StorageConfig: resourceConfig, ResourcePrefix: "events", DeleteCollectionWorkers: 1},
		TTL:         time.Hour, Cache: cache, Timeline: timeline,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.DestroyFunc)
	events := history.New(store, a, codec, timeline, continuetoken.NewWithKey(make([]byte, continuetoken.KeySize)))
	// The store's cache lists etcd when it starts.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return store.Storage.Storage.ReadinessCheck() == nil, nil
	}); err != nil {
		t.Fatalf("the store's cache did not list etcd: %v", err)
	}

	// Changes after the watch cache listed reach the timeline through its
	// watch, and a page right after them sees them: newer events, an event
	// observed again in its new place, and deleted ones gone.
	ops = nil
	for k := range gone {
		e := event(fmt.Sprintf("new-%d", k), base.Add(time.Duration(k+1)*10*time.Millisecond), core.EventTypeWarning)
		data, err := runtime.Encode(codec, e)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, clientv3.OpPut("/registry/events/"+namespace+"/"+e.Name, string(data)))
		want = append(want, e)
	}
	// e-000006 observed again: it moves to the top.
	moved := event("e-000006", base.Add(time.Second), core.EventTypeWarning)
	data, err := runtime.Encode(codec, moved)
	if err != nil {
		t.Fatal(err)
	}
	ops = append(ops, clientv3.OpPut("/registry/events/"+namespace+"/"+moved.Name, string(data)))
	want = slices.DeleteFunc(want, func(e *core.Event) bool { return e.Name == moved.Name })
	want = append(want, moved)
	deleted := map[string]bool{"e-000002": true, "e-000004": true}
	for name := range deleted {
		ops = append(ops, clientv3.OpDelete("/registry/events/"+namespace+"/"+name))
	}
	put(ops)
	want = slices.DeleteFunc(want, func(e *core.Event) bool { return deleted[e.Name] })
	slices.SortFunc(want, func(a, b *core.Event) int {
		return cmp.Or(core.LastObserved(b).Compare(core.LastObserved(a)), cmp.Compare(a.UID, b.UID))
	})

	liveReads := func() float64 {
		m, err := harness.GatherMetrics(legacyregistry.DefaultGatherer)
		if err != nil {
			t.Fatal(err)
		}
		return m.Histogram("events_apiserver_history_live_events_read", nil).GetAggregatedSampleSum() // read in order or listed
	}
	options := &metainternalversion.ListOptions{
		FieldSelector: fields.ParseSelectorOrDie("type=Warning,history.since=1h"),
		Limit:         pageSize,
	}
	for page := range 3 {
		before := liveReads()
		obj, err := events.List(ctx, options)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		list := obj.(*core.EventList)
		var got, wantNames []string
		for _, e := range list.Items {
			got = append(got, e.Name)
		}
		for _, e := range want[page*pageSize : (page+1)*pageSize] {
			wantNames = append(wantNames, e.Name)
		}
		if diff := gocmp.Diff(wantNames, got); diff != "" {
			t.Fatalf("page %d (-want +got):\n%s", page, diff)
		}
		// The walk reads the page's Warnings, the Normals between them and
		// one more of each to know the page is not the last.
		if reads, bound := liveReads()-before, float64(2*(pageSize+1)); reads > bound {
			t.Errorf("page %d read %.0f live events, want at most %.0f (the live store holds %d)", page, reads, bound, liveEvents)
		}
		if list.Continue == "" {
			t.Fatalf("page %d has no continue token", page)
		}
		options.Continue = list.Continue
	}
}

// record is the archive record of an event's state at revision.
func record(t *testing.T, codec runtime.Codec, e *core.Event, revision int64) archive.Record {
	t.Helper()
	r, err := archiver.NewRecord(e, codec, revision)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestClientReadsLeaveTheTimelineWhole pages through the events, lists
// them at an exact resourceVersion and reads a page past the first with a
// selector, as kubectl and EventSummary do, over either of the store's
// caches: the reads the cache hands to etcd are clients', and the
// timeline, which orders what the cache's own list and watch of etcd see,
// still holds every live event after them.
func TestClientReadsLeaveTheTimelineWhole(t *testing.T) {
	for _, cache := range eventstorage.StoreCaches {
		t.Run(string(cache), func(t *testing.T) { testClientReadsLeaveTheTimelineWhole(t, cache) })
	}
}

func testClientReadsLeaveTheTimelineWhole(t *testing.T, cache eventstorage.StoreCache) {
	const namespace, live = "shop", 300
	ctx := genericapirequest.WithNamespace(t.Context(), namespace)
	etcdClient := testserver.RunEtcd(t, nil)
	resourceConfig := eventsStorageConfig(t, etcdClient.Endpoints())
	timeline := eventstorage.NewTimeline()
	store, err := eventstorage.NewREST(eventregistry.NewStrategy(Scheme), eventstorage.Options{
		RESTOptions: fixedRESTOptions{StorageConfig: resourceConfig, ResourcePrefix: "events", DeleteCollectionWorkers: 1},
		TTL:         time.Hour, Cache: cache, Timeline: timeline,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.DestroyFunc)
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return store.Storage.Storage.ReadinessCheck() == nil, nil
	}); err != nil {
		t.Fatalf("the store's cache did not list etcd: %v", err)
	}
	now := time.Now()
	for i := range live {
		e := &core.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("e-%03d", i), Namespace: namespace},
			InvolvedObject: core.ObjectReference{Kind: "Pod", Namespace: namespace, Name: fmt.Sprintf("web-%d", i%3)},
			Reason:         "BackOff", Type: core.EventTypeWarning, Action: "Restarting",
			EventTime:           metav1.NewMicroTime(now.Add(-time.Duration(i) * time.Second)),
			ReportingController: "kubelet", ReportingInstance: "node-1",
		}
		if _, err := store.Create(ctx, e, nil, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitTimeline := func(when string) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return timeline.Len() == live, nil
		}); err != nil {
			t.Fatalf("%s: the timeline holds %d events, want %d", when, timeline.Len(), live)
		}
	}
	waitTimeline("after the creates")

	list := func(options *metainternalversion.ListOptions) *core.EventList {
		t.Helper()
		obj, err := store.List(ctx, options)
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*core.EventList)
	}
	// Pages of 100, the first from the cache, the others from etcd.
	options := &metainternalversion.ListOptions{Limit: 100}
	pages := 0
	for {
		page := list(options)
		pages++
		if page.Continue == "" {
			break
		}
		options.Continue = page.Continue
	}
	if pages < 3 {
		t.Fatalf("%d pages, want 3", pages)
	}
	// At an exact resourceVersion, and a later page with a selector.
	all := list(&metainternalversion.ListOptions{})
	list(&metainternalversion.ListOptions{ResourceVersion: all.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: 50})
	first := list(&metainternalversion.ListOptions{Limit: 10, FieldSelector: fields.OneTermEqualSelector("regarding.name", "web-1")})
	list(&metainternalversion.ListOptions{Limit: 500, Continue: first.Continue, FieldSelector: fields.OneTermEqualSelector("regarding.name", "web-1")})
	if got := timeline.Len(); got != live {
		t.Errorf("after clients' reads the timeline holds %d events, want %d", got, live)
	}
}
