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

// The differential test: over one etcd, k8s.io/apiserver's cacher (behind
// its CacheDelegator) and a live store, configured alike, answer the same
// generated lists and watches after the same generated workload, and the
// answers must encode to the same bytes.

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kube-events/events-apiserver/pkg/livestore"
)

// differentialSeed seeds the workload and the requests.
const differentialSeed = 20260101

// newCacher is k8s.io/apiserver's watch cache over s, configured as
// storeConfig configures the live store, behind its CacheDelegator.
func newCacher(t *testing.T, s storage.Interface) *cacher.CacheDelegator {
	t.Helper()
	c, err := cacher.NewCacherFromConfig(cacher.Config{
		Storage:             s,
		Versioner:           storage.APIObjectVersioner{},
		GroupResource:       schema.GroupResource{Resource: "pods"},
		EventsHistoryWindow: cacher.DefaultEventFreshDuration,
		ResourcePrefix:      resourcePrefix,
		KeyFunc:             namespaceKeyFunc,
		GetAttrsFunc:        getPodAttrs,
		IndexerFuncs:        nodeNameTrigger(),
		Indexers:            nodeNameIndexers(),
		NewFunc:             newPod,
		NewListFunc:         newPodList,
		Codec:               examplev1ProtoCodec,
		Clock:               clock.RealClock{},
	})
	if err != nil {
		t.Fatalf("NewCacherFromConfig: %v", err)
	}
	t.Cleanup(c.Stop)
	if err := c.Wait(context.Background()); err != nil {
		t.Fatalf("cacher.Wait: %v", err)
	}
	d := cacher.NewCacheDelegator(c, s)
	t.Cleanup(d.Stop)
	return d
}

// change is one write of the workload: the object before and after it (nil
// where there was none or is none).
type change struct {
	rv       uint64
	old, new *example.Pod
}

var (
	workloadNamespaces = []string{"ns-0", "ns-1", "ns-2"}
	workloadNodes      = []string{"", "node-0", "node-1", "node-2", "node-3"}
	workloadApps       = []string{"web", "db", "cache"}
)

func randomPodSpec(r *rand.Rand, pod *example.Pod) {
	pod.Labels = map[string]string{"app": workloadApps[r.Intn(len(workloadApps))]}
	switch r.Intn(3) {
	case 0:
		pod.Labels["tier"] = "front"
	case 1:
		pod.Labels["tier"] = "back"
	}
	if r.Intn(4) == 0 {
		pod.Labels["track"] = "canary"
	}
	pod.Spec.NodeName = workloadNodes[r.Intn(len(workloadNodes))]
	pod.Spec.RestartPolicy = []example.RestartPolicy{"Always", "Never"}[r.Intn(2)]
	pod.Status.Phase = []example.PodPhase{"Pending", "Running"}[r.Intn(2)]
	pod.Annotations = map[string]string{"generation": fmt.Sprint(r.Int63())}
}

// runWorkload drives ops creates, updates and deletes of Pods through s,
// and returns the changes and the objects left.
func runWorkload(ctx context.Context, t *testing.T, s storage.Interface, r *rand.Rand, ops int) ([]change, map[string]*example.Pod) {
	t.Helper()
	live := map[string]*example.Pod{}
	var changes []change
	for i := 0; i < ops; i++ {
		ns := workloadNamespaces[r.Intn(len(workloadNamespaces))]
		name := fmt.Sprintf("pod-%d", r.Intn(40))
		key := "/pods/" + ns + "/" + name
		old := live[key]
		out := &example.Pod{}
		switch {
		case old == nil:
			pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			randomPodSpec(r, pod)
			if err := s.Create(ctx, key, pod, out, 0); err != nil {
				t.Fatalf("create %s: %v", key, err)
			}
			live[key] = out
		case r.Intn(10) < 6:
			// Drawn before the update: its function may run more than
			// once.
			next := &example.Pod{}
			randomPodSpec(r, next)
			err := s.GuaranteedUpdate(ctx, key, out, false, nil, storage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
				pod := obj.(*example.Pod).DeepCopy()
				pod.Labels, pod.Annotations = next.Labels, next.Annotations
				pod.Spec, pod.Status = next.Spec, next.Status
				return pod, nil
			}), nil)
			if err != nil {
				t.Fatalf("update %s: %v", key, err)
			}
			live[key] = out
		default:
			if err := s.Delete(ctx, key, out, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{}); err != nil {
				t.Fatalf("delete %s: %v", key, err)
			}
			delete(live, key)
		}
		rv, err := storage.APIObjectVersioner{}.ObjectResourceVersion(out)
		if err != nil {
			t.Fatal(err)
		}
		c := change{rv: rv, old: old}
		if n, ok := live[key]; ok {
			c.new = n
		}
		changes = append(changes, c)
	}
	return changes, live
}

