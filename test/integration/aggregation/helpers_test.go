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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// timeout bounds each test's calls.
const timeout = 60 * time.Second

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// adminClient reaches kube-apiserver as a system:masters user.
func adminClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	return clientFor(t, cluster.AdminConfig)
}

func clientFor(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// newNamespace creates a namespace in kube-apiserver for one test; our
// server's NamespaceLifecycle admission admits events only in namespaces
// kube-apiserver has.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns, err := adminClient(t).CoreV1().Namespaces().Create(testContext(t),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "events-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// user is an envtest user (a client certificate of kube-apiserver's client
// CA) with a kubeconfig file for kubectl.
type user struct {
	name       string
	config     *rest.Config
	kubeconfig string
}

func addUser(t *testing.T, name string, groups ...string) user {
	t.Helper()
	u, err := cluster.Env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return user{name: name, config: u.Config(), kubeconfig: path}
}

// mustKubectl runs kubectl against kube-apiserver as the admin, failing
// the test on error.
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := framework.Kubectl(t, cluster.Kubeconfig, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout
}

// v1beta1Event is a valid events.k8s.io/v1beta1 Event about a Pod.
func v1beta1Event(namespace, name string) *eventsv1beta1.Event {
	return &eventsv1beta1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: name, Namespace: namespace},
		EventTime:           metav1.NewMicroTime(time.Now()),
		ReportingController: "example.com/controller",
		ReportingInstance:   "controller-0",
		Action:              "Started",
		Reason:              "Started",
		Note:                "started the pod",
		Type:                "Normal",
		Regarding:           corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: "pod-" + name, APIVersion: "v1"},
	}
}

// names are the names in the "kind/name" lines of `kubectl get -o name`, sorted.
func names(out string) []string {
	var result []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		result = append(result, line[strings.LastIndex(line, "/")+1:])
	}
	slices.Sort(result)
	return result
}
