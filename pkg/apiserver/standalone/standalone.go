// Package standalone is authentication and authorization for an
// events-apiserver that has no kube-apiserver to delegate them to.
//
// Authentication: a client certificate signed by the client CA; the user is
// its Common Name and the groups its Organizations. Requests without one are
// anonymous only for /healthz, /livez and /readyz, and rejected (401)
// everywhere else.
//
// Authorization, a fixed rule:
//   - group system:masters (the generated admin kubeconfig) may do anything;
//   - /healthz, /livez and /readyz are open to everyone;
//   - any authenticated user may GET discovery and schemas: /api, /apis,
//     /openapi, /version and below;
//   - group events-readers may get, list and watch events, in any namespace
//     and through any API version;
//   - group events-writers may also create, update, patch, delete and
//     deletecollection them;
//   - everything else, /metrics included, is forbidden (403).
package standalone

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
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
var HealthPaths = []string{"/healthz", "/livez", "/readyz"}

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
func NewAuthenticator(clientCA dynamiccertificates.CAContentProvider) (authenticator.Request, error) {
	conditions := make([]apiserver.AnonymousAuthCondition, 0, len(HealthPaths))
	for _, p := range HealthPaths {
		conditions = append(conditions, apiserver.AnonymousAuthCondition{Path: p})
	}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                          &apiserver.AnonymousAuthConfig{Enabled: true, Conditions: conditions},
		ClientCertificateCAContentProvider: clientCA,
	}.New()
	return authn, err
}

// Authorizer applies the package's fixed rule.
type Authorizer struct{}

var _ authorizer.Authorizer = Authorizer{}

// Authorize implements authorizer.Authorizer.
func (Authorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	u := a.GetUser()
	if u == nil {
		return authorizer.DecisionDeny, "no user", nil
	}
	groups := u.GetGroups()
	if slices.Contains(groups, AdminGroup) {
		return authorizer.DecisionAllow, "", nil
	}

	if !a.IsResourceRequest() {
		path := a.GetPath()
		if slices.Contains(HealthPaths, path) {
			return authorizer.DecisionAllow, "", nil
		}
		if a.GetVerb() == "get" && slices.Contains(groups, user.AllAuthenticated) && underAny(path, discoveryPrefixes) {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionDeny, fmt.Sprintf("only %s may %s %s", AdminGroup, a.GetVerb(), path), nil
	}

	if a.GetResource() != "events" || a.GetSubresource() != "" || !slices.Contains(eventGroups, a.GetAPIGroup()) {
		return authorizer.DecisionDeny, "this server only serves events", nil
	}
	switch {
	case slices.Contains(groups, WritersGroup) && slices.Contains(writeVerbs, a.GetVerb()):
		return authorizer.DecisionAllow, "", nil
	case slices.Contains(groups, ReadersGroup) && slices.Contains(readVerbs, a.GetVerb()):
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionDeny, fmt.Sprintf("%s events needs group %s or %s", a.GetVerb(), writerOrReader(a.GetVerb()), AdminGroup), nil
}

// writerOrReader names the least group that may use verb on events.
func writerOrReader(verb string) string {
	if slices.Contains(readVerbs, verb) {
		return ReadersGroup
	}
	return WritersGroup
}

// underAny tells whether path is one of prefixes or below one of them.
func underAny(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// ConditionsAwareAuthorize implements authorizer.Authorizer: the rule has
// no conditions, so its decision is Authorize's.
func (z Authorizer) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(z.Authorize(ctx, a))
}

// EvaluateConditions implements authorizer.Authorizer; it never has
// conditions to evaluate, and fails closed.
func (Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}
