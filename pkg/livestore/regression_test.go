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

// The store under concurrent churn, broken feeds, slow and future watchers
// and hostile selectors: each test is a way the store once failed.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/component-base/metrics/legacyregistry"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/livestore"
	"github.com/kube-events/events-apiserver/test/harness"
)

// feedControl is etcd's storage, whose watches of the whole prefix with
// progress notifications (the store's feed) the test can end, as etcd ends
// a watch, or break with an error, and whose lists the test can hold.
type feedControl struct {
	storage.Interface
	mu      sync.Mutex
	watches []*controlledWatch
	// gate, when set, holds every list until it is closed; listing is
	// signaled (once per gate) when a list waits at it.
	gate    chan struct{}
	listing chan struct{}
	// continued says the gate holds the pages after the first instead.
	continued bool
}

func (f *feedControl) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	f.mu.Lock()
	gate, listing, continued := f.gate, f.listing, f.continued
	f.mu.Unlock()
	if gate != nil && key == resourcePrefix && opts.Predicate.Limit > 0 && (opts.Predicate.Continue != "") == continued && opts.ResourceVersion == "" {
		select {
		case listing <- struct{}{}:
		default:
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return f.Interface.GetList(ctx, key, opts, listObj)
}

// holdLists holds the lists that (re)load the store from now on, until the
// returned function is called; listing receives when one waits.
func (f *feedControl) holdLists() (listing <-chan struct{}, release func()) {
	return f.hold(false)
}

// holdContinuedLists is holdLists for the pages after the first.
func (f *feedControl) holdContinuedLists() (listing <-chan struct{}, release func()) {
	return f.hold(true)
}

func (f *feedControl) hold(continued bool) (listing <-chan struct{}, release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate, f.listing, f.continued = make(chan struct{}), make(chan struct{}, 1), continued
	gate := f.gate
	return f.listing, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		close(gate)
		f.gate = nil
	}
}

func (f *feedControl) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	w, err := f.Interface.Watch(ctx, key, opts)
	if err != nil || !opts.ProgressNotify || key != resourcePrefix {
		return w, err
	}
	cw := &controlledWatch{inner: w, out: make(chan watch.Event), end: make(chan watch.Event, 1), stopped: make(chan struct{})}
	go cw.run()
	f.mu.Lock()
	f.watches = append(f.watches, cw)
	f.mu.Unlock()
	return cw, nil
}

// endFeeds ends every feed watch open, with last as its last event when it
// is not nil.
func (f *feedControl) endFeeds(last *watch.Event) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.watches {
		w.finish(last)
	}
	n := len(f.watches)
	f.watches = nil
	return n
}

// controlledWatch passes on its inner watch's events until it is
// finished: then it sends its last event, if any, and closes.
type controlledWatch struct {
	inner   watch.Interface
	out     chan watch.Event
	end     chan watch.Event
	once    sync.Once
	stopped chan struct{}
}

func (w *controlledWatch) run() {
	defer close(w.out)
	defer w.inner.Stop()
	for {
		select {
		case last, ok := <-w.end:
			if ok {
				select {
				case w.out <- last:
				case <-w.stopped:
				}
			}
			return
		case <-w.stopped:
			return
		case e, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			select {
			case w.out <- e:
			case <-w.stopped:
				return
			case last, ok := <-w.end:
				if ok {
					select {
					case w.out <- last:
					case <-w.stopped:
					}
				}
				return
			}
		}
	}
}

func (w *controlledWatch) finish(last *watch.Event) {
	w.once.Do(func() {
		if last != nil {
			w.end <- *last
		}
		close(w.end)
	})
}

func (w *controlledWatch) ResultChan() <-chan watch.Event { return w.out }
func (w *controlledWatch) Stop() {
	select {
	case <-w.stopped:
	default:
		close(w.stopped)
	}
}

// controlledEnv is a store over a feedControl of a fresh etcd.
type controlledEnv struct {
	store   *livestore.Store
	control *feedControl
	etcd    storage.Interface
}

