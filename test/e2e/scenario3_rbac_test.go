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

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// TestRBACAsInstalled: a user bound to the artifacts'
// aggregated view role (events-apiserver:view) in one namespace reads that
// namespace's events through the aggregator, and nothing else.
func TestRBACAsInstalled(t *testing.T) {
	ctx := context.Background()
	c := suite.cluster
	const user = "e2e-reader"
	applyYAML(t, ctx, fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: e2e-reader-events
  namespace: %s
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: events-apiserver:view
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: %s
`, workloadNamespace, user))
	kubeconfig, err := c.UserKubeconfig(user)
	if err != nil {
		t.Fatal(err)
	}
	as := func(args ...string) (string, error) { return kubectl(ctx, kubeconfig, args...) }

	// RBAC bindings take effect at once in kube-apiserver; our server asks
	// it (SubjectAccessReview) and caches answers briefly.
	var events []eventItem
	if err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		events, err = podEvents(ctx, kubeconfig, workloadNamespace, "missing-image")
		return err == nil && len(events) > 0, nil
	}); err != nil {
		t.Fatalf("%s cannot read %s's events through the aggregator: %v", user, workloadNamespace, err)
	}
	logf(t, "%s reads %d events of %s/missing-image", user, len(events), workloadNamespace)

	cases := []struct {
		name string
		args []string
	}{
		{"another namespace", []string{"get", "events.events.k8s.io", "-n", serverNamespace}},
		{"all namespaces", []string{"get", "events.events.k8s.io", "-A"}},
		{"kube-apiserver's v1 in another namespace", []string{"get", "events.v1.events.k8s.io", "-n", serverNamespace}},
		{"core events in another namespace", []string{"get", "events", "-n", serverNamespace}},
		{"deleting in its own namespace", []string{"delete", "events.events.k8s.io", "-n", workloadNamespace, "--all"}},
		{"pods in its own namespace", []string{"get", "pods", "-n", workloadNamespace}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := as(tc.args...)
			if err == nil || !strings.Contains(err.Error(), "Forbidden") && !strings.Contains(err.Error(), "forbidden") {
				t.Errorf("kubectl %s as %s: want Forbidden, got %v: %s", strings.Join(tc.args, " "), user, err, out)
			}
		})
	}
	for _, verb := range []string{"get", "list", "watch"} {
		out, err := as("auth", "can-i", verb, "events.events.k8s.io", "-n", workloadNamespace)
		if err != nil || strings.TrimSpace(out) != "yes" {
			t.Errorf("%s can-i %s events.events.k8s.io in %s: %q %v", user, verb, workloadNamespace, out, err)
		}
	}
}
