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

package history

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// load is the fault tests' clients: writers that create events in one
// namespace, each at a paced rate, through the replicas they are given,
// and keep every create the server acknowledged (2xx) with its
// resourceVersion. A create that failed may still have been written (its
// answer was lost): the history may hold it, and the tests do not ask it
// to.
type load struct {
	namespace string
	stop      chan struct{}
	wg        sync.WaitGroup

	mu           sync.Mutex
	clients      []kubernetes.Interface
	acknowledged map[string]int64
	newest       int64 // the greatest resourceVersion acknowledged
	failed       int
	lastErr      error
}

// startLoad starts writers that each create perSecond events a second
// (as fast as the server answers if 0) in namespace, spread over clients,
// until stopped or the test ends.
func startLoad(ctx context.Context, t *testing.T, namespace string, writers int, perSecond float64, clients ...kubernetes.Interface) *load {
	l := &load{namespace: namespace, stop: make(chan struct{}), clients: clients, acknowledged: map[string]int64{}}
	for w := range writers {
		l.wg.Go(func() { l.write(ctx, w, perSecond) })
	}
	t.Cleanup(func() { l.halt() })
	return l
}

func (l *load) write(ctx context.Context, w int, perSecond float64) {
	var tick <-chan time.Time
	if perSecond > 0 {
		ticker := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
		defer ticker.Stop()
		tick = ticker.C
	}
	for i := 0; ; i++ {
		if tick != nil {
			select {
			case <-l.stop:
				return
			case <-ctx.Done():
				return
			case <-tick:
			}
		}
		select {
		case <-l.stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		l.mu.Lock()
		c := l.clients[(w+i)%len(l.clients)]
		l.mu.Unlock()
		name := fmt.Sprintf("w%d-%05d", w, i)
		e := &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l.namespace},
			EventTime:  metav1.NowMicro(), Reason: "Load", Type: "Normal", Action: "Loading",
			ReportingController: "load", ReportingInstance: "load-0",
			// One object per event: no two events are of one series,
			// which the server would fold into one.
			Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: l.namespace, Name: "pod-" + name, APIVersion: "v1"},
		}
		reqCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		created, err := c.EventsV1().Events(l.namespace).Create(reqCtx, e, metav1.CreateOptions{})
		cancel()
		l.mu.Lock()
		if err == nil {
			var rv int64
			_, _ = fmt.Sscan(created.ResourceVersion, &rv)
			l.acknowledged[name] = rv
			l.newest = max(l.newest, rv)
		} else {
			l.failed++
			l.lastErr = err
		}
		l.mu.Unlock()
	}
}

// use sends the following creates through clients instead.
func (l *load) use(clients ...kubernetes.Interface) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clients = clients
}

// count is the number of creates acknowledged so far.
func (l *load) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acknowledged)
}

// newestRevision is the greatest resourceVersion acknowledged so far.
func (l *load) newestRevision() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.newest
}

// acknowledgedAfter is the names of the creates acknowledged so far at a
// resourceVersion after rv.
func (l *load) acknowledgedAfter(rv int64) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var names []string
	for name, at := range l.acknowledged {
		if at > rv {
			names = append(names, name)
		}
	}
	return names
}

// halt stops the writers and waits for them; it returns the acknowledged
// creates, by name, and how many creates failed.
func (l *load) halt() (map[string]int64, int) {
	l.mu.Lock()
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.mu.Unlock()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	acknowledged := make(map[string]int64, len(l.acknowledged))
	for name, rv := range l.acknowledged {
		acknowledged[name] = rv
	}
	return acknowledged, l.failed
}

// historyNames lists namespace's whole history (every page) and counts
// each name's items.
func historyNames(ctx context.Context, c kubernetes.Interface, namespace string) (map[string]int, error) {
	names := map[string]int{}
	opts := metav1.ListOptions{FieldSelector: "history.since=1h", Limit: 500}
	for {
		list, err := c.EventsV1().Events(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, e := range list.Items {
			names[e.Name]++
		}
		if list.Continue == "" {
			return names, nil
		}
		opts.Continue = list.Continue
	}
}

// archived is what a history holds of the acknowledged creates.
type archived struct {
	// Missing are the acknowledged creates the history lacks, as
	// name@resourceVersion; Twice the names it holds more than once.
	Missing, Twice []string
}

// compare is what names, a history's counts, holds of acknowledged.
func compare(acknowledged map[string]int64, names map[string]int) archived {
	var a archived
	for name, rv := range acknowledged {
		if names[name] == 0 {
			a.Missing = append(a.Missing, fmt.Sprintf("%s@%d", name, rv))
		}
	}
	for name, n := range names {
		if n > 1 {
			a.Twice = append(a.Twice, name)
		}
	}
	sort.Strings(a.Missing)
	sort.Strings(a.Twice)
	return a
}

// checkArchived waits, at most within, until namespace's history holds
// every acknowledged create, and fails the test unless it holds each of
// them exactly once and no name twice.
func checkArchived(ctx context.Context, t *testing.T, c kubernetes.Interface, namespace string, acknowledged map[string]int64, within time.Duration) {
	t.Helper()
	var names map[string]int
	var listErr error
	err := waitPoll(ctx, within, func() bool {
		names, listErr = historyNames(ctx, c, namespace)
		return listErr == nil && len(compare(acknowledged, names).Missing) == 0
	})
	if listErr != nil {
		t.Fatalf("history of %s: %v", namespace, listErr)
	}
	got := compare(acknowledged, names)
	if len(got.Missing) > 0 || len(got.Twice) > 0 || err != nil {
		diff := cmp.Diff(archived{}, archived{Missing: head(got.Missing), Twice: head(got.Twice)})
		t.Errorf("history of %s: %d events for %d acknowledged creates; missing %d, more than once %d (-want +got, the first 10 of each):\n%s",
			namespace, len(names), len(acknowledged), len(got.Missing), len(got.Twice), diff)
	}
}
