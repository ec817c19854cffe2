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

// Package standalone is authentication and authorization for an
// events-apiserver that has no kube-apiserver to delegate them to.
//
// Authentication: a client certificate signed by the client CA; the user is
// its Common Name and the groups its Organizations. Requests without one are
// anonymous only for /healthz, /livez, /readyz and /dependencyz, and rejected (401)
// everywhere else.
//
// Authorization, a fixed rule:
//   - group system:masters (the generated admin kubeconfig) may do anything;
//   - /healthz, /livez, /readyz and /dependencyz are open to everyone;
//   - any authenticated user may GET discovery and schemas: /api, /apis,
//     /openapi, /version and below;
//   - group events-readers may get, list and watch events, in any namespace
//     and through any API version;
//   - group events-writers may also create, update, patch, delete and
//     deletecollection them;
//   - both groups may read the event summaries (eventsummaries in
//     summaries.kube-events.io), in any namespace;
//   - everything else, /metrics included, is forbidden (403).
package standalone

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/path"
	"k8s.io/apiserver/pkg/authorization/union"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/apis/summaries"
	"github.com/kube-events/events-apiserver/pkg/authn/certcache"
)

// The groups the authorization rule knows.
const (
	// AdminGroup may do anything.
	AdminGroup = user.SystemPrivilegedGroup
	// ReadersGroup may read events.
	ReadersGroup = "events-readers"
	// WritersGroup may read and write events.
	WritersGroup = "events-writers"
)

// HealthPaths are served to anyone, authenticated or not.
var HealthPaths = []string{"/healthz", "/livez", "/readyz", "/dependencyz"}

// discoveryPrefixes are readable by every authenticated user.
var discoveryPrefixes = []string{"/api", "/apis", "/openapi", "/version"}

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	// eventGroups are the API groups events are served in.
	eventGroups = []string{"", "events.k8s.io"}
)

// NewAuthenticator authenticates client certificates signed by the CA bundle
// that clientCA provides, and lets anonymous requests reach HealthPaths only.
// A certificate's verification is kept (pkg/authn/certcache).
func NewAuthenticator(clientCA dynamiccertificates.CAContentProvider) (authenticator.Request, error) {
	conditions := make([]apiserver.AnonymousAuthCondition, 0, len(HealthPaths))
	for _, p := range HealthPaths {
		conditions = append(conditions, apiserver.AnonymousAuthCondition{Path: p})
	}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                          &apiserver.AnonymousAuthConfig{Enabled: true, Conditions: conditions},
		ClientCertificateCAContentProvider: clientCA,
	}.New()
	if err != nil {
		return nil, err
	}
	return certcache.New(authn, certcache.Sources{ClientCA: clientCA}, certcache.DefaultSize, clock.RealClock{}), nil
}

// NewAuthorizer returns the package's fixed rule, composed from the
// apiserver's authorizers: privileged groups, always-allowed paths, then the
// discovery and events rules, in a union. Whatever none allows is refused
// (403), with every rule's reason.
func NewAuthorizer() (authorizer.Authorizer, error) {
	health, err := path.NewAuthorizer(HealthPaths)
	if err != nil {
		return nil, err
	}
	discoveryPaths := make([]string, 0, 2*len(discoveryPrefixes))
	for _, p := range discoveryPrefixes {
		discoveryPaths = append(discoveryPaths, p, p+"/*")
	}
	discovery, err := path.NewAuthorizer(discoveryPaths)
	if err != nil {
		return nil, err
	}
	return union.New(
		union.NamedAuthorizer{AuthorizerName: "privileged-groups", Authorizer: authorizerfactory.NewPrivilegedGroups(AdminGroup)},
		union.NamedAuthorizer{AuthorizerName: "health", Authorizer: health},
		union.NamedAuthorizer{AuthorizerName: "discovery", Authorizer: authenticatedGets(discovery)},
		union.NamedAuthorizer{AuthorizerName: "events", Authorizer: authorizer.AuthorizerFunc(authorizeEvents)},
		union.NamedAuthorizer{AuthorizerName: "event-summaries", Authorizer: authorizer.AuthorizerFunc(authorizeSummaries)},
	)
}

// authenticatedGets lets paths allow only GETs of authenticated users.
func authenticatedGets(paths authorizer.Authorizer) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.IsResourceRequest() {
			return authorizer.DecisionNoOpinion, "", nil
		}
		if u := a.GetUser(); u != nil && a.GetVerb() == "get" && slices.Contains(u.GetGroups(), user.AllAuthenticated) {
			if decision, _, err := paths.Authorize(ctx, a); decision == authorizer.DecisionAllow || err != nil {
				return decision, "", err
			}
		}
		return authorizer.DecisionNoOpinion, fmt.Sprintf("only %s may %s %s", AdminGroup, a.GetVerb(), a.GetPath()), nil
	})
}

// authorizeEvents lets events-readers read events and events-writers also
// write them, in both event groups.
func authorizeEvents(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if !a.IsResourceRequest() {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if a.GetResource() != "events" || a.GetSubresource() != "" || !slices.Contains(eventGroups, a.GetAPIGroup()) {
		return authorizer.DecisionNoOpinion, "this server only serves events", nil
	}
	var groups []string
	if u := a.GetUser(); u != nil {
		groups = u.GetGroups()
	}
	switch {
	case slices.Contains(groups, WritersGroup) && slices.Contains(writeVerbs, a.GetVerb()):
		return authorizer.DecisionAllow, "", nil
	case slices.Contains(groups, ReadersGroup) && slices.Contains(readVerbs, a.GetVerb()):
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, fmt.Sprintf("%s events needs group %s or %s", a.GetVerb(), writerOrReader(a.GetVerb()), AdminGroup), nil
}

// authorizeSummaries lets events-readers and events-writers read the event
// summaries: whoever may list events may count them.
func authorizeSummaries(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if !a.IsResourceRequest() || a.GetResource() != "eventsummaries" || a.GetSubresource() != "" || a.GetAPIGroup() != summaries.GroupName {
		return authorizer.DecisionNoOpinion, "", nil
	}
	var groups []string
	if u := a.GetUser(); u != nil {
		groups = u.GetGroups()
	}
	if slices.Contains(readVerbs, a.GetVerb()) && (slices.Contains(groups, ReadersGroup) || slices.Contains(groups, WritersGroup)) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, fmt.Sprintf("%s eventsummaries needs group %s, %s or %s", a.GetVerb(), ReadersGroup, WritersGroup, AdminGroup), nil
}

// writerOrReader names the least group that may use verb on events.
func writerOrReader(verb string) string {
	if slices.Contains(readVerbs, verb) {
		return ReadersGroup
	}
	return WritersGroup
}
