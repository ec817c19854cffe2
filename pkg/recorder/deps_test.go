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

package recorder_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoServerPackages keeps the package adoptable by controllers:
// it may import client-go, apimachinery, k8s.io/api, k8s.io/utils, klog
// and component-base/metrics, but nothing of the server.
func TestImportsNoServerPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/kube-events/events-apiserver/pkg/recorder").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v: %s", err, out)
	}
	forbidden := []string{
		"github.com/kube-events/events-apiserver/", // the server's own packages
		"k8s.io/apiserver/",
		"go.etcd.io/",
		"sigs.k8s.io/controller-runtime/",
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %v", deps)
	}
	for _, dep := range deps {
		if dep == "github.com/kube-events/events-apiserver/pkg/recorder" {
			continue
		}
		for _, prefix := range forbidden {
			if strings.HasPrefix(dep, prefix) {
				t.Errorf("pkg/recorder depends on %s", dep)
			}
		}
	}
}
