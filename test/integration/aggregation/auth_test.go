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

package aggregation

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/ptr"

	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// bindRole binds a ClusterRole in ns to users and service accounts
// ("namespace/name"), and waits until kube-apiserver's RBAC says so, so
// that our server's SubjectAccessReviews (whose answers it caches) see it.
func bindRole(t *testing.T, ns, clusterRole string, users []string, serviceAccounts []string) {
	t.Helper()
	ctx := testContext(t)
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "events-test-", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
	}
	for _, u := range users {
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
	}
	for _, sa := range serviceAccounts {
		namespace, name, _ := strings.Cut(sa, "/")
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name})
	}
	if _, err := adminClient(t).RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		waitAllowed(t, u, "list", ns)
	}
	for _, sa := range serviceAccounts {
		namespace, name, _ := strings.Cut(sa, "/")
		waitAllowed(t, "system:serviceaccount:"+namespace+":"+name, "list", ns)
	}
}

// waitAllowed waits until kube-apiserver allows user to verb events.events.k8s.io in ns.
func waitAllowed(t *testing.T, user, verb, ns string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(testContext(t), 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		review, err := adminClient(t).AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               user,
				Groups:             []string{"system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: eventsGroup, Resource: "events"},
			},
		}, metav1.CreateOptions{})
		return err == nil && review.Status.Allowed, err
	})
	if err != nil {
		t.Fatalf("kube-apiserver never allowed %s to %s events in %s: %v", user, verb, ns, err)
	}
}

// auditedReview waits for kube-apiserver's audit log to show a review that
// our server's ServiceAccount sent and match accepts.
func auditedReview(t *testing.T, what string, match func(framework.AuditedReview) bool) framework.AuditedReview {
	t.Helper()
	var found *framework.AuditedReview
	err := wait.PollUntilContextTimeout(testContext(t), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		reviews, err := cluster.AuditedReviews()
		if err != nil {
			return false, err
		}
		for i := range reviews {
			if reviews[i].Requester == framework.AggregatedServerUser() && match(reviews[i]) {
				found = &reviews[i]
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("kube-apiserver's audit log has no %s sent by %s: %v", what, framework.AggregatedServerUser(), err)
	}
	return *found
}

// subjectAccessReviewFor matches our server's SubjectAccessReview for user
// listing events.events.k8s.io in ns.
func subjectAccessReviewFor(user, ns string) func(framework.AuditedReview) bool {
	return func(r framework.AuditedReview) bool {
		sar := r.SubjectAccessReview
		return sar != nil && sar.Spec.User == user && sar.Spec.ResourceAttributes != nil &&
			sar.Spec.ResourceAttributes.Group == eventsGroup && sar.Spec.ResourceAttributes.Resource == "events" &&
			sar.Spec.ResourceAttributes.Verb == "list" && sar.Spec.ResourceAttributes.Namespace == ns
	}
}

// forbiddenMessage is the message of a 403 for user listing
// events.events.k8s.io in ns.
func forbiddenMessage(user, ns string) string {
	return `events.events.k8s.io is forbidden: User "` + user + `" cannot list resource "events" in API group "events.k8s.io" in the namespace "` + ns + `"`
}

// serviceAccountToken creates a ServiceAccount in ns and returns a token for it.
func serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := testContext(t)
	client := adminClient(t)
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token, err := client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return token.Status.Token
}

// direct reaches our server itself, not through kube-apiserver, with the
// credentials set by with.
func direct(with func(*rest.Config)) *rest.Config {
	cfg := &rest.Config{Host: cluster.ServerConfig.Host, TLSClientConfig: rest.TLSClientConfig{CAData: cluster.ServingCA}}
	with(cfg)
	return cfg
}

// TestOurServerDelegatesAuthenticationAndAuthorization talks to our server
// directly with each kind of credential an aggregated API server accepts
// and checks that it authenticates them through kube-apiserver (the
// front proxy's request headers and client CA from the
// extension-apiserver-authentication ConfigMap, bearer tokens by
// TokenReview) and authorizes them by SubjectAccessReview: the answers
// follow kube-apiserver's RBAC, and kube-apiserver's audit log shows the
// reviews our ServiceAccount sent.
func TestOurServerDelegatesAuthenticationAndAuthorization(t *testing.T) {
	ns := newNamespace(t)
	if _, err := clientFor(t, cluster.ServerConfig).EventsV1beta1().Events(ns).Create(testContext(t), v1beta1Event(ns, "e1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	certViewer := addUser(t, "events-cert-viewer")
	certNobody := addUser(t, "events-cert-nobody")
	viewerToken := serviceAccountToken(t, ns, "token-viewer")
	nobodyToken := serviceAccountToken(t, ns, "token-nobody")
	bindRole(t, ns, "events-apiserver:view", []string{"events-proxied-viewer", certViewer.name}, []string{ns + "/token-viewer"})

	withCert := func(u user) func(*rest.Config) {
		return func(cfg *rest.Config) { cfg.CertData, cfg.KeyData = u.config.CertData, u.config.KeyData }
	}
	withToken := func(token string) func(*rest.Config) {
		return func(cfg *rest.Config) { cfg.BearerToken = token }
	}
	cases := []struct {
		name   string
		config *rest.Config
		// user is who our server should see; empty for a 401.
		user    string
		allowed bool
		// tokenReview: the user came from a TokenReview.
		tokenReview bool
	}{
		{name: "front proxy headers, user bound to events-apiserver:view",
			config: cluster.FrontProxyConfig("events-proxied-viewer", "system:authenticated"), user: "events-proxied-viewer", allowed: true},
		{name: "front proxy headers, user without RBAC",
			config: cluster.FrontProxyConfig("events-proxied-nobody", "system:authenticated"), user: "events-proxied-nobody"},
		{name: "client certificate of kube-apiserver's client CA, user bound to events-apiserver:view",
			config: direct(withCert(certViewer)), user: certViewer.name, allowed: true},
		{name: "client certificate of kube-apiserver's client CA, user without RBAC",
			config: direct(withCert(certNobody)), user: certNobody.name},
		{name: "ServiceAccount token, bound to events-apiserver:view",
			config: direct(withToken(viewerToken)), user: "system:serviceaccount:" + ns + ":token-viewer", allowed: true, tokenReview: true},
		{name: "ServiceAccount token, without RBAC",
			config: direct(withToken(nobodyToken)), user: "system:serviceaccount:" + ns + ":token-nobody", tokenReview: true},
		{name: "invalid token", config: direct(withToken("not-a-token"))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			list, err := clientFor(t, c.config).EventsV1beta1().Events(ns).List(testContext(t), metav1.ListOptions{})
			switch {
			case c.user == "":
				if !apierrors.IsUnauthorized(err) {
					t.Fatalf("list: %v, want 401 Unauthorized", err)
				}
				return
			case c.allowed:
				if err != nil || len(list.Items) != 1 {
					t.Fatalf("list: %v %v, want e1", err, list)
				}
			default:
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), forbiddenMessage(c.user, ns)) {
					t.Fatalf("list: %v, want 403 %q", err, forbiddenMessage(c.user, ns))
				}
			}
			sar := auditedReview(t, "SubjectAccessReview for "+c.user, subjectAccessReviewFor(c.user, ns)).SubjectAccessReview
			if sar.Status.Allowed != c.allowed {
				t.Errorf("audited SubjectAccessReview allowed=%v, want %v", sar.Status.Allowed, c.allowed)
			}
			if !slices.Contains(sar.Spec.Groups, "system:authenticated") {
				t.Errorf("audited SubjectAccessReview groups %v lack system:authenticated", sar.Spec.Groups)
			}
			if c.tokenReview {
				auditedReview(t, "TokenReview of "+c.user, func(r framework.AuditedReview) bool {
					return r.TokenReview != nil && r.TokenReview.Status.Authenticated && r.TokenReview.Status.User.Username == c.user
				})
			}
		})
	}
}

