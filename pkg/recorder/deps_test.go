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

// The recorder is a Go module of its own, so that a controller that
// imports it gets client-go and apimachinery in its module graph and
// nothing of the server: no k8s.io/apiserver, no etcd, no VictoriaLogs.
var forbidden = []string{
	"github.com/kube-events/events-apiserver", // the server's module, and its packages
	"k8s.io/apiserver",
	"go.etcd.io/",
	"github.com/VictoriaMetrics/",
	"sigs.k8s.io/controller-runtime",
}

// TestModuleGraphHasNoServerModules checks the module graph a controller
// inherits (go list -m all in this module).
func TestModuleGraphHasNoServerModules(t *testing.T) {
	modules := goList(t, "-m", "-f", "{{.Path}}", "all")
	if len(modules) < 10 || modules[0] != "github.com/kube-events/events-apiserver/pkg/recorder" {
		t.Fatalf("go list -m all did not list this module first, or listed only %v", modules)
	}
	for _, module := range modules[1:] {
		if isForbidden(module) {
			t.Errorf("the recorder's module graph holds %s", module)
		}
	}
}

// TestImportsNoServerPackages checks the packages it compiles in: client-go,
// apimachinery, k8s.io/api, k8s.io/utils, klog and component-base/metrics.
func TestImportsNoServerPackages(t *testing.T) {
	deps := goList(t, "-deps", ".")
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %v", deps)
	}
	for _, dep := range deps {
		if !inThisModule(dep) && isForbidden(dep) {
			t.Errorf("pkg/recorder depends on %s", dep)
		}
	}
}

// inThisModule tells the recorder's own packages (seriesid) from the
// server's.
func inThisModule(path string) bool {
	const module = "github.com/kube-events/events-apiserver/pkg/recorder"
	return path == module || strings.HasPrefix(path, module+"/")
}

func isForbidden(path string) bool {
	for _, prefix := range forbidden {
		if strings.HasPrefix(path, prefix) {
			return true
		}
	}
	return false
}

// goList runs go list in this module with args and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}
