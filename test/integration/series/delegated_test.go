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

package series

import (
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ourv1beta1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1beta1"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestEventSeriesDelegated runs the server as kube-apiserver's aggregated
// API server for events.k8s.io/v1beta1: its admission chain is the generic
// one (NamespaceLifecycle, policies, webhooks) plus EventSeries, and
// clients reach it through kube-apiserver.
func TestEventSeriesDelegated(t *testing.T) {
	t.Parallel()
	cluster, err := framework.StartAggregatedCluster(framework.AggregatedClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Error(err)
		}
	})
	c := clientsFor(t, cluster.AdminConfig)
	ctx := testContext(t)

	ns, err := c.upstream.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "series-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	event := func(namespace string) *eventsv1beta1.Event {
		return &eventsv1beta1.Event{
			ObjectMeta:          metav1.ObjectMeta{Namespace: namespace, Name: "web-0.series"},
			EventTime:           metav1.NewMicroTime(now.Add(-time.Minute)),
			Series:              &eventsv1beta1.EventSeries{Count: fixtureCount, LastObservedTime: metav1.NewMicroTime(now.Add(-30 * time.Second))},
			ReportingController: reportingController,
			ReportingInstance:   reportingController + "-0",
			Action:              "Restarting",
			Reason:              "BackOff",
			Regarding:           corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: "web-0"},
			Note:                "Back-off restarting failed container app",
			Type:                corev1.EventTypeWarning,
		}
	}
	events := c.upstream.EventsV1beta1().Events(ns.Name)

	// The generic chain is still there: NamespaceLifecycle refuses events
	// in namespaces kube-apiserver does not have.
	if _, err := c.upstream.EventsV1beta1().Events("no-such-namespace").Create(ctx, event("no-such-namespace"), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("create in a missing namespace: %v, want NotFound from NamespaceLifecycle", err)
	}

	// EventSeries defaults the state...
	if _, err := events.Create(ctx, event(ns.Name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stored, err := c.ours.EventsV1beta1().Events(ns.Name).Get(ctx, "web-0.series", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Series == nil || stored.Series.State != ourv1beta1.EventSeriesStateOngoing {
		t.Errorf("stored series %+v, want state Ongoing", stored.Series)
	}

	// ...and refuses invalid transitions, through kube-apiserver too.
	_, err = events.Patch(ctx, "web-0.series", types.MergePatchType, []byte(`{"series":{"count":3}}`), metav1.PatchOptions{})
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Code != http.StatusUnprocessableEntity ||
		!strings.Contains(err.Error(), "series.count: Invalid value: 3: may not decrease (was 5)") {
		t.Errorf("lowering series.count: %v, want 422 naming series.count", err)
	}
	_, stderr, err := framework.Kubectl(t, cluster.Kubeconfig, "patch", "events.v1beta1.events.k8s.io", "web-0.series", "-n", ns.Name,
		"--type=merge", "-p", `{"series":{"count":4}}`)
	if err == nil || !strings.Contains(stderr, `The Event "web-0.series" is invalid: series.count: Invalid value: 4: may not decrease (was 5)`) {
		t.Errorf("kubectl lowering series.count: %v: %s", err, stderr)
	}
}
