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
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/util/compatibility"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
)

type fixedRESTOptions generic.RESTOptions

func (o fixedRESTOptions) GetRESTOptions(schema.GroupResource, runtime.Object) (generic.RESTOptions, error) {
	return generic.RESTOptions(o), nil
}

// eventsStorageConfig is the events' storage configuration, as the
// server's storage factory makes it, on the etcd at endpoints.
func eventsStorageConfig(t *testing.T, endpoints []string) *storagebackend.ConfigForResource {
	t.Helper()
	storageConfig := *storagebackend.NewDefaultConfig(DefaultEtcdPathPrefix, nil)
	storageConfig.Transport.ServerList = endpoints
	factory := NewStorageFactory(storageConfig, StorageMediaType, compatibility.DefaultBuildEffectiveVersion())
	resourceConfig, err := factory.NewConfig(core.Resource("events"), &core.Event{})
	if err != nil {
		t.Fatal(err)
	}
	return resourceConfig
}

// TestNoSpaceIsServiceUnavailable fills a real etcd with a small quota
// until it raises NOSPACE, then writes through the events store: creates
// and updates answer 503 with a Retry-After (a 500 without the wrapper),
// while reads and deletes, which etcd still serves, succeed.
func TestNoSpaceIsServiceUnavailable(t *testing.T) {
	cfg := testserver.NewTestConfig(t)
	cfg.QuotaBackendBytes = 8 << 20
	client := testserver.RunEtcd(t, cfg)

	resourceConfig := eventsStorageConfig(t, client.Endpoints())
	store, err := eventstorage.NewREST(eventregistry.NewStrategy(Scheme), eventstorage.Options{
		RESTOptions: fixedRESTOptions{StorageConfig: resourceConfig, ResourcePrefix: "events", DeleteCollectionWorkers: 1},
		TTL:         time.Hour, Unavailable: unavailableErrors,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.DestroyFunc)

	ctx := genericapirequest.WithNamespace(t.Context(), "ns")
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "create", APIPrefix: "api", APIVersion: "v1", Namespace: "ns", Resource: "events"})
	event := func(name string) *core.Event {
		now := metav1.Now()
		return &core.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "ns"},
			InvolvedObject: core.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "web", UID: "uid-web"},
			Reason:         "BackOff", Message: "Back-off restarting failed container", Type: core.EventTypeWarning,
			Source: core.EventSource{Component: "kubelet", Host: "node-1"}, Count: 1, FirstTimestamp: now, LastTimestamp: now,
		}
	}
	for _, name := range []string{"to-update", "to-delete"} {
		if _, err := store.Create(ctx, event(name), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s before NOSPACE: %v", name, err)
		}
	}

	// Fill etcd until it refuses a put for lack of space.
	filler := strings.Repeat("x", 512<<10)
	for i := 0; ; i++ {
		_, err := client.Put(t.Context(), fmt.Sprintf("/filler/%d", i), filler)
		if errors.Is(err, rpctypes.ErrNoSpace) {
			break
		}
		if err != nil {
			t.Fatalf("filling etcd, put %d: %v", i, err)
		}
		if i > 100 {
			t.Fatal("etcd took 50 MiB without raising NOSPACE")
		}
	}

	for _, tc := range []struct {
		name  string
		write func(context.Context) error
	}{{
		name: "create",
		write: func(ctx context.Context) error {
			_, err := store.Create(ctx, event("after"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			return err
		},
	}, {
		name: "update",
		write: func(ctx context.Context) error {
			updated := event("to-update")
			updated.Count = 2
			_, _, err := store.Update(ctx, updated.Name, rest.DefaultUpdatedObjectInfo(updated),
				rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
			return err
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.write(ctx)
			if !apierrors.IsServiceUnavailable(err) {
				t.Fatalf("%s under NOSPACE: %v (%T), want 503 Service Unavailable", tc.name, err, err)
			}
			if seconds, ok := apierrors.SuggestsClientDelay(err); !ok || seconds != RetryAfterSeconds {
				t.Errorf("suggested delay %d (%v), want %d", seconds, ok, RetryAfterSeconds)
			}
			if !strings.Contains(err.Error(), "database space exceeded") {
				t.Errorf("message %q does not say why", err)
			}

			// What the handler answers: the code and the Retry-After header.
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/ns/events", nil)
			responsewriters.ErrorNegotiated(err, Codecs, corev1.SchemeGroupVersion, w, r)
			if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" {
				t.Errorf("answered %d with Retry-After %q, want 503 with Retry-After 1", w.Code, w.Header().Get("Retry-After"))
			}
		})
	}

	if _, err := store.Get(ctx, "to-update", &metav1.GetOptions{}); err != nil {
		t.Errorf("get under NOSPACE: %v", err)
	}
	if _, _, err := store.Delete(ctx, "to-delete", rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete under NOSPACE: %v", err)
	}
}

// failingStorage answers every read and write with err, as the etcd3
// store hands back the etcd client's error.
type failingStorage struct {
	storage.Interface
	err error
}

func (s failingStorage) Create(context.Context, string, runtime.Object, runtime.Object, uint64) error {
	return s.err
}

func (s failingStorage) GuaranteedUpdate(context.Context, string, runtime.Object, bool, *storage.Preconditions, storage.UpdateFunc, runtime.Object) error {
	return s.err
}

func (s failingStorage) Delete(context.Context, string, runtime.Object, *storage.Preconditions, storage.ValidateObjectFunc, runtime.Object, storage.DeleteOptions) error {
	return s.err
}

func (s failingStorage) Get(context.Context, string, storage.GetOptions, runtime.Object) error {
	return s.err
}

func (s failingStorage) GetList(context.Context, string, storage.ListOptions, runtime.Object) error {
	return s.err
}

// TestRetryableErrorsAreServiceUnavailable passes the etcd client's own
// errors through the storage decorator: those etcd answers for a passing
// reason (out of space, no leader or an election, a request timed out,
// overloaded, no member reachable) become 503 with a Retry-After on every
// read and write, so that client-go waits and retries; every other error
// is left as it is (the generic store makes a 500, 404, 409 or 410 of it).
func TestRetryableErrorsAreServiceUnavailable(t *testing.T) {
	for _, tc := range []struct {
		err       error
		retryable bool
	}{
		{rpctypes.ErrNoSpace, true},
		{rpctypes.ErrTooManyRequests, true},
		{rpctypes.ErrNoLeader, true},
		{rpctypes.ErrLeaderChanged, true},
		{rpctypes.ErrStopped, true},
		{rpctypes.ErrTimeout, true},
		{rpctypes.ErrTimeoutDueToLeaderFail, true},
		{rpctypes.ErrTimeoutDueToConnectionLost, true},
		{rpctypes.ErrTimeoutWaitAppliedIndex, true},
		{rpctypes.ErrUnhealthy, true},
		// What gRPC answers when no member takes the connection.
		{status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:2379: connect: connection refused\""), true},
		// The etcd3 store wraps some errors with %w.
		{fmt.Errorf("list of events: %w", rpctypes.ErrLeaderChanged), true},

		{rpctypes.ErrCompacted, false},
		{rpctypes.ErrFutureRev, false},
		{rpctypes.ErrRequestTooLarge, false},
		{rpctypes.ErrTooManyOps, false},
		{rpctypes.ErrKeyNotFound, false},
		{rpctypes.ErrLeaseNotFound, false},
		{rpctypes.ErrPermissionDenied, false},
		{rpctypes.ErrCorrupt, false},
		{status.Error(codes.ResourceExhausted, "grpc: received message larger than max"), false},
		{context.DeadlineExceeded, false},
		{errors.New("decoding: unexpected EOF"), false},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			s := unavailableStorage{Interface: failingStorage{err: tc.err}, resource: core.Resource("events")}
			ctx := context.Background()
			for _, op := range []struct {
				name string
				call func() error
			}{
				{"create", func() error { return s.Create(ctx, "k", &core.Event{}, &core.Event{}, 1) }},
				{"update", func() error { return s.GuaranteedUpdate(ctx, "k", &core.Event{}, false, nil, nil, nil) }},
				{"delete", func() error {
					return s.Delete(ctx, "k", &core.Event{}, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{})
				}},
				{"get", func() error { return s.Get(ctx, "k", storage.GetOptions{}, &core.Event{}) }},
				{"list", func() error { return s.GetList(ctx, "k", storage.ListOptions{}, &core.EventList{}) }},
			} {
				err := op.call()
				if !tc.retryable {
					if err != tc.err {
						t.Errorf("%s: %v (%T), want the error unchanged", op.name, err, err)
					}
					continue
				}
				if !apierrors.IsServiceUnavailable(err) {
					t.Fatalf("%s: %v (%T), want 503 Service Unavailable", op.name, err, err)
				}
				if seconds, ok := apierrors.SuggestsClientDelay(err); !ok || seconds != RetryAfterSeconds {
					t.Errorf("%s: suggested delay %d (%v), want %d", op.name, seconds, ok, RetryAfterSeconds)
				}
				if !strings.Contains(err.Error(), tc.err.Error()) {
					t.Errorf("%s: message %q does not name etcd's error", op.name, err)
				}
				details := err.(apierrors.APIStatus).Status().Details
				if diff := cmp.Diff(&metav1.StatusDetails{Kind: "events", RetryAfterSeconds: RetryAfterSeconds}, details); diff != "" {
					t.Errorf("%s: details (-want +got):\n%s", op.name, diff)
				}
			}
		})
	}
}