func newControlledEnv(t *testing.T, configure func(*livestore.Config)) *controlledEnv {
	t.Helper()
	disableListFromCacheSnapshot(t)
	client := newEtcd(t, nil)
	etcdStorage := newEtcdStorage(t, client, identity.NewEncryptCheckTransformer())
	control := &feedControl{Interface: etcdStorage}
	config := storeConfig(control, namespaceKeyFunc, 0)
	if configure != nil {
		configure(&config)
	}
	store, err := livestore.New(config)
	if err != nil {
		t.Fatalf("livestore.New: %v", err)
	}
	t.Cleanup(store.Stop)
	waitReady(t, store)
	return &controlledEnv{store: store, control: control, etcd: etcdStorage}
}

func createPod(ctx context.Context, t *testing.T, s storage.Interface, namespace, name, node string, annotations map[string]string) *example.Pod {
	t.Helper()
	pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations}, Spec: example.PodSpec{NodeName: node}}
	out := &example.Pod{}
	if err := s.Create(ctx, podKey(pod), pod, out, 0); err != nil {
		t.Fatalf("creating %s/%s: %v", namespace, name, err)
	}
	return out
}

func deletePod(ctx context.Context, t *testing.T, s storage.Interface, namespace, name string) {
	t.Helper()
	pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := s.Delete(ctx, podKey(pod), &example.Pod{}, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{}); err != nil {
		t.Fatalf("deleting %s/%s: %v", namespace, name, err)
	}
}

// listPods lists every Pod at rv ("" for a consistent read).
func listPods(ctx context.Context, s storage.Interface, rv string) (*example.PodList, error) {
	list := &example.PodList{}
	err := s.GetList(ctx, resourcePrefix, storage.ListOptions{ResourceVersion: rv, Recursive: true, Predicate: storage.Everything}, list)
	return list, err
}

// waitStoreHolds waits until a list at "0" (the store's memory, whatever
// its revision) holds at least n Pods.
func waitStoreHolds(t *testing.T, s storage.Interface, n int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := listPods(ctx, s, "0")
		return err == nil && len(list.Items) >= n, err
	})
	if err != nil {
		t.Fatalf("the store did not reach %d Pods: %v", n, err)
	}
}

// next is the watch's next event; ok false when it ended.
func next(t *testing.T, w watch.Interface) (watch.Event, bool) {
	t.Helper()
	select {
	case e, ok := <-w.ResultChan():
		return e, ok
	case <-time.After(wait.ForeverTestTimeout):
		t.Fatalf("no event within %v", wait.ForeverTestTimeout)
		return watch.Event{}, false
	}
}

func rvOf(t *testing.T, obj runtime.Object) uint64 {
	t.Helper()
	rv, err := storage.APIObjectVersioner{}.ObjectResourceVersion(obj)
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

func metricValue(t *testing.T, name string) float64 {
	t.Helper()
	m, err := harness.GatherMetrics(legacyregistry.DefaultGatherer)
	if err != nil {
		t.Fatal(err)
	}
	return m.Value(name, map[string]string{"resource": "pods"})
}

// A watch's initial state outlives the table's chunks it was read from:
// a watch from "0", left unread while a run of the events it has yet to
// send is deleted (their chunks freed), still sends every initial event
// with its own key. The store once kept keys pointing into the freed
// chunks (run it under -tags livestore_debug, where freed chunks fault).
func TestWatchInitialStateOutlivesFreedChunks(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	// About 2 KiB each: 500 to a chunk of the arena.
	annotations := map[string]string{"pad": strings.Repeat("x", 2000)}
	const pods, deleted = 3000, 900
	for i := range pods {
		createPod(ctx, t, env.storage, "ns", fmt.Sprintf("pod-%04d", i), "node-1", annotations)
	}
	waitStoreHolds(t, env.store, pods)
	w, err := env.store.Watch(ctx, resourcePrefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// The oldest run: whole chunks die, and are compacted and freed.
	for i := range deleted {
		deletePod(ctx, t, env.storage, "ns", fmt.Sprintf("pod-%04d", i))
	}
	waitDeleted := func() error {
		return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
			list, err := listPods(ctx, env.store, "0")
			return err == nil && len(list.Items) == pods-deleted, err
		})
	}
	if err := waitDeleted(); err != nil {
		t.Fatal(err)
	}
	for i := range pods {
		e, ok := next(t, w)
		if !ok {
			t.Fatalf("watch ended after %d initial events", i)
		}
		pod, isPod := e.Object.(*example.Pod)
		if e.Type != watch.Added || !isPod {
			t.Fatalf("initial event %d: %s %T, want ADDED Pod", i, e.Type, e.Object)
		}
		if want := fmt.Sprintf("pod-%04d", i); pod.Name != want || pod.Namespace != "ns" {
			t.Fatalf("initial event %d is %s/%s, want ns/%s", i, pod.Namespace, pod.Name, want)
		}
	}
	for i := range deleted {
		e, ok := next(t, w)
		if !ok {
			t.Fatalf("watch ended after %d deletions", i)
		}
		if pod, isPod := e.Object.(*example.Pod); e.Type != watch.Deleted || !isPod || pod.Name != fmt.Sprintf("pod-%04d", i) {
			t.Fatalf("event %d after the initial state: %s %v, want DELETED ns/pod-%04d", i, e.Type, e.Object, i)
		}
	}
}

