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

// Command recorder storms one series from a pod of the test cluster, as a
// controller in a crash loop does: each incarnation is a new, unmodified
// client-go tools/events recorder (in-cluster credentials, the preferred
// events.k8s.io/v1) that records the same occurrence once and stops.
// Several incarnations run at once. It prints one JSON line: the creates
// acknowledged, those the answer folded into another event, those refused
// for good, and the 429 answers with Retry-After client-go waited on.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
)

// Result is what the recorder prints.
type Result struct {
	// Acknowledged are the creates answered 201; Folded, those of them
	// whose answer is another (the live) event.
	Acknowledged int `json:"acknowledged"`
	Folded       int `json:"folded"`
	// Refused are the creates that failed for good: tools/events drops them.
	Refused int `json:"refused"`
	// RetryAfter are the 429 answers with a Retry-After header.
	RetryAfter int64  `json:"retryAfter"`
	Elapsed    string `json:"elapsed"`
}

// sink is the tools/events sink of client-go that keeps count of what each
// create was answered.
type sink struct {
	events.EventSink

	mu     sync.Mutex
	result Result
	done   chan struct{} // a send per answered create
}

func (s *sink) Create(ctx context.Context, event *eventsv1.Event) (*eventsv1.Event, error) {
	answer, err := s.EventSink.Create(ctx, event)
	var status apierrors.APIStatus
	if err != nil && !errors.As(err, &status) {
		// Not an answer: tools/events sends it again.
		return answer, err
	}
	s.mu.Lock()
	if err == nil {
		s.result.Acknowledged++
		if answer.Name != event.Name {
			s.result.Folded++
		}
	} else {
		s.result.Refused++
	}
	s.mu.Unlock()
	s.done <- struct{}{}
	return answer, err
}

// retryAfterCounter counts the 429 answers that carry Retry-After.
type retryAfterCounter struct {
	next  http.RoundTripper
	count atomic.Int64
}

func (c *retryAfterCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" {
		c.count.Add(1)
	}
	return resp, err
}

func main() {
	namespace := flag.String("namespace", "", "the namespace of the regarding pod")
	pod := flag.String("regarding", "crashing", "the name of the regarding pod")
	incarnations := flag.Int("incarnations", 300, "recorders, each recording the occurrence once")
	parallel := flag.Int("parallel", 20, "recorders at once")
	timeout := flag.Duration("timeout", 5*time.Minute, "how long an incarnation may wait for its create's answer")
	flag.Parse()
	if err := run(*namespace, *pod, *incarnations, *parallel, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "recorder:", err)
		os.Exit(1)
	}
}

func run(namespace, pod string, incarnations, parallel int, timeout time.Duration) error {
	config, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	counter := &retryAfterCounter{}
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		counter.next = rt
		return counter
	})
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	regarding := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: namespace, UID: types.UID("uid-" + pod)}}
	ctx := context.Background()
	start := time.Now()
	var (
		wg      sync.WaitGroup
		totalMu sync.Mutex
		total   Result
	)
	next := make(chan struct{}, incarnations)
	for range incarnations {
		next <- struct{}{}
	}
	close(next)
	errs := make(chan error, parallel)
	for range parallel {
		wg.Go(func() {
			for range next {
				s := &sink{EventSink: &events.EventSinkImpl{Interface: client.EventsV1()}, done: make(chan struct{}, 1)}
				broadcaster := events.NewBroadcaster(s)
				if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
					errs <- err
					return
				}
				broadcaster.NewRecorder(scheme.Scheme, "example.com/crash-looping").
					Eventf(regarding, nil, corev1.EventTypeWarning, "FailedSync", "Sync", "sync failed, exiting")
				select {
				case <-s.done:
				case <-time.After(timeout):
					errs <- fmt.Errorf("an incarnation's create was not answered within %v", timeout)
				}
				broadcaster.Shutdown()
				s.mu.Lock()
				totalMu.Lock()
				total.Acknowledged += s.result.Acknowledged
				total.Folded += s.result.Folded
				total.Refused += s.result.Refused
				totalMu.Unlock()
				s.mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	total.RetryAfter = counter.count.Load()
	total.Elapsed = time.Since(start).Round(time.Millisecond).String()
	return json.NewEncoder(os.Stdout).Encode(total)
}
