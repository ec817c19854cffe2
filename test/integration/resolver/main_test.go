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

// Package resolver tests pkg/ancestry's Resolver against envtest's
// kube-apiserver: ownership chains built by hand (no controllers run
// there), read as an admin, as the server's shipped ClusterRole and as a
// user who may read pods only.
//
// Run with the envtest assets of hack/envtest-assets.sh:
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test ./test/integration/resolver/
package resolver

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

var (
	env *envtest.Environment
	// adminConfig reaches kube-apiserver as a system:masters user.
	adminConfig *rest.Config
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		fmt.Fprintln(os.Stderr, `KUBEBUILDER_ASSETS is not set: run with KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"`)
		return 1
	}
	env = &envtest.Environment{BinaryAssetsDirectory: assets}
	var err error
	if adminConfig, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting kube-apiserver:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	adminConfig.QPS, adminConfig.Burst = -1, -1
	return m.Run()
}
