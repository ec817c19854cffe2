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

package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-events/events-apiserver/test/conformance"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestEventsConformance runs Kubernetes' four Events [Conformance] tests
// (test/conformance) against the server on the embedded default, the
// configuration make run starts.
func TestEventsConformance(t *testing.T) {
	conformance.Run(t, conformance.ClusterOf(framework.KubeClient(t, shared.RestConfig)), 2*time.Minute)
}

// TestStrictClockRefusesTheConformancePatch: with the event policy's
// series.strictClock, the series patch of "Events API should ensure that an
// event can be fetched, patched, deleted, and listed" (a series last
// observed 5s before its eventTime) is refused with 422 on
// series.lastObservedTime, as docs/series.md says.
func TestStrictClockRefusesTheConformancePatch(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "event-policy.yaml")
	if err := os.WriteFile(policy, []byte("apiVersion: eventpolicy.config.events.k8s.io/v1alpha1\nkind: EventPolicy\nseries: {strictClock: true}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := framework.StartServer(t, framework.WithServerArgs("--event-policy-config="+policy))
	client := framework.KubeClient(t, srv.RestConfig).EventsV1().Events("strict-clock")
	ctx := t.Context()
	if _, err := client.Create(ctx, &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "event-test"},
		Regarding:           corev1.ObjectReference{Namespace: "strict-clock"},
		EventTime:           metav1.MicroTime{Time: time.Unix(1505828956, 0)},
		Note:                "This is event-test",
		Action:              "Do",
		Reason:              "Test",
		Type:                "Normal",
		ReportingController: "test-controller",
		ReportingInstance:   "test-node",
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := client.Patch(ctx, "event-test", types.StrategicMergePatchType,
		[]byte(`{"series":{"count":2,"lastObservedTime":"2017-09-19T13:49:11.000000Z"}}`), metav1.PatchOptions{})
	const want = `series.lastObservedTime: Invalid value: "2017-09-19T13:49:11.000000Z": may not be before eventTime (2017-09-19T13:49:16.000000Z)`
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("the conformance test's series patch: %v; want 422 %s", err, want)
	}
}
