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

package resolver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-events/events-apiserver/pkg/ancestry"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

const (
	unresolvedMetric  = "events_apiserver_ancestry_unresolved_total"
	objectReadsMetric = "events_apiserver_ancestry_object_reads_total"
)

var (
	deploymentKind  = appsv1.SchemeGroupVersion.WithKind("Deployment")
	replicaSetKind  = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	cronJobKind     = batchv1.SchemeGroupVersion.WithKind("CronJob")
	jobKind         = batchv1.SchemeGroupVersion.WithKind("Job")
	nodeKind        = corev1.SchemeGroupVersion.WithKind("Node")
	podTemplateSpec = corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}, RestartPolicy: corev1.RestartPolicyNever},
	}
)

// workloads builds ownership chains in a namespace of their own, as the
// controllers, which do not run in envtest, would.
type workloads struct {
	t         *testing.T
	ctx       context.Context
	client    kubernetes.Interface
	namespace string
}

func newWorkloads(t *testing.T) *workloads {
	t.Helper()
	client, err := kubernetes.NewForConfig(adminConfig)
	if err != nil {
		t.Fatal(err)
	}
	w := &workloads{t: t, ctx: t.Context(), client: client, namespace: strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))}
	if _, err := client.CoreV1().Namespaces().Create(w.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return w
}

func controlledBy(owner metav1.Object, kind schema.GroupVersionKind) []metav1.OwnerReference {
	return []metav1.OwnerReference{*metav1.NewControllerRef(owner, kind)}
}

func (w *workloads) deployment(name string) *appsv1.Deployment {
	w.t.Helper()
	d, err := w.client.AppsV1().Deployments(w.namespace).Create(w.ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: podTemplateSpec.Labels}, Template: alwaysRestart(podTemplateSpec)},
	}, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return d
}

func (w *workloads) replicaSet(name string, owners []metav1.OwnerReference) *appsv1.ReplicaSet {
	w.t.Helper()
	rs, err := w.client.AppsV1().ReplicaSets(w.namespace).Create(w.ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: podTemplateSpec.Labels}, Template: alwaysRestart(podTemplateSpec)},
	}, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return rs
}

