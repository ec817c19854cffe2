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

package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// watcherCount is the size of the watching population of fault 6.
const watcherCount = 1000

// watcher is one selective client: a client-go informer on the events
// about one object, through one version.
type watcher struct {
	mu    sync.Mutex
	seen  map[string]bool
	lists int // full lists (list calls or watch-list streams)
}

func (w *watcher) add(obj any) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen[m.GetName()] = true
}

func (w *watcher) has(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[name]
}

func (w *watcher) listCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lists
}

// TestWatchersAcrossRestart is fault 6: 1,000 selective watchers (client-go
// informers, each on the events about one object, a third per version)
// across a restart of the server (SIGTERM, as in a rolling update) under
// the steady load: every event acknowledged before, during or after the
// restart reaches its watcher, whether the informer resumed from its
// resourceVersion or listed again.
func TestWatchersAcrossRestart(t *testing.T) {
	etcd := startEtcd(t, 1)
	s := startServer(t, "--etcd-servers="+endpoints(etcd))
	namespace := namespaceFor(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watchers := make([]*watcher, watcherCount)
	var synced []cache.InformerSynced
	clients := map[string]rest.Interface{}
	for _, version := range []string{coreV1, eventsV1beta1, eventsV1} {
		clients[version] = restClient(t, s.RestConfig, version)
	}
	for i := range watchers {
		version := []string{coreV1, eventsV1beta1, eventsV1}[i%3]
		w := &watcher{seen: map[string]bool{}}
		watchers[i] = w
		informer := cache.NewSharedIndexInformer(countingListWatch(clients[version], version, namespace, fmt.Sprintf("w-%d", i), w),
			objectFor(version), 0, cache.Indexers{})
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: w.add}); err != nil {
			t.Fatal(err)
		}
		go informer.RunWithContext(ctx)
		synced = append(synced, informer.HasSynced)
	}
	syncCtx, syncCancel := context.WithTimeout(ctx, 3*time.Minute)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), synced...) {
		t.Fatalf("the %d informers did not sync in 3m", watcherCount)
	}

	var specs []reporterSpec
	for _, spec := range steadyReporters() {
		spec.objects, spec.objectPrefix = watcherCount, "w"
		specs = append(specs, spec)
	}
	l := startLoad(t, s.RestConfig, namespace, specs)
	h := watchHealth(t, s.RestConfig)
	l.waitAcked(t, 60, time.Minute)

	_ = s.Stop() // SIGTERM: a graceful restart, as in a rolling update
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	readyAt := h.waitReady(t, end, recoveryTimeout)
	var writeAt time.Time
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, recoveryTimeout, true, func(context.Context) (bool, error) {
		writeAt = l.firstAckAfter(end)
		return !writeAt.IsZero(), nil
	}); err != nil {
		t.Fatalf("no create acknowledged within %v of the restart", recoveryTimeout)
	}
	l.waitAcked(t, 60, recoveryTimeout)
	l.stop()
	h.stop()
	acked, errs, maxLatency, hung := l.snapshot()

	// Every acknowledged event reaches the watcher of its object.
	var missed []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, recoveryTimeout, true, func(context.Context) (bool, error) {
		missed = missed[:0]
		for name, w := range acked {
			var i int
			if _, err := fmt.Sscanf(w.regarding, "w-%d", &i); err != nil {
				return false, err
			}
			if !watchers[i].has(name) {
				missed = append(missed, fmt.Sprintf("%s (about %s, watcher through %s)", name, w.regarding, []string{coreV1, eventsV1beta1, eventsV1}[i%3]))
			}
		}
		return len(missed) == 0, nil
	})
	if err != nil {
		t.Errorf("%d of %d acknowledged events never reached their watcher:\n%s", len(missed), len(acked), strings.Join(first(missed, 20), "\n"))
	}
	relisted := 0
	for _, w := range watchers {
		if w.listCount() > 1 {
			relisted++
		}
	}
	lost := verify(t, s.RestConfig, namespace, acked)
	notReady, _, livezFailures := h.summary()
	note := fmt.Sprintf("%d watchers: %d listed again, %d resumed; %d events missed", watcherCount, relisted, watcherCount-relisted, len(missed))
	record(result{
		fault: "6. server restart (SIGTERM) under 1,000 watchers", acknowledged: len(acked), lost: len(lost), errors: errs,
		maxLatency: maxLatency, notReady: notReady, timeToReady: readyAt.Sub(end), timeToWrite: writeAt.Sub(end), note: note,
	})
	if len(lost) > 0 {
		t.Errorf("%d of %d acknowledged creates lost or changed:\n%s", len(lost), len(acked), strings.Join(first(lost, 20), "\n"))
	}
	if hung > 0 {
		t.Errorf("%d creates got no answer within %v", hung, serverRequestTimeout+clientSlack)
	}
	if len(livezFailures) > 0 {
		t.Errorf("/livez failed while the server answered:\n%s", strings.Join(first(livezFailures, 10), "\n"))
	}
	t.Logf("6: %d acknowledged, errors %s, %s, ready %v and writable %v after the restart",
		len(acked), formatCodes(errs), note, readyAt.Sub(end), writeAt.Sub(end))
}

// restClient is a client-go REST client for version's events.
func restClient(t *testing.T, config *rest.Config, version string) rest.Interface {
	t.Helper()
	c := rest.CopyConfig(config)
	clientset, err := kubernetes.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	switch version {
	case coreV1:
		return clientset.CoreV1().RESTClient()
	case eventsV1beta1:
		return clientset.EventsV1beta1().RESTClient()
	default:
		return clientset.EventsV1().RESTClient()
	}
}

// objectFor is the informer's object type for version.
func objectFor(version string) runtime.Object {
	switch version {
	case coreV1:
		return &corev1.Event{}
	case eventsV1beta1:
		return &eventsv1beta1.Event{}
	default:
		return &eventsv1.Event{}
	}
}

// countingListWatch lists and watches the events of namespace about
// object (involvedObject.name or regarding.name, per version) and counts
// the full lists in w.
func countingListWatch(c rest.Interface, version, namespace, object string, w *watcher) cache.ListerWatcher {
	field := "regarding.name"
	if version == coreV1 {
		field = "involvedObject.name"
	}
	selector := fields.OneTermEqualSelector(field, object).String()
	lw := cache.NewFilteredListWatchFromClient(c, "events", namespace, func(options *metav1.ListOptions) {
		options.FieldSelector = selector
	})
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			w.mu.Lock()
			w.lists++
			w.mu.Unlock()
			return lw.ListWithContext(ctx, options)
		},
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			if options.SendInitialEvents != nil && *options.SendInitialEvents {
				w.mu.Lock()
				w.lists++
				w.mu.Unlock()
			}
			return lw.WatchWithContext(ctx, options)
		},
	}
}
