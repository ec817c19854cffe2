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

package admission_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/kube-events/events-apiserver/"

// TestLayers keeps the layers apart: admission plugins read the event
// policy (pkg/apis/eventpolicy) and the API types, never the registry or
// the server that assembles them; the registry and the server never import
// an admission plugin. cmd/ is where they meet.
func TestLayers(t *testing.T) {
	tests := []struct {
		packages  string // a go list pattern, relative to the module
		forbidden []string
	}{
		{packages: "pkg/admission/...", forbidden: []string{"pkg/registry/", "pkg/apiserver"}},
		{packages: "pkg/registry/...", forbidden: []string{"pkg/admission/"}},
		{packages: "pkg/apiserver/...", forbidden: []string{"pkg/admission/"}},
	}
	for _, tt := range tests {
		t.Run(tt.packages, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", module+tt.packages).CombinedOutput()
			if err != nil {
				t.Fatalf("go list: %v: %s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(strings.Fields(string(out))) < 10*len(lines) {
				t.Fatalf("go list listed only %d packages with %d dependencies", len(lines), len(strings.Fields(string(out))))
			}
			for _, line := range lines {
				deps := strings.Fields(line)
				for _, dep := range deps[1:] {
					for _, prefix := range tt.forbidden {
						if strings.HasPrefix(dep, module+prefix) {
							t.Errorf("%s depends on %s", strings.TrimPrefix(deps[0], module), strings.TrimPrefix(dep, module))
						}
					}
				}
			}
		})
	}
}
