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
	"os"
	"path/filepath"
	"testing"
)

// EnvtestAsset is the path of binary name (etcd, kube-apiserver, kubectl)
// in $KUBEBUILDER_ASSETS, the directory hack/envtest-assets.sh prints. It
// fails t if the variable is unset or the binary missing.
func EnvtestAsset(t testing.TB, name string) string {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatalf("KUBEBUILDER_ASSETS is not set; these tests need the envtest binaries (%s): "+
			`run them with KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"`, name)
	}
	path := filepath.Join(assets, name)
	if info, err := os.Stat(path); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
		t.Fatalf("KUBEBUILDER_ASSETS=%s has no executable %s (%v): rebuild the assets with hack/envtest-assets.sh", assets, name, err)
	}
	return path
}

// StartTestEtcd starts the envtest assets' etcd, one member on free
// loopback ports in a t.TempDir with extra flags (--quota-backend-bytes),
// waits until it answers, and stops it when the test ends, showing its
// output if the test failed.
func StartTestEtcd(t testing.TB, extra ...string) *Etcd {
	t.Helper()
	e, err := StartEtcd(EnvtestAsset(t, "etcd"), t.TempDir(), 1, append([]string{"--log-level=error"}, extra...)...)
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping etcd: %v", err)
		}
		if t.Failed() {
			t.Logf("etcd output (end):\n%s", e.Members[0].Tail())
		}
	})
	return e
}