// listRequest is a generated list: the options of its first page.
type listRequest struct {
	key  string
	opts storage.ListOptions
}

func (l listRequest) String() string {
	return fmt.Sprintf("key=%s recursive=%v rv=%q match=%q labels=%q fields=%q limit=%d",
		l.key, l.opts.Recursive, l.opts.ResourceVersion, l.opts.ResourceVersionMatch,
		l.opts.Predicate.Label, l.opts.Predicate.Field, l.opts.Predicate.Limit)
}

var (
	differentialLabels = []string{"", "app=web", "app in (web,db),tier!=back", "!tier", "track=canary", "app=nothing"}
	differentialFields = []string{"", "spec.nodeName=node-1", "spec.nodeName=", "metadata.name=pod-3", "spec.nodeName!=node-0", "spec.nodeName=node-2,status.phase=Running"}
)

// predicate is the selection predicate the pod registry makes for the
// selectors: it names spec.nodeName as an index field when the field
// selector requires one value of it.
func predicate(t *testing.T, label, field string) storage.SelectionPredicate {
	ls, err := labels.Parse(label)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := fields.ParseSelector(field)
	if err != nil {
		t.Fatal(err)
	}
	p := storage.SelectionPredicate{Label: ls, Field: fs, GetAttrs: getPodAttrs}
	if _, ok := fs.RequiresExactMatch("spec.nodeName"); ok {
		p.IndexFields = []string{"spec.nodeName"}
	}
	return p
}

func scopeKeys(r *rand.Rand) (string, bool) {
	switch n := r.Intn(6); {
	case n < 2:
		return "/pods/", true
	case n < 5:
		return "/pods/" + workloadNamespaces[r.Intn(len(workloadNamespaces))], true
	default:
		return fmt.Sprintf("/pods/%s/pod-%d", workloadNamespaces[r.Intn(len(workloadNamespaces))], r.Intn(40)), false
	}
}

func generateListRequests(t *testing.T, r *rand.Rand, n int, currentRV, pastRV string) []listRequest {
	rvs := []struct {
		rv    string
		match metav1.ResourceVersionMatch
	}{
		{"", ""},
		{"0", ""},
		{"0", metav1.ResourceVersionMatchNotOlderThan},
		{currentRV, metav1.ResourceVersionMatchNotOlderThan},
		{currentRV, ""},
		{currentRV, metav1.ResourceVersionMatchExact},
		{pastRV, metav1.ResourceVersionMatchExact},
	}
	limits := []int64{0, 0, 0, 1, 5, 17, 500}
	var out []listRequest
	for i := 0; i < n; i++ {
		key, recursive := scopeKeys(r)
		rv := rvs[r.Intn(len(rvs))]
		p := predicate(t, differentialLabels[r.Intn(len(differentialLabels))], differentialFields[r.Intn(len(differentialFields))])
		p.Limit = limits[r.Intn(len(limits))]
		if p.Limit == 1 && key == "/pods/" {
			p.Limit = 5
		}
		out = append(out, listRequest{key: key, opts: storage.ListOptions{
			ResourceVersion:      rv.rv,
			ResourceVersionMatch: rv.match,
			Predicate:            p,
			Recursive:            recursive,
		}})
	}
	return out
}

// listPages is a list and the pages that follow it through its continue
// tokens: each page encoded, or the error that ended it.
func listPages(ctx context.Context, s storage.Interface, req listRequest) ([]string, []*example.PodList, string) {
	var encoded []string
	var pages []*example.PodList
	opts := req.opts
	for {
		list := &example.PodList{}
		if err := s.GetList(ctx, req.key, opts, list); err != nil {
			return encoded, pages, err.Error()
		}
		data, err := runtime.Encode(compareCodec, list)
		if err != nil {
			return encoded, pages, "encoding: " + err.Error()
		}
		encoded = append(encoded, string(data))
		pages = append(pages, list)
		if list.Continue == "" || len(pages) > 1000 {
			return encoded, pages, ""
		}
		opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
		opts.Predicate.Continue = list.Continue
	}
}

// getEncoded is a Get from s, encoded, or its error.
func getEncoded(ctx context.Context, s storage.Interface, key, rv string) (string, string) {
	pod := &example.Pod{}
	if err := s.Get(ctx, key, storage.GetOptions{ResourceVersion: rv}, pod); err != nil {
		return "", err.Error()
	}
	data, err := runtime.Encode(compareCodec, pod)
	if err != nil {
		return "", "encoding: " + err.Error()
	}
	return string(data), ""
}

