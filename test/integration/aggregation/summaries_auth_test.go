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
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// summariesGroup is the event summaries' API group.
const summariesGroup = "summaries.kube-events.io"

// grantRole creates a ClusterRole of rules, binds it in ns to u, and waits
// until kube-apiserver allows u to list eventsummaries in ns.
func grantRole(t *testing.T, ns string, u user, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := testContext(t)
	role, err := adminClient(t).RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "events-test-"}, Rules: rules,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = adminClient(t).RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	if _, err := adminClient(t).RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "events-test-", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u.name}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		review, err := adminClient(t).AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: u.name, Groups: []string{"system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Group: summariesGroup, Resource: "eventsummaries"},
			},
		}, metav1.CreateOptions{})
		return err == nil && review.Status.Allowed, err
	})
	if err != nil {
		t.Fatalf("kube-apiserver never allowed %s to list eventsummaries in %s: %v", u.name, ns, err)
	}
}

// TestEventSummariesNeedTheRightToListEvents lists event summaries through
// kube-apiserver with real RBAC: a role that grants the summaries alone is
// refused by our server (403) before it reads an event, as a summary is
// those events counted; a role that also grants list events gets the
// summary.
func TestEventSummariesNeedTheRightToListEvents(t *testing.T) {
	ns := newNamespace(t)
	if _, err := adminClient(t).EventsV1beta1().Events(ns).Create(testContext(t), v1beta1Event(ns, "e1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	summariesRule := rbacv1.PolicyRule{APIGroups: []string{summariesGroup}, Resources: []string{"eventsummaries"}, Verbs: []string{"list"}}

	summariesOnly := addUser(t, "events-summaries-only")
	grantRole(t, ns, summariesOnly, summariesRule)
	_, stderr, err := framework.Kubectl(t, summariesOnly.kubeconfig, "get", "eventsummaries", "-n", ns, "-o", "name")
	want := `User "` + summariesOnly.name + `" cannot list resource "events" in API group "events.k8s.io" or "" in the namespace "` + ns + `"`
	if err == nil || !strings.Contains(stderr, "Forbidden") || !strings.Contains(stderr, want) {
		t.Errorf("kubectl get eventsummaries as %s: err %v, stderr %q; want 403 %q", summariesOnly.name, err, stderr, want)
	}
	sar := auditedReview(t, "SubjectAccessReview for "+summariesOnly.name, subjectAccessReviewFor(summariesOnly.name, ns)).SubjectAccessReview
	if sar.Status.Allowed {
		t.Errorf("our server's SubjectAccessReview for %s listing events was allowed: %+v", summariesOnly.name, sar.Status)
	}

	for _, group := range []string{eventsGroup, ""} {
		reader := addUser(t, "events-summaries-reader"+strings.ReplaceAll("-"+group, ".", "-"))
		grantRole(t, ns, reader, summariesRule, rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{"events"}, Verbs: []string{"list"}})
		out, stderr, err := framework.Kubectl(t, reader.kubeconfig, "get", "eventsummaries", "-n", ns, "-o", "name")
		if err != nil {
			t.Fatalf("kubectl get eventsummaries as %s, who may list events of group %q: %v\n%s", reader.name, group, err, stderr)
		}
		if got := names(out); len(got) != 1 {
			t.Errorf("kubectl get eventsummaries as %s: %v, want the one summary of e1", reader.name, got)
		}
	}
}
