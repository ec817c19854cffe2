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

package mirror_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apitypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apiserver"
	"github.com/kube-events/events-apiserver/pkg/mirror"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
	"github.com/kube-events/events-apiserver/test/eventstore"
	"github.com/kube-events/events-apiserver/test/harness"
)

func startStore(t *testing.T) *eventstorage.REST {
	t.Helper()
	return eventstore.Start(t, false)
}

func upstreamEvent(name, resourceVersion string, count int32) *corev1.Event {
	now := time.Now()
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: apitypes.UID("upstream-" + name), ResourceVersion: resourceVersion,
			CreationTimestamp: metav1.NewTime(now.Add(-time.Minute)),
		},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", APIVersion: "v1"},
		Reason:         "BackOff",
		Message:        "Back-off restarting failed container",
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: metav1.NewTime(now.Add(-time.Minute)),
		LastTimestamp:  metav1.NewTime(now),
		Count:          count,
		Type:           corev1.EventTypeWarning,
	}
}

func stored(t *testing.T, store *eventstorage.REST, name string) *core.Event {
	t.Helper()
	obj, err := store.Get(genericapirequest.WithNamespace(context.Background(), "default"), name, &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*core.Event)
}

// metricValue reads a counter (or gauge) of the legacy registry, which
// the server's /metrics serves.
func metricValue(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	m, err := harness.GatherMetrics(legacyregistry.DefaultGatherer)
	if err != nil {
		t.Fatal(err)
	}
	return m.Value(name, labels)
}

// Sync against the real registry store on etcd: create, no rewrite of an
// unchanged upstream version, update on a new one, the legacy core/v1
// rules, and the refusal to mirror kube-apiserver's own stored event.
func TestSyncUpsertsIntoTheStore(t *testing.T) {
	store := startStore(t)
	m := mirror.New(nil, store, apiserver.Codecs.UniversalDecoder(), mirror.Options{}, nil)
	ctx := context.Background()
	writes := func(operation string) float64 {
		return metricValue(t, "events_apiserver_mirror_writes_total", map[string]string{"operation": operation})
	}

	var before string
	for _, step := range []struct {
		name             string
		upstream         *corev1.Event
		wantWrote        bool
		wantOperation    string
		wantCount        int32
		wantUpstreamRV   string
		wantOurRVChanged bool
	}{
		{"first sight creates", upstreamEvent("web-0.1", "100", 1), true, mirror.OperationCreate, 1, "100", true},
		{"same upstream version again (a relist) writes nothing", upstreamEvent("web-0.1", "100", 1), false, "", 1, "100", false},
		{"an upstream update (count) updates ours", upstreamEvent("web-0.1", "105", 2), true, mirror.OperationUpdate, 2, "105", true},
	} {
		t.Run(step.name, func(t *testing.T) {
			creates, updates := writes(mirror.OperationCreate), writes(mirror.OperationUpdate)
			wrote, err := m.Sync(ctx, step.upstream)
			if err != nil {
				t.Fatal(err)
			}
			if wrote != step.wantWrote {
				t.Errorf("wrote = %v, want %v", wrote, step.wantWrote)
			}
			got := stored(t, store, "web-0.1")
			want := map[string]string{
				mirror.AnnotationUID:             string(step.upstream.UID),
				mirror.AnnotationResourceVersion: step.wantUpstreamRV,
			}
			if diff := cmp.Diff(want, got.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if got.Count != step.wantCount || got.Labels[mirror.LabelMirroredFrom] != mirror.SourceKubeAPIServer {
				t.Errorf("stored count %d, labels %v", got.Count, got.Labels)
			}
			if got.UID == step.upstream.UID || got.UID == "" {
				t.Errorf("stored uid %q, want one of our own", got.UID)
			}
			if before != "" && (got.ResourceVersion != before) != step.wantOurRVChanged {
				t.Errorf("our resourceVersion %s -> %s, want changed=%v", before, got.ResourceVersion, step.wantOurRVChanged)
			}
			before = got.ResourceVersion
			wantWrites := map[string]float64{mirror.OperationCreate: 0, mirror.OperationUpdate: 0}
			if step.wantOperation != "" {
				wantWrites[step.wantOperation] = 1
			}
			gotWrites := map[string]float64{mirror.OperationCreate: writes(mirror.OperationCreate) - creates,
				mirror.OperationUpdate: writes(mirror.OperationUpdate) - updates}
			if diff := cmp.Diff(wantWrites, gotWrites); diff != "" {
				t.Errorf("writes_total grew by (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("legacy rules: an event about an object in another namespace is invalid", func(t *testing.T) {
		invalid := upstreamEvent("web-0.2", "200", 1)
		invalid.InvolvedObject.Namespace = "other"
		if _, err := m.Sync(ctx, invalid); !apierrors.IsInvalid(err) {
			t.Errorf("Sync = %v, want Invalid", err)
		}
	})
	t.Run("legacy rules: no events.k8s.io fields needed", func(t *testing.T) {
		if ev := stored(t, store, "web-0.1"); ev.Action != "" || !ev.EventTime.IsZero() {
			t.Errorf("stored legacy event gained events.k8s.io fields: %+v", ev)
		}
	})
	t.Run("kube-apiserver's own event in our store (offload mode) is refused", func(t *testing.T) {
		// What kube-apiserver with --etcd-servers-overrides=/events#<our
		// etcd> stores: the upstream event itself, under its own uid.
		own := upstreamEvent("web-0.3", "", 1)
		internal, err := mirror.Convert(apiserver.Codecs.UniversalDecoder(), own)
		if err != nil {
			t.Fatal(err)
		}
		// As kube-apiserver's core/v1 create would.
		coreV1 := genericapirequest.WithRequestInfo(genericapirequest.WithNamespace(ctx, "default"), &genericapirequest.RequestInfo{
			IsResourceRequest: true, APIPrefix: "api", APIVersion: "v1", Namespace: "default", Resource: "events", Verb: "create",
		})
		obj, err := store.Create(coreV1, internal, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		shared := obj.(*core.Event)
		own.UID, own.ResourceVersion = shared.UID, shared.ResourceVersion
		if _, err := m.Sync(ctx, own); !errors.Is(err, mirror.ErrSharedStore) {
			t.Errorf("Sync = %v, want ErrSharedStore", err)
		}
	})
}

// failingStore is the real store whose first creates fail with a server
// timeout, as when etcd is briefly unreachable; it records when (on the
// mirror's clock) each create was attempted, once that create returned:
// an attempt counted is a write done (or failed), not one in flight.
type failingStore struct {
	*eventstorage.REST
	clock    clock.PassiveClock
	mu       sync.Mutex
	failures int         // creates still to fail
	attempts []time.Time // creates that returned, at their start
	busy     int         // syncs between their Get and the end of their Create
}

func (s *failingStore) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	s.mu.Lock()
	s.busy++
	s.mu.Unlock()
	return s.REST.Get(ctx, name, options)
}

func (s *failingStore) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	s.mu.Lock()
	attempted := s.clock.Now()
	fail := s.failures > 0
	if fail {
		s.failures--
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.attempts = append(s.attempts, attempted)
		s.busy--
	}()
	if fail {
		return nil, apierrors.NewServerTimeout(core.Resource("events"), "create", 1)
	}
	return s.REST.Create(ctx, obj, validate, options)
}

func (s *failingStore) attempted() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.attempts...)
}

func (s *failingStore) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busy == 0
}

