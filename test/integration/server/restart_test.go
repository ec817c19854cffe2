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

package server

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestRestartKeepsEveryEvent restarts a server of its own, on the embedded
// etcd, with the same data directory: every event written through every
// version is still there, unchanged, and the kubeconfig (same CA, same
// admin certificate, same port) still works.
func TestRestartKeepsEveryEvent(t *testing.T) {
	t.Parallel()
	s := framework.StartServer(t)
	namespace := namespaceFor(t)

	before := map[string]eventView{}
	for _, c := range clientsFor(t, s) {
		for _, version := range allVersions {
			for i := range 3 {
				name := fmt.Sprintf("%s-%s-%d", strings.ReplaceAll(version.name, "/", "-"), c.name, i)
				created := createIn(t, version, c, validFor(version, namespace, name))
				before[name] = created
			}
		}
	}
	// A second namespace, to check namespaces survive too.
	other := namespace + "-other"
	before["other"] = createIn(t, coreV1, clientsFor(t, s)[0], legacyEvent(other, "other"))

	kubeconfig, err := os.ReadFile(s.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	kubeconfigAfter, err := os.ReadFile(s.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(kubeconfig, kubeconfigAfter) {
		t.Errorf("the restarted server wrote another kubeconfig:\n%s\nwant\n%s", kubeconfigAfter, kubeconfig)
	}

	// The clients made before the restart keep working.
	for _, c := range clientsFor(t, s) {
		for _, version := range allVersions {
			items, _, err := version.list(ctxFor(t), c, metav1.NamespaceAll, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("list through %s (%s) after restart: %v", version.name, c.name, err)
			}
			if len(items) != len(before) {
				t.Errorf("%s (%s): %d events after restart, want %d", version.name, c.name, len(items), len(before))
			}
			for _, got := range items {
				want, ok := before[got.Name]
				if !ok {
					t.Errorf("unexpected event %s/%s after restart", got.Namespace, got.Name)
					continue
				}
				// Compare what every version shows alike.
				if got.UID != want.UID || got.ResourceVersion != want.ResourceVersion || got.Namespace != want.Namespace ||
					got.Note != want.Note || got.Reason != want.Reason || got.Regarding != want.Regarding || got.EventTime != want.EventTime {
					t.Errorf("%s (%s): %s/%s changed across the restart:\ngot  %+v\nwant %+v", version.name, c.name, got.Namespace, got.Name, got, want)
				}
			}
		}
	}

	// And the server takes writes again.
	createIn(t, eventsV1, clientsFor(t, s)[1], newEvent(namespace, "after-restart"))
	out, errOut, err := framework.Kubectl(t, s.KubeconfigPath, "get", "events", "-A", "-o", "name")
	if err != nil || bytes.Count([]byte(out), []byte("event/")) != len(before)+1 {
		t.Errorf("kubectl after restart: %v\n%s%s", err, out, errOut)
	}
}
