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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	"github.com/kube-events/events-apiserver/pkg/archive/archiver"
	"github.com/kube-events/events-apiserver/pkg/leaderelection"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
)

// TestElectedStoreWritesAreFenced runs the events store as the server
// builds it (fencedWrites, the watch cache) on a real etcd, and a real
// election: the writes an elected loop makes through the store (create,
// update, delete, in an InternalWriteContext made from the lead function's
// context) are applied while the term lasts; once the campaign key is gone
// while the leader's session still lives (a leader paused past its lease,
// before it noticed), each returns leaderelection.ErrFenced, at once (an
// update is not a conflict retried forever), and leaves the event as it
// was; the first ends the term. So is a put through the server's etcd
// client (the archive checkpoint's). A client's write, without a fence,
// goes through all along.
func TestElectedStoreWritesAreFenced(t *testing.T) {
	etcdClient := testserver.RunEtcd(t, nil)
	resourceConfig := eventsStorageConfig(t, etcdClient.Endpoints())
	store, err := eventstorage.NewREST(eventregistry.NewStrategy(Scheme), eventstorage.Options{
		RESTOptions: fixedRESTOptions{StorageConfig: resourceConfig, ResourcePrefix: "events", DeleteCollectionWorkers: 1},
		TTL:         time.Hour, Cache: eventstorage.WatchCache, FencedWrites: fencedWrites,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.DestroyFunc)

	// A term of the election, as the server runs it; lead keeps the term
	// until the test ends or a refused write ends it.
	electionClient, err := NewEtcdClient(resourceConfig.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = electionClient.Close() })
	leading := make(chan context.Context)
	termEnded := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		terms := 0
		_ = leaderelection.Run(ctx, leaderelection.Config{Client: electionClient, Name: ControllersElection, Identity: "a", TTL: time.Minute},
			func(ctx context.Context) {
				if terms++; terms == 1 {
					leading <- ctx
					<-ctx.Done()
					close(termEnded)
				}
				<-ctx.Done()
			})
	}()
	t.Cleanup(func() { cancel(); <-done })
	leadCtx := <-leading
	fence, _ := leaderelection.FenceFrom(leadCtx)

	const namespace = "ns"
	internal := func(ctx context.Context) context.Context {
		return eventregistry.InternalWriteContext(ctx, namespace, corev1.SchemeGroupVersion)
	}
	event := func(name, message string) *core.Event {
		now := metav1.Now()
		return &core.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: namespace},
			InvolvedObject: core.ObjectReference{Kind: "Pod", Namespace: namespace, Name: "web", UID: "uid-web"},
			Reason:         "BackOff", Message: message, Type: core.EventTypeWarning,
			Source: core.EventSource{Component: "kubelet", Host: "node-1"}, Count: 1, FirstTimestamp: now, LastTimestamp: now,
		}
	}
	create := func(ctx context.Context, name string) error {
		_, err := store.Create(internal(ctx), event(name, "created"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
		return err
	}
	update := func(ctx context.Context, name string) error {
		current, err := store.Get(internal(ctx), name, &metav1.GetOptions{})
		if err != nil {
			return err
		}
		updated := current.(*core.Event).DeepCopy()
		updated.Message = "updated"
		_, _, err = store.Update(internal(ctx), name, rest.DefaultUpdatedObjectInfo(updated),
			rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		return err
	}
	remove := func(ctx context.Context, name string) error {
		_, _, err := store.Delete(internal(ctx), name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{})
		return err
	}
	// message is the event's message in etcd, "" when it is not there.
	message := func(name string) string {
		obj, err := store.Get(internal(t.Context()), name, &metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*core.Event).Message
	}
	type state map[string]string
	read := func(names ...string) state {
		s := state{}
		for _, name := range names {
			s[name] = message(name)
		}
		return s
	}

	// During the term.
	for _, name := range []string{"updated", "deleted", "kept-1", "kept-2"} {
		if err := create(leadCtx, name); err != nil {
			t.Fatalf("create %s during the term: %v", name, err)
		}
	}
	if err := update(leadCtx, "updated"); err != nil {
		t.Fatalf("update during the term: %v", err)
	}
	if err := remove(leadCtx, "deleted"); err != nil {
		t.Fatalf("delete during the term: %v", err)
	}
	names := []string{"updated", "deleted", "kept-1", "kept-2", "late"}
	want := state{"updated": "updated", "deleted": "", "kept-1": "created", "kept-2": "created", "late": ""}
	if diff := cmp.Diff(want, read(names...)); diff != "" {
		t.Fatalf("events after the term's writes (-want +got):\n%s", diff)
	}

	// The term ends behind the leader's back: its key is gone, its
	// session lives on.
	if _, err := etcdClient.Delete(t.Context(), DefaultEtcdPathPrefix+fence.Key); err != nil {
		t.Fatal(err)
	}
	// The writes a paused leader would make on resuming: its contexts
	// still carry the fence and are not canceled yet.
	stale := context.WithoutCancel(leadCtx)
	for _, tc := range []struct {
		name  string
		write func(ctx context.Context) error
	}{
		{"create", func(ctx context.Context) error { return create(ctx, "late") }},
		{"update", func(ctx context.Context) error { return update(ctx, "kept-1") }},
		{"delete", func(ctx context.Context) error { return remove(ctx, "kept-2") }},
		// The archiver writes its checkpoint through a client of
		// NewEtcdClient.
		{"put through the server's etcd client", func(ctx context.Context) error {
			_, err := electionClient.Put(ctx, archiver.CheckpointKey, "late")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A write retried as a conflict would run out this deadline
			// and answer its error instead.
			ctx, cancel := context.WithTimeout(stale, 30*time.Second)
			defer cancel()
			if err := tc.write(ctx); !errors.Is(err, leaderelection.ErrFenced) {
				t.Errorf("%s after the term: %v, want leaderelection.ErrFenced", tc.name, err)
			}
		})
	}
	if diff := cmp.Diff(want, read(names...)); diff != "" {
		t.Errorf("events after the refused writes (-want +got):\n%s", diff)
	}
	if resp, err := electionClient.Get(t.Context(), archiver.CheckpointKey); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("the refused put of %s: %v, %v", archiver.CheckpointKey, resp, err)
	}
	select {
	case <-termEnded:
	case <-time.After(30 * time.Second):
		t.Error("a refused write did not end the term")
	}

	// A client's write has no fence: the generic storage takes it.
	if err := create(t.Context(), "late"); err != nil {
		t.Errorf("a client's create: %v", err)
	}
}
