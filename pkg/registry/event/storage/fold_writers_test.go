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

package storage_test

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

// asUser is ctx of a request that name makes.
func asUser(ctx context.Context, name string) context.Context {
	return genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: name})
}

// TestFoldKeepsToItsWriter: a create isomorphic to another user's hot
// series is not folded into that user's event; it starts a series of its
// own, which its writer's next creates fold into.
func TestFoldKeepsToItsWriter(t *testing.T) {
	store := newStore(t, folding(1, time.Minute, time.Second, 10), testingclock.NewFakeClock(time.Now()))
	reporter, other := asUser(coreV1Context(t), "reporter"), asUser(coreV1Context(t), "other")
	create := func(ctx context.Context, i int) *core.Event {
		t.Helper()
		obj, err := store.Create(ctx, occurrence(i), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		return obj.(*core.Event)
	}
	create(reporter, 0)
	folded := create(reporter, 1)
	if folded.Name != "web.0" || folded.Count != 2 {
		t.Fatalf("the reporter's second create: answered %s with count %d, want web.0 with count 2", folded.Name, folded.Count)
	}

	for _, tt := range []struct {
		i         int
		wantName  string
		wantCount int32
	}{
		{i: 2, wantName: "web.2", wantCount: 1}, // stored as sent: the first of its writer's burst
		{i: 3, wantName: "web.2", wantCount: 2}, // folded into its writer's own event
	} {
		if got := create(other, tt.i); got.Name != tt.wantName || got.Count != tt.wantCount {
			t.Errorf("the other user's create %d: answered %s with count %d, want %s with count %d", tt.i, got.Name, got.Count, tt.wantName, tt.wantCount)
		}
	}
	obj, err := store.Get(reporter, "web.0", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.(*core.Event); got.ResourceVersion != folded.ResourceVersion || got.Count != 2 {
		t.Errorf("the reporter's event after the other user's creates: resourceVersion %s, count %d; want %s, 2 (untouched)",
			got.ResourceVersion, got.Count, folded.ResourceVersion)
	}
}

// TestFoldDeletedStaysDeleted: the live event of a hot series, once deleted,
// is not brought back by the next folded create; that create is stored as
// a new event.
func TestFoldDeletedStaysDeleted(t *testing.T) {
	const flushInterval = time.Second
	clk := testingclock.NewFakeClock(time.Now())
	store := newStore(t, folding(1, time.Minute, flushInterval, 10), clk)
	ctx := asUser(coreV1Context(t), "reporter")
	create := func(i int) *core.Event {
		t.Helper()
		obj, err := store.Create(ctx, occurrence(i), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		return obj.(*core.Event)
	}
	create(0)
	live := create(1)
	if live.Name != "web.0" || live.Count != 2 {
		t.Fatalf("second create: answered %s with count %d, want web.0 with count 2", live.Name, live.Count)
	}
	if _, _, err := store.Delete(ctx, "web.0", rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	clk.Step(flushInterval) // the next fold is written at once
	got := create(2)
	if got.Name != "web.2" || got.UID == live.UID || got.Count != 1 || got.Message != "attempt 2" {
		t.Errorf("the create after the delete: answered %s (UID %s, count %d, message %q); want web.2, a new UID, count 1, its own message",
			got.Name, got.UID, got.Count, got.Message)
	}
	if _, err := store.Get(ctx, "web.0", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the deleted event: got %v, want NotFound", err)
	}
	clk.Step(flushInterval)
	if next := create(3); next.Name != "web.2" || next.Count != 2 {
		t.Errorf("the create after: answered %s with count %d, want web.2 with count 2", next.Name, next.Count)
	}
}
