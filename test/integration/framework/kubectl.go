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

package framework

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kube-events/events-apiserver/test/harness"
)

// kubectlTimeout bounds one kubectl run.
const kubectlTimeout = time.Minute

// EnvtestAsset returns the path of an executable of the envtest assets
// ($KUBEBUILDER_ASSETS/name: etcd, kube-apiserver, kubectl). It fails the
// test, never skips it, when KUBEBUILDER_ASSETS is unset or lacks name.
func EnvtestAsset(t testing.TB, name string) string {
	t.Helper()
	return harness.EnvtestAsset(t, name)
}

// Kubectl runs the kubectl of the envtest assets with kubeconfig and args
// and returns what it printed. err is kubectl's exit error, if any; tests
// assert on it as on the output. Each run has its own discovery cache and
// a home directory of its own, so nothing outside the test is read or
// written.
func Kubectl(t testing.TB, kubeconfig string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	kubectl := EnvtestAsset(t, "kubectl")
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, kubectl, append([]string{
		"--kubeconfig=" + kubeconfig,
		"--cache-dir=" + filepath.Join(home, "cache"),
	}, args...)...)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("kubectl %v did not finish in %v; stdout:\n%s\nstderr:\n%s", args, kubectlTimeout, out.String(), errOut.String())
	}
	return out.String(), errOut.String(), err
}
