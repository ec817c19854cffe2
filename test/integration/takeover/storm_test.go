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

package takeover

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"

	"github.com/kube-events/events-apiserver/pkg/generated/clientset/versioned"
)

// acknowledgingSink is a tools/events sink that keeps the answer to each
// create that succeeded: the occurrences the server acknowledged.
type acknowledgingSink struct {
	events.EventSink

	mu       sync.Mutex
	sent     []string // names of the acknowledged creates, as sent
	answered []string // and as answered: the live event's, when folded
}

func (s *acknowledgingSink) Create(ctx context.Context, event *eventsv1.Event) (*eventsv1.Event, error) {
	answer, err := s.EventSink.Create(ctx, event)
	if err == nil {
		s.mu.Lock()
		s.sent, s.answered = append(s.sent, event.Name), append(s.answered, answer.Name)
		s.mu.Unlock()
	}
	return answer, err
}

func (s *acknowledgingSink) acknowledged() (sent, answered []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sent...), append([]string(nil), s.answered...)
}

// retryAfterCounter counts the 429 answers that carry a Retry-After header,
// as kube-apiserver passes them on to the client.
type retryAfterCounter struct {
	next http.RoundTripper

	mu    sync.Mutex
	count int
}

func (c *retryAfterCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" {
		c.mu.Lock()
		c.count++
		c.mu.Unlock()
	}
	return resp, err
}

func (c *retryAfterCounter) refused() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

// TestCrashLoopingRecorderThroughKubeAPIServer: a controller in a crash
// loop, each incarnation an unmodified tools/events recorder that records
// the same occurrence through kube-apiserver's events.k8s.io/v1, storms one
// series. Its creates past the reporter's burst get 429 with Retry-After
// (client-go waits and sends them again), those past folding's threshold
// are folded into the live event, and the stored counts hold exactly the
// occurrences the server acknowledged.
func TestCrashLoopingRecorderThroughKubeAPIServer(t *testing.T) {
	ctx := testContext(t)
	namespace := newNamespace(t)
	const incarnations = 8

	counter := &retryAfterCounter{}
	config := rest.CopyConfig(cluster.AdminConfig)
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		counter.next = rt
		return counter
	})
	sink := &acknowledgingSink{EventSink: &events.EventSinkImpl{Interface: kubeClient(t, config).EventsV1()}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "crashing", Namespace: namespace, UID: "uid-crashing"}}
	for i := range incarnations {
		broadcaster := events.NewBroadcaster(sink)
		if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
			t.Fatal(err)
		}
		broadcaster.NewRecorder(scheme.Scheme, "example.com/crash-looping").
			Eventf(pod, nil, corev1.EventTypeWarning, "FailedSync", "Sync", "sync failed, exiting")
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
			sent, _ := sink.acknowledged()
			return len(sent) == i+1, nil
		})
		broadcaster.Shutdown()
		if err != nil {
			t.Fatalf("incarnation %d: its create not acknowledged: %v", i, err)
		}
	}

	sent, answered := sink.acknowledged()
	folded := 0
	for i := range sent {
		if answered[i] != sent[i] {
			folded++
		}
	}
	t.Logf("%d creates acknowledged, %d of them folded into the live event; %d answers 429 with Retry-After", len(sent), folded, counter.refused())
	if folded == 0 {
		t.Errorf("no create was folded, want those past the %d-th", foldingAfter)
	}
	if counter.refused() == 0 {
		t.Errorf("no 429 with Retry-After reached the client, want the creates past the reporter's burst (%d) refused", reporterBurst)
	}

	// Every acknowledged occurrence is counted in what is stored.
	ours, err := versioned.NewForConfig(cluster.ServerConfig)
	if err != nil {
		t.Fatal(err)
	}
	var stored int32
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := ours.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=crashing"})
		if err != nil {
			return false, err
		}
		stored = 0
		for _, e := range list.Items {
			if e.Series != nil {
				stored += e.Series.Count
			} else {
				stored++
			}
		}
		return stored == int32(len(sent)), nil
	})
	if err != nil {
		t.Errorf("occurrences stored: %d, want the %d acknowledged", stored, len(sent))
	}
}
