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

package conformance_test

import (
	"flag"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-events/events-apiserver/test/conformance"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

var kubeconfig = flag.String("conformance.kubeconfig", "",
	"the cluster to run the Events conformance tests against; without it, the server on the embedded default (what make run starts)")

// TestEventsConformance runs the four upstream Events [Conformance] tests
// against the cluster of -conformance.kubeconfig:
//
//	go test ./test/conformance -conformance.kubeconfig ~/.kube/config
func TestEventsConformance(t *testing.T) {
	var config *rest.Config
	if *kubeconfig == "" {
		config = framework.StartServer(t).RestConfig
	} else {
		var err error
		if config, err = clientcmd.BuildConfigFromFlags("", *kubeconfig); err != nil {
			t.Fatalf("reading %s: %v", *kubeconfig, err)
		}
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(t, conformance.ClusterOf(client), 2*time.Minute)
}
