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

// Package recorder tests pkg/recorder against the real events-apiserver and
// against envtest's kube-apiserver, through a proxy that counts every
// request where it arrives, with a fake clock.
package recorder

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// target is a server the recorder writes to.
type target struct {
	name string
	// config reaches it as an admin.
	config *rest.Config
	// hasState says whether it keeps series.state (events-apiserver) or
	// drops it (kube-apiserver).
	hasState bool
	// needsNamespaces says namespaces must exist before events go in.
	needsNamespaces bool
	// listCalls are the calls a broadcaster's start makes: kube-apiserver
	// refuses the reportingInstance field selector (400), so the recorder
	// lists by reportingController and selects the rest itself.
	listCalls []string
}

var targets []target

func TestMain(m *testing.M) {
	// Before the in-process server starts: its embedded archive marks
	// flag.CommandLine parsed, which would leave -run and -v unread.
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	server, err := framework.RunServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting events-apiserver:", err)
		return 1
	}
	defer server.Close()

	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		fmt.Fprintln(os.Stderr, `KUBEBUILDER_ASSETS is not set: run with KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"`)
		return 1
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	kubeConfig, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting kube-apiserver:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	kubeConfig.QPS, kubeConfig.Burst = -1, -1

	targets = []target{
		{name: "events-apiserver", config: server.RestConfig, hasState: true, listCalls: []string{"GET"}},
		{name: "kube-apiserver", config: kubeConfig, needsNamespaces: true, listCalls: []string{"GET(400)", "GET"}},
	}
	return m.Run()
}
