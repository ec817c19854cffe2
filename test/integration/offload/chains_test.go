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

package offload

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kube-events/events-apiserver/pkg/ownerchain"
	"github.com/kube-events/events-apiserver/test/harness"
)

// TestEventsWrittenByKubeAPIServerGetTheirChain: kube-apiserver stores
// events straight into our etcd, past our strategy; the elected annotator
// gives an event about a pod the chain of the pod's ReplicaSet and
// Deployment, which kube-apiserver's later updates (patches of what is
// stored) keep.
func TestEventsWrittenByKubeAPIServerGetTheirChain(t *testing.T) {
	ctx := testContext(t)
	namespace := newNamespace(t)
	kube := kubeClient(t, cluster.AdminConfig)
	pod, want := deploymentPod(ctx, t, kube, namespace, "web", "web-7d4f9")

	now := metav1.NewTime(time.Now())
	events := kube.CoreV1().Events(namespace)
	created, err := events.Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: pod.Name + ".backoff", Namespace: namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: pod.Name, UID: pod.UID},
		Reason:         "BackOff", Message: "Back-off restarting failed container", Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "offload-kubelet", Host: "node-1"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := created.Annotations[ownerchain.Annotation]; ok {
		t.Fatalf("kube-apiserver stored a chain itself: %v", created.Annotations)
	}
	ours := kubeClient(t, cluster.ServerConfig).CoreV1().Events(namespace)
	waitForChain := func(what string, count int32) {
		t.Helper()
		var last *corev1.Event
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			event, err := ours.Get(ctx, created.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			last = event
			return event.Count == count && event.Annotations[ownerchain.Annotation] == want, nil
		}); err != nil {
			t.Fatalf("%s: no chain %s with count %d (last %v): %v", what, want, count, last, err)
		}
	}
	waitForChain("created through kube-apiserver", 1)

	// A recorder's count bump is a patch of what kube-apiserver reads.
	patch := []byte(`{"count":2,"lastTimestamp":"` + time.Now().UTC().Format(time.RFC3339) + `"}`)
	if _, err := events.Patch(ctx, created.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForChain("patched through kube-apiserver", 2)

	// The next event about the pod is archived with the chain at once,
	// from what the resolver's cache knows, before the annotator's update.
	completed := func() float64 {
		m, err := harness.GatherMetrics(legacyregistry.DefaultGatherer)
		if err != nil {
			t.Fatal(err)
		}
		return m.Value("events_apiserver_archive_chains_completed_total", nil)
	}
	before := completed()
	if _, err := events.Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: pod.Name + ".unhealthy", Namespace: namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: pod.Name, UID: pod.UID},
		Reason:         "Unhealthy", Message: "Readiness probe failed", Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "offload-kubelet", Host: "node-1"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return completed() > before, nil
	}); err != nil {
		t.Fatalf("the archiver never completed a chain from the cache: %v", err)
	}
}

// deploymentPod makes a Deployment named name in namespace, its ReplicaSet
// rsName and one of its pods, as their controllers would (none run in
// envtest), and returns the pod and the chain its events are to carry.
func deploymentPod(ctx context.Context, t *testing.T, kube kubernetes.Interface, namespace, name, rsName string) (*corev1.Pod, string) {
	t.Helper()
	labels := map[string]string{"app": name}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	d, err := kube.AppsV1().Deployments(namespace).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := kube.AppsV1().ReplicaSets(namespace).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: rsName, OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := kube.CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: rsName + "-a", OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
		Spec:       template.Spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod, ownerchain.Encode([]ownerchain.Ancestor{{Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID}, {Kind: "Deployment", Name: d.Name, UID: d.UID}})
}
