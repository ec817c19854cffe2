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

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/util/compatibility"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
)

type fixedRESTOptions generic.RESTOptions

func (o fixedRESTOptions) GetRESTOptions(schema.GroupResource, runtime.Object) (generic.RESTOptions, error) {
	return generic.RESTOptions(o), nil
}

// TestNoSpaceIsServiceUnavailable fills a real etcd with a small quota
// until it raises NOSPACE, then writes through the events store: creates
// and updates answer 503 with a Retry-After (a 500 without the wrapper),
// while reads and deletes, which etcd still serves, succeed.
func TestNoSpaceIsServiceUnavailable(t *testing.T) {
	cfg := testserver.NewTestConfig(t)
	cfg.QuotaBackendBytes = 8 << 20
	client := testserver.RunEtcd(t, cfg)

	factory := NewStorageFactory(storagebackend.Config{
		Type: storagebackend.StorageTypeETCD3, Prefix: DefaultEtcdPathPrefix,
		Transport: storagebackend.TransportConfig{ServerList: client.Endpoints()},
	}, StorageMediaType, compatibility.DefaultBuildEffectiveVersion())
	resourceConfig, err := factory.NewConfig(core.Resource("events"), &core.Event{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := eventstorage.NewREST(Scheme, noSpaceUnavailable{fixedRESTOptions{
		StorageConfig: resourceConfig, Decorator: generic.UndecoratedStorage, ResourcePrefix: "events", DeleteCollectionWorkers: 1,
	}}, time.Hour, nil)
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
			if seconds, ok := apierrors.SuggestsClientDelay(err); !ok || seconds != NoSpaceRetryAfterSeconds {
				t.Errorf("suggested delay %d (%v), want %d", seconds, ok, NoSpaceRetryAfterSeconds)
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