// A failed write is retried with the workqueue's exponential backoff
// (100ms, 200ms, 400ms, capped at 500ms here) until it succeeds, and never
// dropped; an event our validation refuses is dropped at once, counted and
// not retried. Time is a fake clock, stepped by 10ms while no write is in
// progress; a step may still land between a failed write and its retry
// being scheduled, so each delay may be up to 250ms late (less than the
// 300ms an uncapped doubling would add).
func TestWorkersRetryFailedWritesUntilTheySucceed(t *testing.T) {
	store := startStore(t)
	start := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name         string
		failures     int
		invalid      bool
		wantStored   bool
		wantDelays   []time.Duration // between consecutive attempts
		wantRefusals float64
	}{
		{name: "stored at the first attempt", wantStored: true},
		{name: "five failures, then stored", failures: 5, wantStored: true,
			wantDelays: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}},
		{name: "invalid: dropped at once", invalid: true, wantRefusals: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fakeClock := clocktesting.NewFakeClock(start)
			failing := &failingStore{REST: store, clock: fakeClock, failures: tt.failures}
			m := mirror.New(nil, failing, apiserver.Codecs.UniversalDecoder(), mirror.Options{
				Workers: 2, RetryBaseDelay: 100 * time.Millisecond, RetryMaxDelay: 500 * time.Millisecond,
			}, fakeClock)
			refusals := func() float64 {
				return metricValue(t, "events_apiserver_mirror_dropped_total", map[string]string{"reason": mirror.DropInvalid})
			}
			refusedBefore := refusals()
			offer, stop := m.StartWorkers(context.Background())
			defer stop()

			name := fmt.Sprintf("retry-%d-%v", tt.failures, tt.invalid)
			event := upstreamEvent(name, "300", 1)
			if tt.invalid {
				event.InvolvedObject.Namespace = "other"
			}
			offer(event, fakeClock.Now())

			isStored := func() (bool, error) {
				_, err := store.Get(genericapirequest.WithNamespace(context.Background(), "default"), name, &metav1.GetOptions{})
				return err == nil, err
			}
			// Done once every attempt returned and its outcome shows: the
			// event in the store, or the refusal counted.
			wantAttempts := len(tt.wantDelays) + 1
			err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				if len(failing.attempted()) >= wantAttempts && refusals()-refusedBefore >= tt.wantRefusals {
					if got, _ := isStored(); got || !tt.wantStored {
						return true, nil
					}
				}
				if failing.idle() {
					fakeClock.Step(10 * time.Millisecond)
				}
				return false, nil
			})
			if err != nil {
				got, getErr := isStored()
				t.Fatalf("%d attempts, want %d; stored = %v (%v), want %v: %v",
					len(failing.attempted()), wantAttempts, got, getErr, tt.wantStored, err)
			}
			attempts := failing.attempted()
			if len(attempts) != wantAttempts {
				t.Errorf("%d attempts, want %d", len(attempts), wantAttempts)
			}
			for i := 1; i < len(attempts); i++ {
				delay, want := attempts[i].Sub(attempts[i-1]), tt.wantDelays[i-1]
				if delay < want || delay >= want+250*time.Millisecond {
					t.Errorf("delay before attempt %d = %v, want %v (up to 250ms more)", i+1, delay, want)
				}
			}
			if got := refusals() - refusedBefore; got != tt.wantRefusals {
				t.Errorf("dropped{reason=invalid} grew by %v, want %v", got, tt.wantRefusals)
			}
			if got, err := isStored(); got != tt.wantStored {
				t.Errorf("stored = %v (%v), want %v", got, err, tt.wantStored)
			}
		})
	}
}