func (w *workloads) cronJob(name string) *batchv1.CronJob {
	w.t.Helper()
	cj, err := w.client.BatchV1().CronJobs(w.namespace).Create(w.ctx, &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.CronJobSpec{Schedule: "*/5 * * * *", JobTemplate: batchv1.JobTemplateSpec{
			Spec: batchv1.JobSpec{Template: podTemplateSpec},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return cj
}

func (w *workloads) job(name string, owners []metav1.OwnerReference) *batchv1.Job {
	w.t.Helper()
	j, err := w.client.BatchV1().Jobs(w.namespace).Create(w.ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners},
		Spec:       batchv1.JobSpec{Template: podTemplateSpec},
	}, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return j
}

func (w *workloads) pod(name string, owners []metav1.OwnerReference) *corev1.Pod {
	w.t.Helper()
	p, err := w.client.CoreV1().Pods(w.namespace).Create(w.ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners},
		Spec:       podTemplateSpec.Spec,
	}, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

// deletePod deletes a pod and waits until it is gone (a pod on no node
// goes at once).
func (w *workloads) deletePod(name string) {
	w.t.Helper()
	pods := w.client.CoreV1().Pods(w.namespace)
	if err := pods.Delete(w.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		w.t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(w.ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		w.t.Fatalf("pod %s/%s not gone: %v", w.namespace, name, err)
	}
}

func alwaysRestart(template corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	template = *template.DeepCopy()
	template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	return template
}

func podRef(p *corev1.Pod) ancestry.Reference {
	return ancestry.Reference{APIVersion: "v1", Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID}
}

func ancestor(kind string, o metav1.Object) ownerchain.Ancestor {
	return ownerchain.Ancestor{Kind: kind, Name: o.GetName(), UID: o.GetUID()}
}

func newResolver(t *testing.T, config *rest.Config, options ancestry.Options) *ancestry.Resolver {
	t.Helper()
	r, err := ancestry.NewResolver(config, options)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// counts snapshots the resolver's counters, to compare what a step adds.
type counts struct {
	unresolved map[string]float64
	reads      float64
}

var reasons = []string{ancestry.ReasonForbidden, ancestry.ReasonNotFound, ancestry.ReasonReplaced, ancestry.ReasonNoKind,
	ancestry.ReasonTimeout, ancestry.ReasonCycle, ancestry.ReasonDepth, ancestry.ReasonInvalid, ancestry.ReasonError}

func snapshot(t *testing.T) counts {
	m, err := harness.GatherMetrics(legacyregistry.DefaultGatherer)
	if err != nil {
		t.Fatal(err)
	}
	c := counts{unresolved: map[string]float64{}, reads: m.Value(objectReadsMetric, nil)}
	for _, reason := range reasons {
		c.unresolved[reason] = m.Value(unresolvedMetric, map[string]string{"reason": reason})
	}
	return c
}

// expectCounts fails t unless, since before, the unresolved chains grew by
// unresolved (by reason, the others not at all) and the reads by reads (if
// reads is not negative).
func expectCounts(t *testing.T, before counts, unresolved map[string]float64, reads float64) {
	t.Helper()
	after := snapshot(t)
	got := map[string]float64{}
	for _, reason := range reasons {
		if d := after.unresolved[reason] - before.unresolved[reason]; d != 0 {
			got[reason] = d
		}
	}
	if unresolved == nil {
		unresolved = map[string]float64{}
	}
	if diff := cmp.Diff(unresolved, got); diff != "" {
		t.Errorf("%s grew by (-want +got):\n%s", unresolvedMetric, diff)
	}
	if d := after.reads - before.reads; reads >= 0 && d != reads {
		t.Errorf("%s grew by %v, want %v", objectReadsMetric, d, reads)
	}
}

// expectChain expects r to resolve ref's chain to want, final.
func expectChain(t *testing.T, r *ancestry.Resolver, ref ancestry.Reference, want []ownerchain.Ancestor) {
	t.Helper()
	expectResolution(t, r.Resolve(t.Context(), ref), ref, ancestry.Chain{Ancestors: want})
}

func expectResolution(t *testing.T, got ancestry.Chain, ref ancestry.Reference, want ancestry.Chain) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("chain of %s %s/%s (-want +got):\n%s", ref.Kind, ref.Namespace, ref.Name, diff)
	}
}

// The metrics are process-wide: the tests that compare them do not run in
// parallel.

func TestDeploymentChainAndSharedLookups(t *testing.T) {
	w := newWorkloads(t)
	d := w.deployment("web")
	rs := w.replicaSet("web-7d4f9", controlledBy(d, deploymentKind))
	p1 := w.pod("web-7d4f9-a", controlledBy(rs, replicaSetKind))
	p2 := w.pod("web-7d4f9-b", controlledBy(rs, replicaSetKind))
	r := newResolver(t, adminConfig, ancestry.Options{})

	want := []ownerchain.Ancestor{ancestor("ReplicaSet", rs), ancestor("Deployment", d)}
	before := snapshot(t)
	// A lookup reads nothing: what the cache does not know is pending.
	expectResolution(t, r.Lookup(podRef(p1)), podRef(p1), ancestry.Chain{Pending: ancestry.ReasonUncached})
	expectCounts(t, before, nil, 0)
	expectChain(t, r, podRef(p1), want)
	// The pod, its ReplicaSet and the Deployment (which has no owner).
	expectCounts(t, before, nil, 3)
	// Now the cache knows it to the top.
	before = snapshot(t)
	expectResolution(t, r.Lookup(podRef(p1)), podRef(p1), ancestry.Chain{Ancestors: want})
	expectResolution(t, r.Lookup(podRef(p2)), podRef(p2), ancestry.Chain{Pending: ancestry.ReasonUncached})
	expectCounts(t, before, nil, 0)

	before = snapshot(t)
	expectChain(t, r, podRef(p2), want)
	// The sibling reads only itself.
	expectCounts(t, before, nil, 1)

	before = snapshot(t)
	expectChain(t, r, ancestry.Reference{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: w.namespace, Name: rs.Name, UID: rs.UID},
		[]ownerchain.Ancestor{ancestor("Deployment", d)})
	expectChain(t, r, ancestry.Reference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: w.namespace, Name: d.Name, UID: d.UID}, nil)
	// All known already.
	expectCounts(t, before, nil, 0)
}

func TestCronJobChain(t *testing.T) {
	w := newWorkloads(t)
	cj := w.cronJob("nightly")
	j := w.job("nightly-29431", controlledBy(cj, cronJobKind))
	p := w.pod("nightly-29431-x", controlledBy(j, jobKind))
	r := newResolver(t, adminConfig, ancestry.Options{})

	before := snapshot(t)
	expectChain(t, r, podRef(p), []ownerchain.Ancestor{ancestor("Job", j), ancestor("CronJob", cj)})
	expectCounts(t, before, nil, 3)
}

// TestShippedClusterRole resolves the built-in workloads' chains with the
// rules of the server's ClusterRole in artifacts/ (the chart's are the
// same, as test/integration/chart checks) and nothing else.
func TestShippedClusterRole(t *testing.T) {
	w := newWorkloads(t)
	role := shippedServerRole(t)
	role.Name = "ancestry-test:" + role.Name
	user := userWithClusterRole(t, w, role)

	d := w.deployment("web")
	rs := w.replicaSet("web-1", controlledBy(d, deploymentKind))
	p := w.pod("web-1-a", controlledBy(rs, replicaSetKind))
	cj := w.cronJob("nightly")
	j := w.job("nightly-1", controlledBy(cj, cronJobKind))
	jp := w.pod("nightly-1-a", controlledBy(j, jobKind))
	r := newResolver(t, user, ancestry.Options{})

	before := snapshot(t)
	expectChain(t, r, podRef(p), []ownerchain.Ancestor{ancestor("ReplicaSet", rs), ancestor("Deployment", d)})
	expectChain(t, r, podRef(jp), []ownerchain.Ancestor{ancestor("Job", j), ancestor("CronJob", cj)})
	expectCounts(t, before, nil, -1)
}

// TestForbiddenOwner: a reader who may get pods but not ReplicaSets keeps
// the ReplicaSet the pod names, and stops there.
func TestForbiddenOwner(t *testing.T) {
	w := newWorkloads(t)
	user := userWithClusterRole(t, w, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "ancestry-test:pods-only"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}},
	})
	d := w.deployment("web")
	rs := w.replicaSet("web-1", controlledBy(d, deploymentKind))
	p1 := w.pod("web-1-a", controlledBy(rs, replicaSetKind))
	p2 := w.pod("web-1-b", controlledBy(rs, replicaSetKind))
	r := newResolver(t, user, ancestry.Options{})

	before := snapshot(t)
	expectChain(t, r, podRef(p1), []ownerchain.Ancestor{ancestor("ReplicaSet", rs)})
	expectCounts(t, before, map[string]float64{ancestry.ReasonForbidden: 1}, 2)

	// The refusal is remembered for a while: the sibling does not ask again.
	before = snapshot(t)
	expectChain(t, r, podRef(p2), []ownerchain.Ancestor{ancestor("ReplicaSet", rs)})
	expectCounts(t, before, map[string]float64{ancestry.ReasonForbidden: 1}, 1)
}

