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
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	clocktesting "k8s.io/utils/clock/testing"
)

func asUser(name, namespace string) context.Context {
	return genericapirequest.WithUser(genericapirequest.WithNamespace(context.Background(), namespace), &user.DefaultInfo{Name: name})
}

// TestSlotsAreSharedBetweenUsers checks that one user holds at most
// MaxInFlightPerUser slots, so that others still get theirs, that every
// slot taken refuses everyone, and that a released slot is free again.
func TestSlotsAreSharedBetweenUsers(t *testing.T) {
	s := newSlots()
	var releases []func()
	for i := range MaxInFlightPerUser {
		release, err := s.acquire(asUser("flooder", "a"))
		if err != nil {
			t.Fatalf("the flooder's list %d: %v", i, err)
		}
		releases = append(releases, release)
	}
	_, err := s.acquire(asUser("flooder", "a"))
	if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), `for user "flooder"`) {
		t.Fatalf("the flooder's list beyond its share: %v, want 429 naming its share", err)
	}
	for i := range MaxInFlight - MaxInFlightPerUser {
		release, err := s.acquire(asUser(fmt.Sprintf("user-%d", i), "b"))
		if err != nil {
			t.Fatalf("another user's list while the flooder holds its share: %v", err)
		}
		releases = append(releases, release)
	}
	if _, err := s.acquire(asUser("late", "c")); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("a list with every slot taken: %v, want 429", err)
	}
	releases[0]()
	if _, err := s.acquire(asUser("late", "c")); err != nil {
		t.Errorf("a list after the flooder released a slot: %v", err)
	}
}

// TestCostBounds checks the refusals that bound a history list's cost
// before the store or the archive is read (the selectors' labels are the
// canonical ones the conversion gives): selectors of too many terms or
// bytes, and a cluster-wide ancestor query over more than
// MaxUnselectiveWindow; each a 400 naming the field and the bound.
func TestCostBounds(t *testing.T) {
	// No store and no archive: reaching either would panic.
	r := &REST{clock: clocktesting.NewFakePassiveClock(now), inFlight: newSlots()}
	terms := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "reason!=R%d,", i)
		}
		return b.String()
	}
	manyLabels := labels.NewSelector()
	for i := range MaxSelectorTerms + 1 {
		req, err := labels.NewRequirement(fmt.Sprintf("l%d", i), "=", []string{"v"})
		if err != nil {
			t.Fatal(err)
		}
		manyLabels = manyLabels.Add(*req)
	}
	cases := []struct {
		name, namespace, fields string
		labels                  labels.Selector
		want                    string
	}{
		{name: "too many field terms", namespace: "shop", fields: terms(MaxSelectorTerms) + "history.since=1h",
			want: fmt.Sprintf("fieldSelector: Too many: %d: must have at most %d items", MaxSelectorTerms+1, MaxSelectorTerms)},
		{name: "a field selector too long", namespace: "shop", fields: "reason=" + strings.Repeat("x", MaxSelectorBytes) + ",history.since=1h",
			want: fmt.Sprintf("fieldSelector: Too long: may not be more than %d bytes", MaxSelectorBytes)},
		{name: "too many label terms", namespace: "shop", fields: "history.since=1h", labels: manyLabels,
			want: fmt.Sprintf("labelSelector: Too many: %d: must have at most %d items", MaxSelectorTerms+1, MaxSelectorTerms)},
		{name: "an ancestor across all namespaces for a week", fields: "involvedObject.ancestor=Deployment/web,history.since=7d",
			want: "fieldSelector.history.since: Invalid value: \"7d\": a window longer than 24h0m0s across all namespaces needs a term that selects one object's events"},
		{name: "an ancestor UID across all namespaces for a week", fields: "involvedObject.ancestor=0b9c5f0e-7b4a-4a57-9f0e-2d3c4b5a6f70,history.since=7d",
			want: "a window longer than 24h0m0s across all namespaces"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			selector, err := fields.ParseSelector(c.fields)
			if err != nil {
				t.Fatal(err)
			}
			options := &metainternalversion.ListOptions{FieldSelector: selector, LabelSelector: c.labels}
			_, err = r.List(asUser("u", c.namespace), options)
			if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("list: %v, want 400 %q", err, c.want)
			}
			if _, _, err := r.Summarize(asUser("u", c.namespace), options); c.labels == nil && (!apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("summary: %v, want 400 %q", err, c.want)
			}
		})
	}
}
