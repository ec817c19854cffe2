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

// Package server runs the real events-apiserver (in this process, through
// cmd/events-apiserver/app) and exercises it with the unmodified client-go
// typed clients of k8s.io/client-go, in JSON and in protobuf, and with the
// real kubectl: cross-version reads, every selectable field on list and
// watch, the REST surface client-go and kubectl use, the TTL in etcd, the
// client-go event recorders, table output and explain, bad input, and
// restarts.
//
// Run with the envtest assets of hack/envtest-assets.sh:
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test ./test/integration/server/
package server

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// shared is the server most tests use, on the embedded etcd of the default
// contract with the default --event-ttl. Tests keep apart by namespace.
var shared *framework.Server

func TestMain(m *testing.M) {
	// Before the in-process server starts: its embedded archive marks
	// flag.CommandLine parsed, which would leave -run and -v unread.
	flag.Parse()
	var err error
	shared, err = framework.RunServer()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the shared events-apiserver: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := shared.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the shared events-apiserver: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
