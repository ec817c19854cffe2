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

package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// serverPackage is the server's main package.
const serverPackage = "github.com/kube-events/events-apiserver/cmd/events-apiserver"

// BuildServer builds cmd/events-apiserver into dir and returns the
// binary's path, for tests and benchmarks that run the server as a process
// of its own (its own /metrics and memory, a kill -9 that is real). It runs
// in the module of the calling test's directory, with the build tags
// given (livestore_debug: memory the live store frees faults when read).
func BuildServer(ctx context.Context, dir string, tags ...string) (string, error) {
	binary := filepath.Join(dir, "events-apiserver")
	args := []string{"build", "-o", binary}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.CommandContext(ctx, "go", append(args, serverPackage)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w: %s", serverPackage, err, out)
	}
	return binary, nil
}

// ModuleRoot is the directory of this module's go.mod, found from the
// working directory (a test's package directory) upwards: where the
// repository's scripts, manifests and charts are.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			strings.Contains(string(data), "module github.com/kube-events/events-apiserver\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("module root (go.mod of github.com/kube-events/events-apiserver) not found above the working directory")
		}
		dir = parent
	}
}
