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
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-events/events-apiserver/test/harness"
)

// TestMemoryLimit fills the live store of a server whose heap has a small
// soft limit (GOMEMLIMIT, as the server sets it from its container's
// memory limit) with creates that are not retried: past the limit's
// threshold the server refuses creates with 503 and Retry-After, and keeps
// serving reads, its process alive and live.
func TestMemoryLimit(t *testing.T) {
	const (
		softLimit = 160 << 20
		writers   = 8
		noteSize  = 8 << 10 // an event of about 9 KiB: the limit is reached in seconds
		maxEvents = 40_000  // about 350 MiB: far past the limit
	)
	// The rate limits are off: they would hold the load far below what
	// fills the store in seconds.
	s, err := harness.NewServer(serverBinary, filepath.Join(t.TempDir(), "data"), "--disable-admission-plugins=EventRateLimit")
	if err != nil {
		t.Fatal(err)
	}
	s.Env = []string{fmt.Sprintf("GOMEMLIMIT=%dMiB", softLimit>>20)}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if err := s.WaitReady(ctx, harness.ServerStartTimeout); err != nil {
		t.Fatal(err)
	}
	config := rest.CopyConfig(s.RestConfig)
	var retryAfter atomic.Value
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && resp.StatusCode == http.StatusServiceUnavailable {
				retryAfter.Store(resp.Header.Get("Retry-After"))
			}
			return resp, err
		})
	})
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}

	note := strings.Repeat("x", noteSize)
	var (
		next              atomic.Int64
		accepted, refused atomic.Int64
		firstRefusal      atomic.Value
		other             sync.Map
		wg                sync.WaitGroup
		stop              = make(chan struct{})
		stopOnce          sync.Once
		start             = time.Now()
	)
	for range writers {
		wg.Go(func() {
			for i := next.Add(1); i <= maxEvents; i = next.Add(1) {
				select {
				case <-stop:
					return
				default:
				}
				event := &corev1.Event{
					ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("filler-%d", i), Namespace: "default"},
					InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: fmt.Sprintf("pod-%d", i%1000)},
					Reason:         "Filling",
					Message:        note,
					Type:           corev1.EventTypeNormal,
					Source:         corev1.EventSource{Component: fmt.Sprintf("filler-%d", i%writers)},
				}
				err := client.CoreV1().RESTClient().Post().Namespace("default").Resource("events").Body(event).MaxRetries(0).Do(ctx).Error()
				switch {
				case err == nil:
					accepted.Add(1)
				case apierrors.IsServiceUnavailable(err):
					firstRefusal.CompareAndSwap(nil, err.Error())
					if refused.Add(1) >= 20 {
						stopOnce.Do(func() { close(stop) })
					}
				default:
					other.Store(err.Error(), true)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("GOMEMLIMIT=%d MiB: %d creates accepted, then %d refused with 503 (Retry-After %v) in %v: %v",
		softLimit>>20, accepted.Load(), refused.Load(), retryAfter.Load(), time.Since(start).Round(time.Millisecond), firstRefusal.Load())
	other.Range(func(err, _ any) bool {
		t.Errorf("create failed other than with 503: %v", err)
		return true
	})
	if accepted.Load() == 0 {
		t.Fatal("no create accepted: the idle server was already past the threshold; raise softLimit")
	}
	if refused.Load() == 0 {
		t.Fatalf("%d creates of about %d KiB accepted and none refused, want 503 before the heap passed its limit", accepted.Load(), noteSize>>10)
	}
	if got, _ := retryAfter.Load().(string); got != "10" {
		t.Errorf("503 with Retry-After %q, want 10", got)
	}
	if !strings.Contains(fmt.Sprint(firstRefusal.Load()), "memory limit") {
		t.Errorf("refusal %q, want one that names the memory limit", firstRefusal.Load())
	}

	// The server goes on: alive, live, and answering reads.
	if !s.Running() {
		t.Fatalf("the server exited: %v", s.Err())
	}
	if body, err := client.Discovery().RESTClient().Get().AbsPath("/livez").DoRaw(ctx); err != nil || string(body) != "ok" {
		t.Errorf("/livez: %q, %v", body, err)
	}
	list, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=pod-7"})
	if err != nil {
		t.Fatalf("list at the memory limit: %v", err)
	}
	if len(list.Items) == 0 {
		t.Error("list at the memory limit: no event about pod-7")
	}
	m, err := s.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Value("events_apiserver_memory_pressure_refused_total", nil); got < float64(refused.Load()) {
		t.Errorf("events_apiserver_memory_pressure_refused_total %v, want at least the %d refusals seen", got, refused.Load())
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
