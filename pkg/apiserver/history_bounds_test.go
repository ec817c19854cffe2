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
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/archive/victorialogs"
	"github.com/kube-events/events-apiserver/pkg/continuetoken"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	"github.com/kube-events/events-apiserver/pkg/registry/event/history"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
	"github.com/kube-events/events-apiserver/test/harness"
)

// historyFixture is the events store with history as the server builds
// it, on a real etcd and the embedded archive, behind a watchedArchive.
type historyFixture struct {
	events  *history.REST
	archive *watchedArchive
	codec   runtime.Codec
	etcd    *clientv3.Client
}

func newHistoryFixture(t *testing.T) historyFixture {
	t.Helper()
	etcdClient := testserver.RunEtcd(t, nil)
	resourceConfig := eventsStorageConfig(t, etcdClient.Endpoints())
	a, err := victorialogs.OpenEmbedded(t.Context(), victorialogs.EmbeddedConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	timeline := eventstorage.NewTimeline()
	store, err := eventstorage.NewREST(eventregistry.NewStrategy(Scheme), eventstorage.Options{
		RESTOptions: fixedRESTOptions{StorageConfig: resourceConfig, ResourcePrefix: "events", DeleteCollectionWorkers: 1},
		TTL:         time.Hour, Cache: eventstorage.CompactStore, Timeline: timeline,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.DestroyFunc)
	watched := &watchedArchive{Archive: a, gates: map[string]chan struct{}{}, entered: make(chan string, 16)}
	events := history.New(store, watched, resourceConfig.Codec, timeline, continuetoken.NewWithKey(make([]byte, continuetoken.KeySize)))
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return store.Storage.Storage.ReadinessCheck() == nil, nil
	}); err != nil {
		t.Fatalf("the store's cache did not list etcd: %v", err)
	}
	return historyFixture{events: events, archive: watched, codec: resourceConfig.Codec, etcd: etcdClient.Client}
}

// watchedArchive is the archive, counting the records its queries return
// and holding the queries of gated users until their gate closes.
type watchedArchive struct {
	archive.Archive
	mu      sync.Mutex
	gates   map[string]chan struct{}
	entered chan string
	records atomic.Int64
}

func (w *watchedArchive) gate(user string) func() {
	gate := make(chan struct{})
	w.mu.Lock()
	w.gates[user] = gate
	w.mu.Unlock()
	return func() { close(gate) }
}

func (w *watchedArchive) Query(ctx context.Context, q archive.Query) (archive.Page, error) {
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		w.mu.Lock()
		gate := w.gates[u.GetName()]
		w.mu.Unlock()
		if gate != nil {
			w.entered <- u.GetName()
			<-gate
		}
	}
	page, err := w.Archive.Query(ctx, q)
	w.records.Add(int64(len(page.Records)))
	return page, err
}

// asUser is a request of name in namespace.
func asUser(name, namespace string) context.Context {
	ctx := genericapirequest.WithNamespace(context.Background(), namespace)
	return genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: name, Groups: []string{user.AllAuthenticated}})
}

// historyEvent is a Warning about a Pod in namespace, observed at observed.
func historyEvent(namespace, name string, observed time.Time) *core.Event {
	return &core.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID("uid-" + name)},
		InvolvedObject:      core.ObjectReference{Kind: "Pod", Namespace: namespace, Name: "web-" + name},
		Reason:              "BackOff",
		Type:                core.EventTypeWarning,
		EventTime:           metav1.NewMicroTime(observed),
		ReportingController: "kubelet", ReportingInstance: "node-1", Action: "Restarting",
	}
}

// TestHistoryFloodLeavesOtherUsersTheirShare: a user who sends as many
// history lists at once as the replica answers, each held in the archive,
// holds MaxInFlightPerUser slots and is refused the rest with 429, while a
// second user's history list is answered.
func TestHistoryFloodLeavesOtherUsersTheirShare(t *testing.T) {
	f := newHistoryFixture(t)
	release := f.archive.gate("flooder")
	options := func() *metainternalversion.ListOptions {
		return &metainternalversion.ListOptions{FieldSelector: fields.ParseSelectorOrDie("history.since=1h"), Limit: 10}
	}
	errs := make(chan error, history.MaxInFlight)
	for range history.MaxInFlight {
		go func() {
			_, err := f.events.List(asUser("flooder", "a"), options())
			errs <- err
		}()
	}
	// Each of the flooder's lists either reaches the archive, where it
	// waits, or is refused.
	held, refused := 0, 0
	for range history.MaxInFlight {
		select {
		case <-f.archive.entered:
			held++
		case err := <-errs:
			if !apierrors.IsTooManyRequests(err) {
				t.Fatalf("a flooder's list: %v, want it held or refused with 429", err)
			}
			refused++
		}
	}
	if held != history.MaxInFlightPerUser {
		t.Errorf("the flooder holds %d slots, want %d", held, history.MaxInFlightPerUser)
	}

	if _, err := f.events.List(asUser("second", "b"), options()); err != nil {
		t.Errorf("the second user's history list while the first floods: %v", err)
	}
	release()
	for range held {
		if err := <-errs; err != nil {
			t.Errorf("a flooder's list within its share: %v", err)
		}
	}
}

