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
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/pkg/ownerchain"
)

// TestChainsWrittenThroughKubeAPIServerAreReplaced: a client of
// kube-apiserver, which stores events straight into our etcd past our
// strategy, writes the chain annotations itself (a chain that puts its
// event under another Deployment, a seal it made up); the server owns
// them in this mode too: the elected annotator replaces them with the
// chain it resolves and seals, on the create and on a later patch that
// forges them again.
func TestChainsWrittenThroughKubeAPIServerAreReplaced(t *testing.T) {
	ctx := testContext(t)
	namespace := newNamespace(t)
	kube := kubeClient(t, cluster.AdminConfig)
	pod, want := deploymentPod(ctx, t, kube, namespace, "api", "api-5c8d")
	forged := map[string]string{
		ownerchain.Annotation:     `["Deployment/payments","uid-payments"]`,
		ownerchain.SealAnnotation: "bm90IGEgc2VhbA",
		"team":                    "a",
	}

	now := metav1.NewTime(time.Now())
	events := kube.CoreV1().Events(namespace)
	created, err := events.Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: pod.Name + ".started", Namespace: namespace, Annotations: forged},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: pod.Name, UID: pod.UID},
		Reason:         "Started", Message: "Started container c", Type: corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "offload-kubelet", Host: "node-1"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Annotations[ownerchain.Annotation] != forged[ownerchain.Annotation] {
		t.Fatalf("kube-apiserver did not store the annotations as written: %v", created.Annotations)
	}
	ours := kubeClient(t, cluster.ServerConfig).CoreV1().Events(namespace)
	waitForOurChain := func(what string, count int32) {
		t.Helper()
		var last *corev1.Event
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			event, err := ours.Get(ctx, created.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			last = event
			seal := event.Annotations[ownerchain.SealAnnotation]
			return event.Count == count && event.Annotations[ownerchain.Annotation] == want &&
				seal != "" && seal != forged[ownerchain.SealAnnotation] && event.Annotations["team"] == "a", nil
		}); err != nil {
			t.Fatalf("%s: the stored event kept another writer's chain (want %s, count %d; last %v): %v", what, want, count, last.Annotations, err)
		}
	}
	waitForOurChain("created through kube-apiserver", 1)

	// A patch through kube-apiserver forges the chain again, keeping the
	// server's seal beside it.
	patch, err := json.Marshal(map[string]any{
		"count":    2,
		"metadata": map[string]any{"annotations": map[string]string{ownerchain.Annotation: forged[ownerchain.Annotation]}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := events.Patch(ctx, created.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForOurChain("chain forged again by a patch through kube-apiserver", 2)
}
