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

package conformance

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
)

// ClusterOf is the Cluster of client. Where the cluster serves namespaces
// (through kube-apiserver), each test gets a Namespace generated from its
// base name, as upstream's framework creates one, deleted when the test
// ends; where it does not (the server alone, whose events may name any
// namespace), a name no other test uses.
func ClusterOf(client kubernetes.Interface) Cluster {
	return Cluster{Client: client, NewNamespace: func(ctx context.Context, t testing.TB, baseName string) string {
		t.Helper()
		served, err := servesNamespaces(client)
		if err != nil {
			t.Fatalf("discovering namespaces: %v", err)
		}
		if !served {
			return baseName + "-" + utilrand.String(5)
		}
		ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{GenerateName: baseName + "-"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating a namespace for the test: %v", err)
		}
		t.Cleanup(func() {
			err := client.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting namespace %s: %v", ns.Name, err)
			}
		})
		return ns.Name
	}}
}

// servesNamespaces tells whether the cluster serves core/v1 namespaces.
func servesNamespaces(client kubernetes.Interface) (bool, error) {
	resources, err := client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		return false, err
	}
	for _, r := range resources.APIResources {
		if r.Name == "namespaces" {
			return true, nil
		}
	}
	return false, nil
}