// TestHistoryPageWithALabelSelectorIsBoundedByWork: a label selector that
// matches one archived event, older than more than MaxArchiveScan others,
// gets pages that each read at most the page's budget of the archive (and
// end short, with a continue token where the reading stopped), and the
// pages, followed, reach that event.
func TestHistoryPageWithALabelSelectorIsBoundedByWork(t *testing.T) {
	f := newHistoryFixture(t)
	const others = history.MaxArchiveScan + history.MaxPageSize + 500
	base := time.Now().Add(-10 * time.Minute)
	var records []archive.Record
	for i := range others {
		e := historyEvent("shop", fmt.Sprintf("e-%06d", i), base.Add(-time.Duration(i)*time.Millisecond))
		records = append(records, record(t, f.codec, e, int64(i+1)))
	}
	wanted := historyEvent("shop", "wanted", base.Add(-time.Duration(others+1)*time.Millisecond))
	wanted.Labels = map[string]string{"app": "web"}
	records = append(records, record(t, f.codec, wanted, others+1))
	if err := f.archive.Append(t.Context(), records); err != nil {
		t.Fatal(err)
	}
	if err := f.archive.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}

	options := &metainternalversion.ListOptions{
		FieldSelector: fields.ParseSelectorOrDie("history.since=1h"),
		LabelSelector: labels.SelectorFromSet(labels.Set{"app": "web"}),
		Limit:         10,
	}
	budget := int64(history.MaxArchiveScan + history.MaxPageSize + 1)
	var found []string
	pages := 0
	for ; pages < 10; pages++ {
		before := f.archive.records.Load()
		obj, err := f.events.List(asUser("u", "shop"), options)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		if read := f.archive.records.Load() - before; read > budget {
			t.Errorf("page %d read %d archived records, want at most %d", pages, read, budget)
		}
		list := obj.(*core.EventList)
		for _, e := range list.Items {
			found = append(found, e.Name)
		}
		if list.Continue == "" {
			break
		}
		options.Continue = list.Continue
	}
	if len(found) != 1 || found[0] != "wanted" || pages == 0 {
		t.Errorf("pages found %v in %d pages, want [wanted] after more than one", found, pages+1)
	}
}

// TestSummaryReadsAtMostTheLiveEventsItCanHandTheArchive: with more live
// events in the window than the archive can be told to leave out, a
// summary gives up after reading about archive.MaxExcept of them, not
// every one.
func TestSummaryReadsAtMostTheLiveEventsItCanHandTheArchive(t *testing.T) {
	f := newHistoryFixture(t)
	const live = 1000
	base := time.Now().Add(-time.Minute)
	for i := 0; i < live; i += 100 {
		var ops []clientv3.Op
		for j := i; j < i+100; j++ {
			e := historyEvent("shop", fmt.Sprintf("e-%06d", j), base.Add(-time.Duration(j)*time.Millisecond))
			data, err := runtime.Encode(f.codec, e)
			if err != nil {
				t.Fatal(err)
			}
			ops = append(ops, clientv3.OpPut("/registry/events/shop/"+e.Name, string(data)))
		}
		if _, err := f.etcd.Txn(t.Context()).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	options := &metainternalversion.ListOptions{FieldSelector: fields.ParseSelectorOrDie("history.since=1h")}
	// The store has seen every event once a plain list holds them all.
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		obj, err := f.events.List(asUser("u", "shop"), &metainternalversion.ListOptions{})
		return err == nil && len(obj.(*core.EventList).Items) == live, err
	}); err != nil {
		t.Fatalf("the store never held the %d events: %v", live, err)
	}
	liveReads := func() float64 {
		m, err := harness.GatherMetrics(legacyregistry.DefaultGatherer)
		if err != nil {
			t.Fatal(err)
		}
		return m.Histogram("events_apiserver_history_live_events_read", nil).GetAggregatedSampleSum()
	}
	before := liveReads()
	_, ok, err := f.events.Summarize(asUser("u", "shop"), options)
	if err != nil || ok {
		t.Fatalf("Summarize over %d live events: %v, %v; want false (the caller counts the pages)", live, ok, err)
	}
	if reads, bound := liveReads()-before, float64(2*(archive.MaxExcept+1)); reads > bound {
		t.Errorf("Summarize read %.0f live events, want at most %.0f (the live store holds %d)", reads, bound, live)
	}
}