// caughtUp waits for a consistent list from each store and from etcd, and
// returns etcd's resourceVersion.
func caughtUp(ctx context.Context, t *testing.T, etcd storage.Interface, stores ...storage.Interface) string {
	t.Helper()
	list := &example.PodList{}
	if err := etcd.GetList(ctx, resourcePrefix, storage.ListOptions{Predicate: storage.Everything, Recursive: true}, list); err != nil {
		t.Fatal(err)
	}
	for _, s := range stores {
		l := &example.PodList{}
		if err := s.GetList(ctx, resourcePrefix, storage.ListOptions{Predicate: storage.Everything, Recursive: true}, l); err != nil {
			t.Fatal(err)
		}
	}
	return list.ResourceVersion
}

// watchRequest is a generated watch and how many events it must deliver
// before it is compared: the events up to the end of its initial events
// when those end with a bookmark, or else count.
type watchRequest struct {
	key   string
	opts  storage.ListOptions
	count int
}

func (w watchRequest) String() string {
	return fmt.Sprintf("key=%s recursive=%v rv=%q sendInitialEvents=%v labels=%q fields=%q",
		w.key, w.opts.Recursive, w.opts.ResourceVersion, w.opts.SendInitialEvents != nil,
		w.opts.Predicate.Label, w.opts.Predicate.Field)
}

func inScope(key string, recursive bool, pod *example.Pod) bool {
	if pod == nil {
		return false
	}
	k := podKey(pod)
	if !recursive {
		return k == key
	}
	return strings.HasPrefix(k, strings.TrimSuffix(key, "/")+"/")
}

func matches(t *testing.T, p storage.SelectionPredicate, key string, recursive bool, pod *example.Pod) bool {
	if !inScope(key, recursive, pod) {
		return false
	}
	ok, err := p.Matches(pod)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func generateWatchRequests(t *testing.T, r *rand.Rand, n int, changes []change, live map[string]*example.Pod) []watchRequest {
	var out []watchRequest
	for i := 0; i < n; i++ {
		key, recursive := scopeKeys(r)
		p := predicate(t, differentialLabels[r.Intn(len(differentialLabels))], differentialFields[r.Intn(len(differentialFields))])
		req := watchRequest{key: key, opts: storage.ListOptions{Predicate: p, Recursive: recursive}}
		switch r.Intn(3) {
		case 0:
			// From "0": the objects now, as Added events.
			req.opts.ResourceVersion = "0"
			for _, pod := range live {
				if matches(t, p, key, recursive, pod) {
					req.count++
				}
			}
		case 1:
			// From a past resourceVersion: every change since that
			// the selectors saw before or after it.
			from := changes[len(changes)/2+r.Intn(len(changes)/2)].rv
			req.opts.ResourceVersion = fmt.Sprint(from)
			for _, c := range changes {
				if c.rv > from && (matches(t, p, key, recursive, c.old) || matches(t, p, key, recursive, c.new)) {
					req.count++
				}
			}
		default:
			// A watch list: the initial events, ended by a bookmark.
			req.opts.SendInitialEvents = ptr.To(true)
			req.opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
			req.opts.ResourceVersion = []string{"", "0"}[r.Intn(2)]
			req.opts.Predicate.AllowWatchBookmarks = true
			req.count = -1
		}
		out = append(out, req)
	}
	return out
}

// collected is a watch event as compared: its type and encoded object.
type collected struct {
	Type    watch.EventType
	Encoded string
	Object  runtime.Object
}

const initialEventsEndAnnotation = "k8s.io/initial-events-end"

// collectEvents reads a watch's events: count of them, or, where count is
// negative, those up to and including the bookmark ending the initial
// events; other bookmarks are left out, since their timing is the store's.
func collectEvents(ctx context.Context, s storage.Interface, req watchRequest) ([]collected, error) {
	w, err := s.Watch(ctx, req.key, req.opts)
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	var out []collected
	timeout := time.NewTimer(wait.ForeverTestTimeout)
	defer timeout.Stop()
	for req.count < 0 || len(out) < req.count {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return out, fmt.Errorf("watch closed after %d events", len(out))
			}
			end := false
			if ev.Type == watch.Bookmark {
				m, err := metaAccessor(ev.Object)
				if err != nil {
					return out, err
				}
				if m.GetAnnotations()[initialEventsEndAnnotation] != "true" {
					continue
				}
				end = true
			}
			data, err := runtime.Encode(compareCodec, ev.Object)
			if err != nil {
				return out, err
			}
			out = append(out, collected{Type: ev.Type, Encoded: string(data), Object: unwrap(ev.Object)})
			if end && req.count < 0 {
				return out, nil
			}
		case <-timeout.C:
			return out, fmt.Errorf("%d events after %v, want %d", len(out), wait.ForeverTestTimeout, req.count)
		}
	}
	return out, nil
}

func metaAccessor(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not a metav1.Object", obj)
	}
	return m, nil
}

func sameEvents(a, b []collected) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Encoded != b[i].Encoded {
			return false
		}
	}
	return true
}