// TestDeletedAndReplacedPod: an event about a pod that is gone has no
// chain, nor has one about a pod whose name now belongs to another pod
// (another UID) with other owners.
func TestDeletedAndReplacedPod(t *testing.T) {
	w := newWorkloads(t)
	d := w.deployment("web")
	oldRS := w.replicaSet("web-old", controlledBy(d, deploymentKind))
	newRS := w.replicaSet("web-new", controlledBy(d, deploymentKind))
	gone := w.pod("gone", controlledBy(oldRS, replicaSetKind))
	w.deletePod(gone.Name)
	replaced := w.pod("db-0", controlledBy(oldRS, replicaSetKind))
	w.deletePod(replaced.Name)
	replacement := w.pod("db-0", controlledBy(newRS, replicaSetKind))
	r := newResolver(t, adminConfig, ancestry.Options{})

	before := snapshot(t)
	expectChain(t, r, podRef(gone), nil)
	expectCounts(t, before, map[string]float64{ancestry.ReasonNotFound: 1}, 1)

	before = snapshot(t)
	expectChain(t, r, podRef(replaced), nil)
	expectCounts(t, before, map[string]float64{ancestry.ReasonReplaced: 1}, 1)

	// The replacement's own events have its chain, from what the read of
	// the same name found.
	before = snapshot(t)
	expectChain(t, r, podRef(replacement), []ownerchain.Ancestor{ancestor("ReplicaSet", newRS), ancestor("Deployment", d)})
	expectCounts(t, before, nil, 2)
}