// TestRequestHeadersFromOthersThanTheFrontProxyAreIgnored sends the
// front proxy's X-Remote-User header with a client certificate that is not
// the front proxy's: our server must authenticate the certificate's user,
// not the header's.
func TestRequestHeadersFromOthersThanTheFrontProxyAreIgnored(t *testing.T) {
	ns := newNamespace(t)
	impostor := addUser(t, "events-impostor")
	cfg := direct(func(cfg *rest.Config) { cfg.CertData, cfg.KeyData = impostor.config.CertData, impostor.config.KeyData })
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			req = req.Clone(req.Context())
			req.Header.Set("X-Remote-User", "events-direct-admin")
			req.Header.Set("X-Remote-Group", "system:masters")
			return rt.RoundTrip(req)
		})
	})
	_, err := clientFor(t, cfg).EventsV1beta1().Events(ns).List(testContext(t), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), forbiddenMessage(impostor.name, ns)) {
		t.Fatalf("list: %v, want 403 for %s", err, impostor.name)
	}
}

// TestFrontProxyVerificationIsKept sends requests as kube-apiserver's
// aggregator does, with one front-proxy certificate and a different user in
// the headers each time: our server verifies the certificate once and then
// answers from the kept verification (events_apiserver_client_certificate_
// cache_lookups_total), still reading each request's user from its headers.
func TestFrontProxyVerificationIsKept(t *testing.T) {
	ns := newNamespace(t)
	bindRole(t, ns, "events-apiserver:view", []string{"events-kept-viewer"}, nil)
	frontProxyLookups := func(result string) float64 {
		t.Helper()
		m, err := harness.GatherMetrics(legacyregistry.DefaultGatherer) // our server runs in this process
		if err != nil {
			t.Fatal(err)
		}
		return m.Value("events_apiserver_client_certificate_cache_lookups_total", map[string]string{"authenticator": "front-proxy", "result": result})
	}
	hits := frontProxyLookups("hit")
	for _, u := range []struct {
		name    string
		allowed bool
	}{{"events-kept-viewer", true}, {"events-kept-nobody", false}, {"events-kept-viewer", true}} {
		_, err := clientFor(t, cluster.FrontProxyConfig(u.name, "system:authenticated")).EventsV1beta1().Events(ns).List(testContext(t), metav1.ListOptions{})
		switch {
		case u.allowed && err != nil:
			t.Errorf("list as %s: %v", u.name, err)
		case !u.allowed && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), forbiddenMessage(u.name, ns))):
			t.Errorf("list as %s: %v, want 403 %q", u.name, err, forbiddenMessage(u.name, ns))
		}
	}
	// The first request may be the first of the certificate, or a
	// verification that expired: at least the two others are kept.
	if got := frontProxyLookups("hit") - hits; got < 2 {
		t.Errorf("%v front-proxy verifications kept and used, want at least 2", got)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestThroughKubeAPIServerUserWithoutRBACIsForbidden lists and creates
// events.events.k8s.io through kube-apiserver as a user without RBAC
// permissions. kube-apiserver authorizes every request before its
// aggregator proxies it, with the same RBAC our server's
// SubjectAccessReviews consult, so the 403 is kube-apiserver's; the
// direct tests above show our server reaching the same answer.
func TestThroughKubeAPIServerUserWithoutRBACIsForbidden(t *testing.T) {
	ns := newNamespace(t)
	nobody := addUser(t, "events-nobody")
	_, stderr, err := framework.Kubectl(t, nobody.kubeconfig, "get", "events.events.k8s.io", "-n", ns)
	if err == nil || !strings.Contains(stderr, forbiddenMessage(nobody.name, ns)) {
		t.Errorf("kubectl get as %s: err %v, stderr %q; want %q", nobody.name, err, stderr, forbiddenMessage(nobody.name, ns))
	}
	_, err = clientFor(t, nobody.config).EventsV1beta1().Events(ns).Create(testContext(t), v1beta1Event(ns, "e1"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("create as %s: %v, want 403", nobody.name, err)
	}
}

// TestThroughKubeAPIServerViewRoleCanList binds a user to the built-in
// view ClusterRole, into which the artifacts' events-apiserver:view is
// aggregated, and lists through kube-apiserver with kubectl: our server
// authorizes the proxied user by SubjectAccessReview and answers. The same
// user may not create events.
func TestThroughKubeAPIServerViewRoleCanList(t *testing.T) {
	ns := newNamespace(t)
	if _, err := adminClient(t).EventsV1beta1().Events(ns).Create(testContext(t), v1beta1Event(ns, "e1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cluster.AggregateClusterRoles(testContext(t)); err != nil {
		t.Fatal(err)
	}
	view, err := adminClient(t).RbacV1().ClusterRoles().Get(testContext(t), "view", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(view.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, eventsGroup) && slices.Contains(r.Resources, "events") && slices.Contains(r.Verbs, "list")
	}) {
		t.Fatalf("the view ClusterRole does not aggregate events-apiserver:view: %+v", view.Rules)
	}

	viewer := addUser(t, "events-viewer")
	bindRole(t, ns, "view", []string{viewer.name}, nil)
	out, stderr, err := framework.Kubectl(t, viewer.kubeconfig, "get", "events.events.k8s.io", "-n", ns, "-o", "name")
	if err != nil {
		t.Fatalf("kubectl get as %s: %v\n%s", viewer.name, err, stderr)
	}
	if got := names(out); !slices.Equal(got, []string{"e1"}) {
		t.Errorf("kubectl get as %s: %v, want [e1]", viewer.name, got)
	}
	// Whoever may read events may read their summaries.
	out, stderr, err = framework.Kubectl(t, viewer.kubeconfig, "get", "eventsummaries", "-n", ns, "-o", "name")
	if err != nil {
		t.Fatalf("kubectl get eventsummaries as %s: %v\n%s", viewer.name, err, stderr)
	}
	if got := names(out); len(got) != 1 {
		t.Errorf("kubectl get eventsummaries as %s: %v, want the one summary of e1", viewer.name, got)
	}
	sar := auditedReview(t, "SubjectAccessReview for "+viewer.name, subjectAccessReviewFor(viewer.name, ns)).SubjectAccessReview
	if !sar.Status.Allowed {
		t.Errorf("our server's SubjectAccessReview for %s was not allowed: %+v", viewer.name, sar.Status)
	}

	_, err = clientFor(t, viewer.config).EventsV1beta1().Events(ns).Create(testContext(t), v1beta1Event(ns, "e2"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("create as %s: %v, want 403", viewer.name, err)
	}
}
