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

package eventsummary

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/summaries"
	"github.com/kube-events/events-apiserver/pkg/continuetoken"
)

// grant is one rule of policy: user may list events of group in namespace
// ("" for cluster scope, which covers every namespace).
type grant struct{ user, group, namespace string }

// policy allows what its grants say, and nothing else.
func policy(grants ...grant) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		for _, g := range grants {
			if a.GetUser().GetName() == g.user && a.GetVerb() == "list" && a.GetResource() == "events" &&
				a.GetAPIGroup() == g.group && (g.namespace == "" || g.namespace == a.GetNamespace()) {
				return authorizer.DecisionAllow, "", nil
			}
		}
		return authorizer.DecisionNoOpinion, "no rule grants it", nil
	})
}

// testTokens signs the tests' continue tokens.
var testTokens = continuetoken.NewWithKey(make([]byte, continuetoken.KeySize))

// allowAll lets every user list every event.
var allowAll = authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
})

// userContext is a request of name in namespace ("" for all namespaces).
func userContext(name, namespace string) context.Context {
	ctx := genericapirequest.WithNamespace(context.Background(), namespace)
	return genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: name, Groups: []string{user.AllAuthenticated}})
}

// TestListIsAuthorizedAsTheEventsItCounts checks that a list of summaries
// is answered only to a user who may list the events it counts, in either
// event group and in the same scope, and that a refused list reads no
// event.
func TestListIsAuthorizedAsTheEventsItCounts(t *testing.T) {
	authz := policy(
		grant{user: "events-reader", group: "events.k8s.io", namespace: "shop"},
		grant{user: "core-reader", group: core.GroupName, namespace: "shop"},
		grant{user: "cluster-reader", group: "events.k8s.io"},
	)
	cases := []struct {
		name, user, namespace string
		allowed               bool
	}{
		{name: "list of events.k8s.io events in the namespace", user: "events-reader", namespace: "shop", allowed: true},
		{name: "list of core events in the namespace", user: "core-reader", namespace: "shop", allowed: true},
		{name: "list of events in every namespace", user: "cluster-reader", namespace: "shop", allowed: true},
		{name: "all namespaces with a list of every namespace's events", user: "cluster-reader", allowed: true},
		{name: "summaries only", user: "summaries-only", namespace: "shop"},
		{name: "another namespace's events", user: "events-reader", namespace: "bank"},
		{name: "all namespaces with one namespace's events", user: "events-reader"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lister := &pagedEvents{events: []core.Event{backOff("e0", "a", 0)}, pageSize: 10}
			r := NewREST(lister, authz, testTokens)
			_, err := r.List(userContext(c.user, c.namespace), &metainternalversion.ListOptions{})
			if c.allowed {
				if err != nil {
					t.Fatalf("list of summaries as %s: %v", c.user, err)
				}
				return
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("list of summaries as %s: %v, want 403", c.user, err)
			}
			want := `User "` + c.user + `" cannot list resource "events" in API group "events.k8s.io" or ""`
			if !strings.Contains(err.Error(), want) {
				t.Errorf("403 %q, want it to say %q", err, want)
			}
			if len(lister.asked) != 0 {
				t.Errorf("a refused list read events with %+v", lister.asked)
			}
		})
	}
	if _, err := NewREST(&pagedEvents{}, authz, testTokens).List(genericapirequest.WithNamespace(context.Background(), "shop"), nil); !apierrors.IsUnauthorized(err) {
		t.Errorf("list without a user: %v, want 401", err)
	}
}

// TestContinueTokenIsBoundToItsList checks that a summaries token whose
// selector was replaced, or that is replayed with another selector or in
// another namespace, is refused with 400 naming the continue parameter,
// before an event is read.
func TestContinueTokenIsBoundToItsList(t *testing.T) {
	var events []core.Event
	for i, pod := range []string{"a", "b", "c"} {
		e := backOff("e"+strconv.Itoa(i), pod, i)
		e.Reason = "Reason-" + pod
		events = append(events, e)
	}
	lister := &pagedEvents{events: events, pageSize: 10}
	r := NewREST(lister, allowAll, testTokens)
	selector := fields.ParseSelectorOrDie("involvedObject.name=a,history.since=1h")
	first, err := r.List(userContext("events-reader", "shop"), &metainternalversion.ListOptions{FieldSelector: fields.Everything(), Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	token := first.(*summaries.EventSummaryList).Continue
	if token == "" {
		t.Fatal("the first page has no continue token")
	}
	// Every event, any time: the selector a token would need to read more
	// than its list asked.
	replaced := alterPayload(t, token, func(p map[string]any) { p["s"] = "history.since=720h" })
	for _, c := range []struct {
		name, namespace, token string
		selector               fields.Selector
	}{
		{name: "a replaced selector", namespace: "shop", selector: fields.Everything(), token: replaced},
		{name: "another field selector", namespace: "shop", selector: selector, token: token},
		{name: "a token from another namespace", namespace: "bank", selector: fields.Everything(), token: token},
		{name: "all namespaces", selector: fields.Everything(), token: token},
	} {
		t.Run(c.name, func(t *testing.T) {
			lister.asked = nil
			_, err := r.List(userContext("events-reader", c.namespace), &metainternalversion.ListOptions{FieldSelector: c.selector, Continue: c.token})
			if !apierrors.IsBadRequest(err) || !strings.HasPrefix(err.Error(), "continue: ") {
				t.Errorf("list: %v, want 400 naming continue", err)
			}
			if len(lister.asked) != 0 {
				t.Errorf("a refused token read events with %+v", lister.asked)
			}
		})
	}
}

// alterPayload rewrites the payload of a signed token, keeping its MAC.
func alterPayload(t *testing.T, token string, change func(map[string]any)) string {
	t.Helper()
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		t.Fatal(err)
	}
	var wire map[string]json.RawMessage
	if err := json.Unmarshal(data, &wire); err != nil {
		t.Fatal(err)
	}
	var payload map[string]any
	if err := json.Unmarshal(wire["p"], &payload); err != nil {
		t.Fatal(err)
	}
	change(payload)
	if wire["p"], err = json.Marshal(payload); err != nil {
		t.Fatal(err)
	}
	if data, err = json.Marshal(wire); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(data)
}