// TestReferencesWithoutUID: an event may name its object without a UID;
// the object of that name is taken, and what its read found is kept
// briefly by name, so that a burst of events about a missing object reads
// it once.
func TestReferencesWithoutUID(t *testing.T) {
	w := newWorkloads(t)
	d := w.deployment("web")
	rs := w.replicaSet("web-1", controlledBy(d, deploymentKind))
	p := w.pod("web-1-a", controlledBy(rs, replicaSetKind))
	r := newResolver(t, adminConfig, ancestry.Options{})
	byName := podRef(p)
	byName.UID = ""
	missing := ancestry.Reference{APIVersion: "v1", Kind: "Pod", Namespace: w.namespace, Name: "missing"}

	before := snapshot(t)
	expectChain(t, r, byName, []ownerchain.Ancestor{ancestor("ReplicaSet", rs), ancestor("Deployment", d)})
	expectChain(t, r, byName, []ownerchain.Ancestor{ancestor("ReplicaSet", rs), ancestor("Deployment", d)})
	expectCounts(t, before, nil, 3)

	before = snapshot(t)
	expectChain(t, r, missing, nil)
	expectChain(t, r, missing, nil)
	expectCounts(t, before, map[string]float64{ancestry.ReasonNotFound: 2}, 1)
}

// TestOwnerCycle: two ReplicaSets that control each other end the chain
// when it comes back, with both in it.
func TestOwnerCycle(t *testing.T) {
	w := newWorkloads(t)
	a := w.replicaSet("a", nil)
	b := w.replicaSet("b", controlledBy(a, replicaSetKind))
	a.OwnerReferences = controlledBy(b, replicaSetKind)
	if _, err := w.client.AppsV1().ReplicaSets(w.namespace).Update(w.ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := w.pod("p", controlledBy(a, replicaSetKind))
	r := newResolver(t, adminConfig, ancestry.Options{})

	before := snapshot(t)
	expectChain(t, r, podRef(p), []ownerchain.Ancestor{ancestor("ReplicaSet", a), ancestor("ReplicaSet", b)})
	expectCounts(t, before, map[string]float64{ancestry.ReasonCycle: 1}, 3)
}

// TestClusterScopedOwner: a namespaced object may be controlled by a
// cluster-scoped one, which is read without the namespace.
func TestClusterScopedOwner(t *testing.T) {
	w := newWorkloads(t)
	node, err := w.client.CoreV1().Nodes().Create(w.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: w.namespace}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	p := w.pod("mirror", controlledBy(node, nodeKind))
	r := newResolver(t, adminConfig, ancestry.Options{})

	before := snapshot(t)
	expectChain(t, r, podRef(p), []ownerchain.Ancestor{ancestor("Node", node)})
	expectCounts(t, before, nil, 2)
}

// TestUnknownOwnerKind: an owner of a kind discovery does not know (a CRD
// since removed) stays in the chain, which ends there.
func TestUnknownOwnerKind(t *testing.T) {
	w := newWorkloads(t)
	widget := []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Widget", Name: "w", UID: types.UID("6f1c0e4e-0000-4000-8000-000000000001"), Controller: ptr.To(true)}}
	p := w.pod("p", widget)
	r := newResolver(t, adminConfig, ancestry.Options{})

	before := snapshot(t)
	expectChain(t, r, podRef(p), []ownerchain.Ancestor{{Kind: "Widget", Name: "w", UID: widget[0].UID}})
	expectCounts(t, before, map[string]float64{ancestry.ReasonNoKind: 1}, 1)
}

// TestBudgetSpent: a resolution that runs out of time returns no chain and
// no error.
func TestBudgetSpent(t *testing.T) {
	w := newWorkloads(t)
	d := w.deployment("web")
	rs := w.replicaSet("web-1", controlledBy(d, deploymentKind))
	p := w.pod("web-1-a", controlledBy(rs, replicaSetKind))
	r := newResolver(t, adminConfig, ancestry.Options{Timeout: time.Nanosecond})

	before := snapshot(t)
	expectResolution(t, r.Resolve(t.Context(), podRef(p)), podRef(p), ancestry.Chain{Pending: ancestry.ReasonTimeout})
	expectCounts(t, before, map[string]float64{ancestry.ReasonTimeout: 1}, -1)
}

// TestKubeAPIServerThrottling: while kube-apiserver answers 429 to every
// read, the chain stops short, pending, and what was read before stays; once
// it answers again, the same resolution reaches the top.
func TestKubeAPIServerThrottling(t *testing.T) {
	w := newWorkloads(t)
	d := w.deployment("web")
	rs := w.replicaSet("web-1", controlledBy(d, deploymentKind))
	p := w.pod("web-1-a", controlledBy(rs, replicaSetKind))
	proxy := framework.StartCountingProxy(t, adminConfig, nil)
	r := newResolver(t, proxy.Config(), ancestry.Options{Timeout: 500 * time.Millisecond})
	rsRef := ancestry.Reference{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: w.namespace, Name: rs.Name, UID: rs.UID}
	expectChain(t, r, rsRef, []ownerchain.Ancestor{ancestor("Deployment", d)})

	proxy.Throttle(time.Second)
	before := snapshot(t)
	// The pod is read through the throttled proxy; client-go waits out the
	// Retry-After past the budget.
	expectResolution(t, r.Resolve(t.Context(), podRef(p)), podRef(p), ancestry.Chain{Pending: ancestry.ReasonTimeout})
	expectCounts(t, before, map[string]float64{ancestry.ReasonTimeout: 1}, 1)
	expectResolution(t, r.Lookup(podRef(p)), podRef(p), ancestry.Chain{Pending: ancestry.ReasonUncached})

	proxy.Throttle(0)
	expectChain(t, r, podRef(p), []ownerchain.Ancestor{ancestor("ReplicaSet", rs), ancestor("Deployment", d)})
	expectResolution(t, r.Lookup(podRef(p)), podRef(p), ancestry.Chain{Ancestors: []ownerchain.Ancestor{ancestor("ReplicaSet", rs), ancestor("Deployment", d)}})
}

// shippedServerRole is the server's ClusterRole from artifacts/base.
func shippedServerRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "artifacts", "base", "rbac-server.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	decoder := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var role rbacv1.ClusterRole
		if err := decoder.Decode(&role); err != nil {
			t.Fatalf("no ClusterRole in rbac-server.yaml: %v", err)
		}
		if role.Kind == "ClusterRole" {
			return &role
		}
	}
}