// A watch from a revision the store has not reached yet never gets a
// bookmark below it: the cacher drops those, the store once sent them.
func TestBookmarksNeverBelowTheWatchStart(t *testing.T) {
	env := newTestEnv(t, withProgressNotifyInterval(50*time.Millisecond))
	ctx := context.Background()
	created := createPod(ctx, t, env.storage, "ns", "first", "node-1", nil)
	current := rvOf(t, created)
	future := current + 5
	opts := func(rv uint64) storage.ListOptions {
		p := storage.Everything
		p.AllowWatchBookmarks = true
		return storage.ListOptions{ResourceVersion: strconv.FormatUint(rv, 10), Recursive: true, Predicate: p, ProgressNotify: true}
	}
	ahead, err := env.store.Watch(ctx, resourcePrefix, opts(future))
	if err != nil {
		t.Fatal(err)
	}
	defer ahead.Stop()
	// A second watch, from the store's revision, gets the same progress
	// bookmarks: once it has one, the first was offered it too.
	probe, err := env.store.Watch(ctx, resourcePrefix, opts(current))
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Stop()
	for {
		e, ok := next(t, probe)
		if !ok {
			t.Fatal("probe watch ended")
		}
		if e.Type == watch.Bookmark && rvOf(t, e.Object) < future {
			break
		}
	}
	var last *example.Pod
	for i := range 10 {
		last = createPod(ctx, t, env.storage, "ns", fmt.Sprintf("pod-%d", i), "node-1", nil)
	}
	for {
		e, ok := next(t, ahead)
		if !ok {
			t.Fatal("watch ended")
		}
		rv := rvOf(t, e.Object)
		if rv < future && e.Type == watch.Bookmark {
			t.Fatalf("bookmark at %d on a watch from %d", rv, future)
		}
		if e.Type != watch.Bookmark && rv <= future {
			t.Fatalf("%s at %d on a watch from %d", e.Type, rv, future)
		}
		if rv >= rvOf(t, last) {
			return
		}
	}
}

