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

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/kube-events/events-apiserver/test/conformance"
)

// conformanceTimeout bounds each of the four tests, as upstream's
// framework bounds a spec.
const conformanceTimeout = 2 * time.Minute

// modeAPIs says which server answers the conformance tests' requests
// through kube-apiserver in each mode.
var modeAPIs = map[string]string{
	"mirror":   "core/v1 and events.k8s.io/v1 are kube-apiserver's, in the cluster's etcd, copied by our server",
	"offload":  "core/v1 and events.k8s.io/v1 are kube-apiserver's, in our events etcd",
	"takeover": "core/v1 is kube-apiserver's, events.k8s.io/v1 ours, both on our events etcd",
}

// eventsConformance runs Kubernetes' four Events [Conformance] tests
// (test/conformance: the port of k8s.io/kubernetes v1.37.2's
// test/e2e/instrumentation/core_events.go and events.go) through the
// cluster's kube-apiserver, with the admin's unmodified client-go, as a
// subtest of the scenario that installed mode: a cluster that runs the
// server in any mode must still pass Kubernetes' conformance for Events.
//
//	go test ./test/e2e -run '^(TestDefaultOverlay|TestHelmInstall|TestOffloadOverlay|TestTakeover)$/Events_conformance'
//
// runs them in the three modes, the other subtests of those scenarios
// left out.
func eventsConformance(mode string) func(t *testing.T) {
	return func(t *testing.T) {
		apis, ok := modeAPIs[mode]
		if !ok {
			t.Fatalf("no mode %q", mode)
		}
		start := time.Now()
		conformance.Run(t, conformance.ClusterOf(suite.cluster.Client), conformanceTimeout)
		names := make([]string, 0, len(conformance.Tests))
		for _, test := range conformance.Tests {
			names = append(names, test.Name)
		}
		verdict := "passed"
		if t.Failed() {
			verdict = "did not all pass"
		}
		logf(t, "Events conformance in %s mode (%s): the %d tests %s in %s: %s",
			mode, apis, len(names), verdict, time.Since(start).Round(time.Millisecond), strings.Join(names, "; "))
	}
}