// userWithClusterRole creates role and a user bound to it, and returns the
// user's client configuration.
func userWithClusterRole(t *testing.T, w *workloads, role *rbacv1.ClusterRole) *rest.Config {
	t.Helper()
	name := "ancestry-" + w.namespace
	user, err := env.AddUser(envtest.User{Name: name}, adminConfig)
	if err != nil {
		t.Fatal(err)
	}
	rbac := w.client.RbacV1()
	if _, err := rbac.ClusterRoles().Create(w.ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(w.ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	config := user.Config()
	// RBAC's cache sees the binding a moment later: wait until the user
	// may get pods.
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(w.ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(w.namespace).Get(ctx, "none", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("the binding of %s never took effect: %v", name, err)
	}
	return config
}

// TestClaimedUIDsHitOnlyWhatWasRead: the cache answers a reference only
// with what the server read of that very object (kind, namespace, name and
// UID), so a writer who names another object's UID beside a name of its
// own learns nothing of that object's owners; and an event's object of
// another namespace is not read at all.
func TestClaimedUIDsHitOnlyWhatWasRead(t *testing.T) {
	w := newWorkloads(t)
	d := w.deployment("web")
	rs := w.replicaSet("web-7d4f9", controlledBy(d, deploymentKind))
	p := w.pod("web-7d4f9-a", controlledBy(rs, replicaSetKind))
	r := newResolver(t, adminConfig, ancestry.Options{})
	expectChain(t, r, podRef(p), []ownerchain.Ancestor{ancestor("ReplicaSet", rs), ancestor("Deployment", d)})

	for _, tc := range []struct {
		name       string
		ref        ancestry.Reference
		unresolved map[string]float64
		reads      float64
	}{
		{
			name:       "another name with the pod's UID",
			ref:        ancestry.Reference{APIVersion: "v1", Kind: "Pod", Namespace: w.namespace, Name: "claims-web", UID: p.UID},
			unresolved: map[string]float64{ancestry.ReasonNotFound: 1},
			reads:      1,
		},
		{
			name:       "another namespace's name with the pod's UID",
			ref:        ancestry.Reference{APIVersion: "v1", Kind: "Pod", Namespace: "default", Name: p.Name, UID: p.UID},
			unresolved: map[string]float64{ancestry.ReasonNotFound: 1},
			reads:      1,
		},
		{
			name:  "the pod, from an event of another namespace",
			ref:   ancestry.Reference{APIVersion: "v1", Kind: "Pod", Namespace: w.namespace, Name: p.Name, UID: p.UID, OutOfScope: ancestry.ReasonOtherNamespace},
			reads: 0,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t)
			expectChain(t, r, tc.ref, nil)
			expectCounts(t, before, tc.unresolved, tc.reads)
		})
	}
}

// TestNamespacesShareTheReads: the reads made for one namespace's events
// are bounded (NamespaceQPS, NamespaceBurst): past its share, a chain is
// pending (throttled), to be resolved again, while another namespace's
// events are still read for.
func TestNamespacesShareTheReads(t *testing.T) {
	busy := newWorkloads(t)
	first, second := busy.pod("storm-a", nil), busy.pod("storm-b", nil)
	// Another namespace's pod (newWorkloads makes one namespace a test).
	other := first.DeepCopy()
	other.Namespace, other.Name, other.UID = "default", "calm-"+busy.namespace, "uid-calm"
	other.ResourceVersion = ""
	created, err := busy.client.CoreV1().Pods(other.Namespace).Create(busy.ctx, other, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = busy.client.CoreV1().Pods(other.Namespace).Delete(context.WithoutCancel(busy.ctx), other.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	other = created
	r := newResolver(t, adminConfig, ancestry.Options{NamespaceQPS: 0.001, NamespaceBurst: 1})

	expectResolution(t, r.Resolve(t.Context(), podRef(first)), podRef(first), ancestry.Chain{})
	expectResolution(t, r.Resolve(t.Context(), podRef(second)), podRef(second), ancestry.Chain{Pending: ancestry.ReasonThrottled})
	expectResolution(t, r.Resolve(t.Context(), podRef(other)), podRef(other), ancestry.Chain{})
	// What was read is answered from the cache, share or not.
	expectResolution(t, r.Resolve(t.Context(), podRef(first)), podRef(first), ancestry.Chain{})
}