// A feed watch that etcd ends cleanly is started again from the store's
// revision: the watches the store serves go on, and nothing is relisted.
func TestFeedWatchEndResumesWithoutRelist(t *testing.T) {
	env := newControlledEnv(t, nil)
	ctx := context.Background()
	list, err := listPods(ctx, env.store, "")
	if err != nil {
		t.Fatal(err)
	}
	w, err := env.store.Watch(ctx, resourcePrefix, storage.ListOptions{ResourceVersion: list.ResourceVersion, Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	relists := metricValue(t, "events_apiserver_live_store_relists_total")
	for round := range 3 {
		if n := env.control.endFeeds(nil); n != 1 {
			t.Fatalf("round %d: %d feed watches open, want 1", round, n)
		}
		name := fmt.Sprintf("after-end-%d", round)
		createPod(ctx, t, env.etcd, "ns", name, "node-1", nil)
		e, ok := next(t, w)
		if !ok {
			t.Fatalf("round %d: the watch ended with the feed's watch", round)
		}
		if pod, isPod := e.Object.(*example.Pod); e.Type != watch.Added || !isPod || pod.Name != name {
			t.Fatalf("round %d: %s %v, want ADDED %s", round, e.Type, e.Object, name)
		}
		// The feed is watching again before the next round ends it.
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
			env.control.mu.Lock()
			defer env.control.mu.Unlock()
			return len(env.control.watches) == 1, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got := metricValue(t, "events_apiserver_live_store_relists_total"); got != relists {
		t.Errorf("relists_total went from %v to %v, want no relist", relists, got)
	}
}

// While the store relists (its feed compacted past), consistent reads are
// etcd's at once, and reads at "0" are the old table's; the relist ends
// the watches it served, and counts.
func TestReadsDuringRelist(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	env := newControlledEnv(t, func(c *livestore.Config) { c.Clock = clk })
	ctx, cancel := context.WithTimeout(context.Background(), wait.ForeverTestTimeout)
	defer cancel()
	createPod(ctx, t, env.etcd, "ns", "before", "node-1", nil)
	waitStoreHolds(t, env.store, 1)
	w, err := env.store.Watch(ctx, resourcePrefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	relists := metricValue(t, "events_apiserver_live_store_relists_total")

	listing, release := env.control.holdLists()
	compactFeed(ctx, t, env, clk, listing)
	createPod(ctx, t, env.etcd, "ns", "during", "node-1", nil)
	consistent, err := listPods(ctx, env.store, "")
	if err != nil {
		t.Fatalf("consistent list during the relist: %v", err)
	}
	if len(consistent.Items) != 2 {
		t.Errorf("consistent list during the relist holds %d Pods, want 2 (etcd's)", len(consistent.Items))
	}
	stale, err := listPods(ctx, env.store, "0")
	if err != nil {
		t.Fatalf("list at 0 during the relist: %v", err)
	}
	if len(stale.Items) != 1 || stale.Items[0].Name != "before" {
		t.Errorf("list at 0 during the relist holds %v, want the old table's [before]", stale.Items)
	}
	release()
	waitStoreHolds(t, env.store, 2)
	for {
		if _, ok := next(t, w); !ok {
			break
		}
	}
	if got := metricValue(t, "events_apiserver_live_store_relists_total"); got != relists+1 {
		t.Errorf("relists_total went from %v to %v, want one relist", relists, got)
	}
}

// A relist whose new table outgrows RelistBytes drops the old one: from
// then on, until the new table is complete, reads at "0" are etcd's (not
// the old table's, nor the part of the new one loaded), the watches the
// old table served end, and the drop is counted; the new table then serves
// as before.
func TestRelistPastItsBoundDropsTheOldTable(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	env := newControlledEnv(t, func(c *livestore.Config) {
		c.Clock = clk
		// A chunk of the new table is past the bound: its first page
		// drops the old table, and its second waits.
		c.RelistBytes = 1
		c.ListPageSize = 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), wait.ForeverTestTimeout)
	defer cancel()
	for _, name := range []string{"a", "b", "c"} {
		createPod(ctx, t, env.etcd, "ns", name, "node-1", nil)
	}
	waitStoreHolds(t, env.store, 3)
	w, err := env.store.Watch(ctx, resourcePrefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	dropped := metricValue(t, "events_apiserver_live_store_dropped_tables_total")

	listing, release := env.control.holdContinuedLists()
	compactFeed(ctx, t, env, clk, listing)
	for {
		if _, ok := next(t, w); !ok {
			break
		}
	}
	if got := metricValue(t, "events_apiserver_live_store_dropped_tables_total"); got != dropped+1 {
		t.Errorf("dropped_tables_total went from %v to %v, want one drop", dropped, got)
	}
	createPod(ctx, t, env.etcd, "ns", "during", "node-1", nil)
	for _, rv := range []string{"0", ""} {
		list, err := listPods(ctx, env.store, rv)
		if err != nil {
			t.Fatalf("list at %q during the relist: %v", rv, err)
		}
		if diff := cmp.Diff([]string{"a", "b", "c", "during"}, podNames(list)); diff != "" {
			t.Errorf("list at %q during the relist, past the bound (-etcd's +got):\n%s", rv, diff)
		}
	}
	release()
	// Reads at "0" are etcd's until then: the objects the store holds
	// tell that the new table is in place.
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		return metricValue(t, "events_apiserver_live_store_objects") == 4, nil
	})
	if err != nil {
		t.Fatalf("the new table did not take the old one's place: %v", err)
	}
	if got := metricValue(t, "events_apiserver_live_store_loading_bytes"); got != 0 {
		t.Errorf("loading_bytes %v once the table is loaded, want 0", got)
	}
}

// podNames are the names of list's Pods, in its order.
func podNames(list *example.PodList) []string {
	names := make([]string, 0, len(list.Items))
	for _, pod := range list.Items {
		names = append(names, pod.Name)
	}
	return names
}

// A list whose client has gone stops scanning.
func TestCanceledListStopsScanning(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	for i := range 600 {
		createPod(ctx, t, env.storage, "ns", fmt.Sprintf("pod-%03d", i), "node-1", nil)
	}
	waitStoreHolds(t, env.store, 600)
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := listPods(canceled, env.store, "0")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("list with a canceled context: %v, want context.Canceled", err)
	}
}

// A list that takes its time to decode and match does not hold the feed
// back: a watcher gets a change made meanwhile.
func TestSlowListDoesNotHoldTheFeed(t *testing.T) {
	var blocking atomic.Bool
	entered, unblock := make(chan struct{}, 1), make(chan struct{})
	slowAttrs := func(obj runtime.Object) (labels.Set, fields.Set, error) {
		if pod, ok := obj.(*example.Pod); ok && pod.Name == "slow" && blocking.Load() {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-unblock
		}
		return getPodAttrs(obj)
	}
	env := newControlledEnv(t, func(c *livestore.Config) { c.GetAttrsFunc = slowAttrs })
	ctx := context.Background()
	createPod(ctx, t, env.etcd, "ns", "slow", "node-1", nil)
	list, err := listPods(ctx, env.store, "")
	if err != nil {
		t.Fatal(err)
	}
	p := predicate(t, "", "spec.nodeName=node-2")
	w, err := env.store.Watch(ctx, resourcePrefix, storage.ListOptions{ResourceVersion: list.ResourceVersion, Recursive: true, Predicate: p})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	blocking.Store(true)
	listed := make(chan error, 1)
	slow := predicate(t, "app!=none", "")
	slow.GetAttrs = slowAttrs
	go func() {
		out := &example.PodList{}
		listed <- env.store.GetList(ctx, resourcePrefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: slow}, out)
	}()
	<-entered
	createPod(ctx, t, env.etcd, "ns", "meanwhile", "node-2", nil)
	e, ok := next(t, w)
	if !ok || e.Type != watch.Added || e.Object.(*example.Pod).Name != "meanwhile" {
		t.Fatalf("watch got %v (open %v), want ADDED meanwhile while a list decodes", e, ok)
	}
	close(unblock)
	if err := <-listed; err != nil {
		t.Fatal(err)
	}
}

// Selectors are bounded in terms, with the request's field path.
func TestSelectorTermsAreBounded(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	terms := func(n int) string {
		var reqs []string
		for i := range n {
			reqs = append(reqs, fmt.Sprintf("k%d!=v", i))
		}
		return strings.Join(reqs, ",")
	}
	for _, tc := range []struct {
		name, label, field string
		wantPath           string
	}{
		{name: "labels at the bound", label: terms(livestore.MaxSelectorTerms)},
		{name: "labels past the bound", label: terms(livestore.MaxSelectorTerms + 1), wantPath: "labelSelector"},
		{name: "fields past the bound", field: strings.ReplaceAll(terms(livestore.MaxSelectorTerms+1), "k", "metadata.k"), wantPath: "fieldSelector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: predicate(t, tc.label, tc.field)}
			listErr := env.store.GetList(ctx, resourcePrefix, opts, &example.PodList{})
			w, watchErr := env.store.Watch(ctx, resourcePrefix, opts)
			if watchErr == nil {
				w.Stop()
			}
			for what, err := range map[string]error{"list": listErr, "watch": watchErr} {
				switch {
				case tc.wantPath == "" && err != nil:
					t.Errorf("%s: %v", what, err)
				case tc.wantPath != "" && (!apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), tc.wantPath)):
					t.Errorf("%s: %v, want 400 naming %s", what, err, tc.wantPath)
				}
			}
		})
	}
}

