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

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kube-events/events-apiserver/pkg/ownerchain"
	"github.com/kube-events/events-apiserver/test/harness"
)

// TestOurServerKeepsTheChainOfControllerOwners: an event about a pod is
// stored with the chain of its controller owners, read from kube-apiserver
// with the server's ServiceAccount and the RBAC of artifacts/, whichever
// API it is written through; what a client sends in the annotation is
// never kept.
func TestOurServerKeepsTheChainOfControllerOwners(t *testing.T) {
	ns := newNamespace(t)
	ctx := testContext(t)
	admin := adminClient(t)
	labels := map[string]string{"app": "web"}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	// No controllers run in envtest: the objects are made as they would.
	d, err := admin.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := admin.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d4f9", OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d4f9-a", OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
		Spec:       template.Spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podChain := ownerchain.Encode([]ownerchain.Ancestor{
		{Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID},
		{Kind: "Deployment", Name: d.Name, UID: d.UID},
	})
	forged := map[string]string{ownerchain.Annotation: `["Deployment/other","uid-other"]`, "team": "a"}

	// events.k8s.io through kube-apiserver.
	sent := v1beta1Event(ns, "through-kube-apiserver")
	sent.Regarding = corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: pod.Name, UID: pod.UID}
	sent.Annotations = forged
	events := admin.EventsV1beta1().Events(ns)
	created, err := events.Create(ctx, sent, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ownerchain.Annotation: podChain, "team": "a"}
	if diff := cmp.Diff(want, created.Annotations); diff != "" {
		t.Errorf("created through kube-apiserver: annotations (-want +got):\n%s", diff)
	}
	created.Annotations = forged
	updated, err := events.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, updated.Annotations); diff != "" {
		t.Errorf("updated with another chain: annotations (-want +got):\n%s", diff)
	}

	// core/v1 straight to our server, about the pod and about the
	// Deployment, which has no owner.
	direct := clientFor(t, cluster.ServerConfig).CoreV1().Events(ns)
	now := metav1.NewTime(time.Now())
	for _, tc := range []struct {
		regarding corev1.ObjectReference
		want      map[string]string
	}{
		{corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: pod.Name, UID: pod.UID}, map[string]string{ownerchain.Annotation: podChain}},
		{corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: d.Name, UID: d.UID}, nil},
	} {
		created, err := direct.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: "direct-", Namespace: ns, Annotations: map[string]string{ownerchain.Annotation: forged[ownerchain.Annotation]}},
			InvolvedObject: tc.regarding,
			Reason:         "Started", Message: "started", Type: corev1.EventTypeNormal,
			Source:         corev1.EventSource{Component: "example.com/controller"},
			FirstTimestamp: now, LastTimestamp: now, Count: 1,
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, created.Annotations, cmpEmptyMaps); diff != "" {
			t.Errorf("core/v1 event about the %s: annotations (-want +got):\n%s", tc.regarding.Kind, diff)
		}
	}
}

// cmpEmptyMaps takes an empty map for none.
var cmpEmptyMaps = cmp.FilterValues(func(a, b map[string]string) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())

// objectReads is how many objects the server's resolver read from
// kube-apiserver so far (our server runs in this process).
func objectReads(t *testing.T) float64 {
	t.Helper()
	m, err := harness.GatherMetrics(legacyregistry.DefaultGatherer)
	if err != nil {
		t.Fatal(err)
	}
	return m.Value("events_apiserver_ancestry_object_reads_total", nil)
}

// eventWriter is a ClusterRole that may write events, and read them back.
func eventWriter(t *testing.T) string {
	t.Helper()
	role, err := adminClient(t).RbacV1().ClusterRoles().Create(testContext(t), &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "events-writer-"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"", eventsGroup}, Resources: []string{"events"},
			Verbs: []string{"create", "get", "list", "watch", "update", "patch"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = adminClient(t).RbacV1().ClusterRoles().Delete(context.WithoutCancel(testContext(t)), role.Name, metav1.DeleteOptions{})
	})
	return role.Name
}

// TestChainsStayInTheWritersNamespace: a tenant who may write events in
// its namespace only learns nothing, through the chain the server
// resolves, of another namespace's object (a dry run or a create about
// Pod <b>/db-0, which belongs to StatefulSet db), and the server reads
// nothing for it; a create that validation refuses (422) costs no read
// either. kube-apiserver's validation accepts an event with an eventTime
// about another namespace's object, and so does ours.
func TestChainsStayInTheWritersNamespace(t *testing.T) {
	ctx := testContext(t)
	admin := adminClient(t)
	a, b := newNamespace(t), newNamespace(t)
	labels := map[string]string{"app": "db"}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	sts, err := admin.AppsV1().StatefulSets(b).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec:       appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dbPod, err := admin.CoreV1().Pods(b).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "db-0", OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
		Spec:       template.Spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A pod of the tenant's own, with an owner the resolver has not read.
	ownSts, err := admin.AppsV1().StatefulSets(a).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "cache"},
		Spec:       appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ownPod, err := admin.CoreV1().Pods(a).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cache-0", OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ownSts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
		Spec:       template.Spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	tenant := addUser(t, "events-tenant-a")
	bindRole(t, a, eventWriter(t), []string{tenant.name}, nil)
	events := clientFor(t, tenant.config).EventsV1beta1().Events(a)

	for _, tc := range []struct {
		name   string
		dryRun []string
	}{
		{name: "dry run", dryRun: []string{metav1.DryRunAll}},
		{name: "create"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			event := v1beta1Event(a, "about-db-0-"+strings.ReplaceAll(tc.name, " ", "-"))
			event.Regarding = corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: b, Name: dbPod.Name, UID: dbPod.UID}
			reads := objectReads(t)
			created, err := events.Create(ctx, event, metav1.CreateOptions{DryRun: tc.dryRun})
			if err != nil {
				t.Fatalf("the tenant's event about %s/%s: %v, want it accepted as kube-apiserver accepts it", b, dbPod.Name, err)
			}
			if diff := cmp.Diff(map[string]string(nil), created.Annotations, cmpEmptyMaps); diff != "" {
				t.Errorf("annotations of the tenant's event about another namespace's pod (-want +got):\n%s", diff)
			}
			if got := objectReads(t) - reads; got != 0 {
				t.Errorf("the server read %v objects for an event about another namespace's pod, want none", got)
			}
		})
	}

	t.Run("refused create", func(t *testing.T) {
		event := v1beta1Event(a, "refused")
		event.Regarding = corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: a, Name: ownPod.Name, UID: ownPod.UID}
		event.Action = "" // events.k8s.io requires it: 422
		reads := objectReads(t)
		_, err := events.Create(ctx, event, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("create without an action: %v, want 422", err)
		}
		if got := objectReads(t) - reads; got != 0 {
			t.Errorf("the server read %v objects for a refused create, want none", got)
		}

		event.Action = "Started"
		reads = objectReads(t)
		created, err := events.Create(ctx, event, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{ownerchain.Annotation: ownerchain.Encode([]ownerchain.Ancestor{{Kind: "StatefulSet", Name: ownSts.Name, UID: ownSts.UID}})}
		if diff := cmp.Diff(want, created.Annotations); diff != "" {
			t.Errorf("the tenant's event about its own pod: annotations (-want +got):\n%s", diff)
		}
		if got := objectReads(t) - reads; got == 0 {
			t.Error("the server read nothing for the accepted create of an uncached chain")
		}
	})
}
