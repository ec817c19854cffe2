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

package takeover

import (
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kube-events/events-apiserver/test/takeoverprobe"
)

// localV1APIService is the APIService kube-apiserver registers for its own
// events.k8s.io/v1: no service, its priorities, and the label by which it
// manages it (kube-apiserver deletes it at start if it does not serve v1).
func localV1APIService() map[string]any {
	return map[string]any{
		"labels": map[string]any{automanagedLabel: "onstart"},
		"spec": map[string]any{
			"group": "events.k8s.io", "version": "v1",
			"groupPriorityMinimum": int64(17750), "versionPriority": int64(15),
		},
	}
}

// replaceV1APIService updates v1.events.k8s.io in place to labels and
// spec, as `kubectl replace` does: one object changes, so kube-apiserver's
// aggregator switches its handler at once.
func replaceV1APIService(t *testing.T, with map[string]any) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cluster.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	current, err := dyn.Resource(apiServicesGVR).Get(testContext(t), v1APIServiceName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{}
	for k, v := range with["labels"].(map[string]any) {
		labels[k] = v.(string)
	}
	current.SetLabels(labels)
	current.SetAnnotations(nil)
	current.Object["spec"] = with["spec"]
	if _, err := dyn.Resource(apiServicesGVR).Update(testContext(t), current, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("replacing APIService %s: %v", v1APIServiceName, err)
	}
}

// ourV1APIService is our v1.events.k8s.io of artifacts/overlays/takeover,
// as replaceV1APIService takes it.
func ourV1APIService(t *testing.T) map[string]any {
	t.Helper()
	apiService, err := cluster.OverlayAPIService(testContext(t), repoRoot, "takeover", v1APIServiceName)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]any{}
	for k, v := range apiService.GetLabels() {
		labels[k] = v
	}
	spec, _, _ := unstructured.NestedMap(apiService.Object, "spec")
	return map[string]any{"labels": labels, "spec": spec}
}

// TestSwitchingOffAndOn takes events.k8s.io/v1 back to kube-apiserver and
// gives it to our server again, the way docs/takeover.md says, while a
// prober writes and lists through kube-apiserver; it prints how long the
// prober's writes and lists failed at each step, and checks that only
// kube-apiserver's restarts fail them.
func TestSwitchingOffAndOn(t *testing.T) {
	namespace := newNamespace(t)
	const inARow = 10
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(cluster.Dir, "kube-apiserver.log"))
			t.Logf("kube-apiserver's log:\n%s", log[max(0, len(log)-20000):])
		}
	})

	steps := []struct {
		name string
		do   func(t *testing.T)
		// answeredBy is who answers v1 writes after the step.
		answeredBy string
		// restart: kube-apiserver is down for a while (one envtest
		// instance, no other to fail over to).
		restart bool
	}{
		{
			name: "off: kube-apiserver serves events.k8s.io/v1 again, our APIService still routes to us",
			do: func(t *testing.T) {
				if err := cluster.RestartKubeAPIServer(map[string]string{"runtime-config": ""}); err != nil {
					t.Fatal(err)
				}
			},
			answeredBy: takeoverprobe.AnsweredByUs,
			restart:    true,
		},
		{
			name:       "off: kube-apiserver's local APIService replaces ours",
			do:         func(t *testing.T) { replaceV1APIService(t, localV1APIService()) },
			answeredBy: takeoverprobe.AnsweredByKubeAPIServer,
		},
		{
			name:       "on: our APIService replaces kube-apiserver's local one",
			do:         func(t *testing.T) { replaceV1APIService(t, ourV1APIService(t)) },
			answeredBy: takeoverprobe.AnsweredByUs,
		},
		{
			name: "on: kube-apiserver stops serving events.k8s.io/v1 and leaves our APIService alone",
			do: func(t *testing.T) {
				if err := cluster.RestartKubeAPIServer(map[string]string{"runtime-config": kubeV1Disabled}); err != nil {
					t.Fatal(err)
				}
			},
			answeredBy: takeoverprobe.AnsweredByUs,
			restart:    true,
		},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			p := takeoverprobe.Start(testContext(t), kubeClient(t, cluster.AdminConfig), namespace)
			t.Cleanup(p.Stop)
			if err := p.WaitAnsweredBy(testContext(t), answeredByThen(t), inARow, timeout); err != nil {
				t.Fatal(err)
			}
			step.do(t)
			if err := p.WaitAnsweredBy(testContext(t), step.answeredBy, inARow, timeout); err != nil {
				t.Fatal(err)
			}
			p.Stop()
			writes, lists := p.FailureWindow()
			t.Logf("%s: %s", step.name, p.Summary())
			if !step.restart && (writes > 0 || lists > 0) {
				t.Errorf("writes failed for %v and lists for %v, want no failure: %s", writes, lists, p.Summary())
			}
		})
	}
	if err := servedByUs(testContext(t)); err != nil {
		t.Errorf("after switching off and on: %v", err)
	}
}

// answeredByThen is who answers v1 writes now, from the APIService.
func answeredByThen(t *testing.T) string {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cluster.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	apiService, err := dyn.Resource(apiServicesGVR).Get(testContext(t), v1APIServiceName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedMap(apiService.Object, "spec", "service"); found {
		return takeoverprobe.AnsweredByUs
	}
	return takeoverprobe.AnsweredByKubeAPIServer
}