// A watcher whose buffer is full is waited for within the dispatch budget
// before it is ended: one that reads again gets every change.
func TestSlowWatcherGetsADispatchBudget(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	env := newControlledEnv(t, func(c *livestore.Config) { c.Clock = clk })
	ctx := context.Background()
	list, err := listPods(ctx, env.store, "")
	if err != nil {
		t.Fatal(err)
	}
	// Selecting the trigger's value: a buffer of 100 changes, and 10 in
	// the result.
	w, err := env.store.Watch(ctx, resourcePrefix, storage.ListOptions{ResourceVersion: list.ResourceVersion, Recursive: true, Predicate: predicate(t, "", "spec.nodeName=node-1")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	slow := metricValue(t, "events_apiserver_live_store_slow_watchers_total")
	const pods, full = 150, 112
	for i := range pods {
		createPod(ctx, t, env.etcd, "ns", fmt.Sprintf("pod-%03d", i), "node-1", nil)
	}
	// The feed has offered the watcher more than its buffers hold.
	waitStoreHolds(t, env.store, full)
	for i := range pods {
		e, ok := next(t, w)
		if !ok {
			t.Fatalf("the watch ended after %d of %d changes", i, pods)
		}
		if pod := e.Object.(*example.Pod); e.Type != watch.Added || pod.Name != fmt.Sprintf("pod-%03d", i) {
			t.Fatalf("change %d: %s %s", i, e.Type, pod.Name)
		}
	}
	if got := metricValue(t, "events_apiserver_live_store_slow_watchers_total"); got != slow {
		t.Errorf("slow_watchers_total went from %v to %v, want no watcher ended", slow, got)
	}
}

// After Stop, reads go to etcd: an object the store held is found.
func TestReadsAfterStopGoToEtcd(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	created := createPod(ctx, t, env.storage, "ns", "pod", "node-1", nil)
	waitStoreHolds(t, env.store, 1)
	env.store.Stop()
	got := &example.Pod{}
	if err := env.store.Get(ctx, podKey(created), storage.GetOptions{ResourceVersion: created.ResourceVersion}, got); err != nil {
		t.Fatalf("Get after Stop: %v", err)
	}
	if got.Name != "pod" {
		t.Errorf("Get after Stop: %s", got.Name)
	}
	list, err := listPods(ctx, env.store, "0")
	if err != nil || len(list.Items) != 1 {
		t.Errorf("list at 0 after Stop: %d Pods, %v; want 1", len(list.Items), err)
	}
	w, err := env.store.Watch(ctx, resourcePrefix, storage.ListOptions{ResourceVersion: created.ResourceVersion, Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatalf("Watch after Stop: %v", err)
	}
	defer w.Stop()
	createPod(ctx, t, env.storage, "ns", "later", "node-1", nil)
	if e, ok := next(t, w); !ok || e.Type != watch.Added {
		t.Errorf("watch after Stop: %v %v, want ADDED later", e.Type, ok)
	}
}

// compactFeed ends the store's feeds with 410 Gone, as a compaction past
// its revision does, and steps clk through the store's backoff until the
// relist reaches etcd (listing receives).
func compactFeed(ctx context.Context, t *testing.T, env *controlledEnv, clk *testingclock.FakeClock, listing <-chan struct{}) {
	t.Helper()
	gone := apierrors.NewResourceExpired("required revision has been compacted")
	env.control.endFeeds(&watch.Event{Type: watch.Error, Object: &gone.ErrStatus})
	for {
		select {
		case <-listing:
			return
		case <-ctx.Done():
			t.Fatal("the store did not relist")
		case <-time.After(10 * time.Millisecond):
			clk.Step(time.Minute)
		}
	}
}
