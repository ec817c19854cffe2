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
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-events/events-apiserver/test/harness"
)

// Settings of the folded storm: stormWriters create isomorphic events of
// one series as fast as they are answered, and the server is killed once
// stormAcked creates were answered 201: past the first creates of the
// burst (stored as sent) and the rate limits' bursts, in the folding.
const (
	stormWriters = 16
	stormAcked   = 150
)

// TestFoldedStormKill storms one series on the standalone server with its
// default event policy (folding on), kills the server (SIGKILL) and starts
// it again on the same data: the occurrences the store counts for the
// series afterwards (the sum of its events' counts) must be at least the
// creates answered 201, as a folded create is answered only once its
// occurrence is in etcd. It prints both numbers and the latency of the
// folded creates.
func TestFoldedStormKill(t *testing.T) {
	s := startServer(t)
	namespace := namespaceFor(t)
	storm := startStorm(t, s.RestConfig, namespace)
	h := watchHealth(t, s.RestConfig)
	storm.waitAnswered(t, stormAcked, 2*time.Minute)
	// The server's own account of the group commit: how long folded
	// creates waited for their writes (the client's latency adds the
	// rate limits' Retry-After).
	metrics, err := s.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	waits := metrics.Histogram("events_apiserver_fold_wait_seconds", nil)

	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	storm.stop()
	answered, folded, errs := storm.snapshot()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	readyAt := h.waitReady(t, end, recoveryTimeout)
	h.stop()

	stored, events := storedOccurrences(t, s.RestConfig, namespace)
	p50, p99 := harness.Quantile(folded, 0.5), harness.Quantile(folded, 0.99)
	note := fmt.Sprintf("%d occurrences stored in %d events; folded creates %d, latency p50 %v p99 %v",
		stored, events, len(folded), p50.Round(time.Millisecond), p99.Round(time.Millisecond))
	record(result{
		fault: "7. server SIGKILL during a folded storm (default policy)", acknowledged: answered,
		lost: max(answered-stored, 0), errors: errs, maxLatency: storm.maxLatency(), timeToReady: readyAt.Sub(end), note: note,
	})
	t.Logf("%d creates answered 201 by %d writers of one series, %d occurrences stored after SIGKILL and restart (%d events); errors %s; "+
		"folded creates: %d, latency p50 %v, p99 %v; their wait for the write (server): %d, p50 %.3fs, p99 %.3fs",
		answered, stormWriters, stored, events, formatCodes(errs), len(folded), p50, p99,
		waits.GetAggregatedSampleCount(), waits.Quantile(0.5), waits.Quantile(0.99))
	if len(folded) == 0 {
		t.Errorf("no create was folded: the storm did not reach folding")
	}
	if stored < answered {
		t.Errorf("%d occurrences stored after the restart, fewer than the %d creates answered 201: %d acknowledged occurrences lost",
			stored, answered, answered-stored)
	}
}

// storm is stormWriters writers creating isomorphic core/v1 events (one
// series, as a crash-looping reporter's) as fast as they are answered.
type storm struct {
	mu       sync.Mutex
	answered int
	folded   []time.Duration // latencies of the creates answered with another event
	slowest  time.Duration
	errors   map[string]int

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// startStorm starts the writers against config, in namespace.
func startStorm(t *testing.T, config *rest.Config, namespace string) *storm {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st := &storm{errors: map[string]int{}, cancel: cancel}
	for w := range stormWriters {
		c := rest.CopyConfig(config)
		c.Timeout = serverRequestTimeout + clientSlack
		c.UserAgent = fmt.Sprintf("storm-writer-%d", w)
		clientset, err := kubernetes.NewForConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		st.done.Go(func() { st.write(ctx, clientset, namespace, w) })
	}
	t.Cleanup(st.stop)
	return st
}

func (st *storm) write(ctx context.Context, clientset kubernetes.Interface, namespace string, writer int) {
	for seq := 0; ctx.Err() == nil; seq++ {
		now := metav1.Now()
		name := fmt.Sprintf("web-0.storm-%d-%d", writer, seq)
		start := time.Now()
		e, err := clientset.CoreV1().Events(namespace).Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: namespace},
			InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: "web-0", UID: "uid-web-0"},
			Reason:         "BackOff",
			Message:        fmt.Sprintf("Back-off restarting failed container (writer %d, attempt %d)", writer, seq),
			Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
			FirstTimestamp: now,
			LastTimestamp:  now,
			Count:          1,
			Type:           corev1.EventTypeWarning,
		}, metav1.CreateOptions{})
		latency := time.Since(start)
		if err != nil && ctx.Err() != nil {
			return // stopped
		}
		st.mu.Lock()
		st.slowest = max(st.slowest, latency)
		if err == nil {
			st.answered++
			if e.Name != name {
				st.folded = append(st.folded, latency)
			}
		} else {
			st.errors[errorCode(err)]++
		}
		st.mu.Unlock()
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// stop stops the writers and waits for their requests in flight.
func (st *storm) stop() {
	st.cancel()
	st.done.Wait()
}

// snapshot returns the creates answered 201, the latencies of the folded
// ones and the errors by code.
func (st *storm) snapshot() (int, []time.Duration, map[string]int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	errs := make(map[string]int, len(st.errors))
	for k, v := range st.errors {
		errs[k] = v
	}
	return st.answered, append([]time.Duration(nil), st.folded...), errs
}

func (st *storm) maxLatency() time.Duration {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.slowest
}

// waitAnswered waits until n creates were answered 201.
func (st *storm) waitAnswered(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		answered, _, _ := st.snapshot()
		return answered >= n, nil
	})
	if err != nil {
		answered, _, errs := st.snapshot()
		t.Fatalf("%d creates of the storm answered within %v, want %d (errors: %s)", answered, timeout, n, formatCodes(errs))
	}
}

// storedOccurrences is the sum of the counts of the events in namespace,
// and how many events there are.
func storedOccurrences(t *testing.T, config *rest.Config, namespace string) (int, int) {
	t.Helper()
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	occurrences, events := 0, 0
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := clientset.CoreV1().Events(namespace).List(ctx, opts)
		if err != nil {
			t.Fatalf("listing the storm's events: %v", err)
		}
		for _, e := range list.Items {
			occurrences += int(max(e.Count, 1))
			events++
		}
		if list.Continue == "" {
			return occurrences, events
		}
		opts.Continue = list.Continue
	}
}