func eventsOf(c []collected) []watch.Event {
	out := make([]watch.Event, 0, len(c))
	for _, e := range c {
		out = append(out, watch.Event{Type: e.Type, Object: e.Object})
	}
	return out
}

func decodedPages(encoded []string) []runtime.Object {
	var out []runtime.Object
	for _, e := range encoded {
		obj, err := runtime.Decode(compareCodec, []byte(e))
		if err != nil {
			out = append(out, &metav1.Status{Message: err.Error()})
			continue
		}
		out = append(out, obj)
	}
	return out
}

// TestDifferentialAgainstCacher compares the live store with
// k8s.io/apiserver's cacher over one etcd after a generated workload.
func TestDifferentialAgainstCacher(t *testing.T) {
	t.Logf("seed %d", differentialSeed)
	disableListFromCacheSnapshot(t)
	ctx := context.Background()
	client := newEtcd(t, nil)
	// Each store has its own etcd storage over the one etcd, as each
	// resource of an apiserver has.
	etcdStorage := newEtcdStorage(t, client, identity.NewEncryptCheckTransformer())
	watchCache := newCacher(t, newEtcdStorage(t, client, identity.NewEncryptCheckTransformer()))
	live, err := livestore.New(storeConfig(newEtcdStorage(t, client, identity.NewEncryptCheckTransformer()), namespaceKeyFunc, 0))
	if err != nil {
		t.Fatalf("livestore.New: %v", err)
	}
	t.Cleanup(live.Stop)
	waitReady(t, live)

	r := rand.New(rand.NewSource(differentialSeed))
	changes, objects := runWorkload(ctx, t, live, r, 400)
	currentRV := caughtUp(ctx, t, etcdStorage, watchCache, live)
	pastRV := fmt.Sprint(changes[len(changes)/2].rv)
	t.Logf("%d changes, %d objects left, resourceVersion %s", len(changes), len(objects), currentRV)

	pages, events := 0, 0
	t.Run("List", func(t *testing.T) {
		for i, req := range generateListRequests(t, r, 400, currentRV, pastRV) {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				want, _, wantErr := listPages(ctx, watchCache, req)
				pages += len(want)
				got, _, gotErr := listPages(ctx, live, req)
				if wantErr != gotErr {
					t.Errorf("seed %d, %v: error %q from the live store, %q from the cacher", differentialSeed, req, gotErr, wantErr)
				}
				if len(want) != len(got) {
					t.Errorf("seed %d, %v: %d pages from the live store, %d from the cacher (-cacher +live):\n%s", differentialSeed, req, len(got), len(want), cmp.Diff(decodedPages(want), decodedPages(got)))
					return
				}
				for p := range want {
					if !bytes.Equal([]byte(want[p]), []byte(got[p])) {
						t.Errorf("seed %d, %v: page %d differs (-cacher +live):\n%s", differentialSeed, req, p, cmp.Diff(decodedPages(want[p:p+1]), decodedPages(got[p:p+1])))
					}
				}
			})
		}
	})

	t.Run("Get", func(t *testing.T) {
		for _, ns := range workloadNamespaces {
			for i := 0; i < 40; i++ {
				key := fmt.Sprintf("/pods/%s/pod-%d", ns, i)
				for _, rv := range []string{"", "0", currentRV} {
					want, wantErr := getEncoded(ctx, watchCache, key, rv)
					got, gotErr := getEncoded(ctx, live, key, rv)
					if wantErr != gotErr {
						t.Errorf("seed %d, Get %s at %q: error %q from the live store, %q from the cacher", differentialSeed, key, rv, gotErr, wantErr)
					}
					if want != got {
						t.Errorf("seed %d, Get %s at %q differs (-cacher +live):\n%s", differentialSeed, key, rv, cmp.Diff(decodedPages([]string{want}), decodedPages([]string{got})))
					}
				}
			}
		}
	})

	t.Run("Watch", func(t *testing.T) {
		for i, req := range generateWatchRequests(t, r, 120, changes, objects) {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				want, wantErr := collectEvents(ctx, watchCache, req)
				if wantErr != nil {
					t.Fatalf("seed %d, %v: the cacher: %v", differentialSeed, req, wantErr)
				}
				events += len(want)
				got, gotErr := collectEvents(ctx, live, req)
				if gotErr != nil {
					t.Errorf("seed %d, %v: the live store: %v", differentialSeed, req, gotErr)
				}
				if !sameEvents(want, got) {
					t.Errorf("seed %d, %v: events differ (-cacher +live):\n%s", differentialSeed, req, cmp.Diff(eventsOf(want), eventsOf(got)))
				}
			})
		}
	})
	t.Logf("compared %d pages and %d events", pages, events)
	if pages < 400 || events < 120 {
		t.Errorf("seed %d: only %d pages and %d events compared: the generated requests select too little", differentialSeed, pages, events)
	}
}
