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

package history

import (
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-events/events-apiserver/pkg/archive/export"
	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// startCollector runs the OpenTelemetry Collector (OTELCOL_ASSETS) until
// the test ends.
func startCollector(t *testing.T) *harness.Collector {
	t.Helper()
	c, err := harness.StartCollector(ctxFor(t), os.Getenv("OTELCOL_ASSETS"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("otelcol:\n%s", c.Tail())
		}
	})
	return c
}

// TestExportToTheCollector runs the server behind kube-apiserver, which
// resolves chains of owners, with the export to an OpenTelemetry Collector
// over each OTLP protocol, and checks every attribute of the mapping on the
// records the Collector's file exporter wrote: an event about a pod of a
// ReplicaSet of a Deployment with a series, a related object and a
// traceparent, and a core/v1 one.
func TestExportToTheCollector(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		endpoint func(*harness.Collector) string
	}{
		{protocol: export.ProtocolHTTP, endpoint: func(c *harness.Collector) string { return c.HTTPEndpoint + "/v1/logs" }},
		{protocol: export.ProtocolGRPC, endpoint: func(c *harness.Collector) string { return c.GRPCEndpoint }},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			ctx := ctxFor(t)
			collector := startCollector(t)
			cluster, err := framework.StartAggregatedCluster(framework.AggregatedClusterOptions{ExtraServerFlags: []string{
				"--archive=embedded", "--export-otlp-protocol=" + tc.protocol, "--export-otlp-endpoint=" + tc.endpoint(collector),
			}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cluster.Stop() })
			admin, err := kubernetes.NewForConfig(cluster.AdminConfig)
			if err != nil {
				t.Fatal(err)
			}
			namespace := namespaceFor(t)
			regarding, chain := createOwnedPod(t, admin, namespace)
			// Written to our server itself: kube-apiserver serves
			// events.k8s.io/v1 and core/v1 events of its own.
			cases := createMappingEvents(ctx, t, clientset(t, cluster.ServerConfig, runtime.ContentTypeProtobuf), namespace, regarding, chain)

			var records []harness.Record
			if err := waitPoll(ctx, time.Minute, func() bool {
				records, err = collector.Records()
				return err == nil && len(records) >= len(cases)
			}); err != nil {
				t.Fatalf("the Collector received %d records, want %d: %v, %v", len(records), len(cases), err, records)
			}
			rows := make([]map[string]string, 0, len(records))
			for _, r := range records {
				if r[export.AttrNamespace] != namespace {
					continue
				}
				rows = append(rows, r)
				// What VictoriaLogs makes of the record's own fields, the
				// file exporter keeps as sent.
				if r["event_name"] != export.EventName || r["observed_time"] != r["_time"] {
					t.Errorf("record %s: event name %q, observed at %s, want %q and its time %s",
						r[export.AttrRecordUID], r["event_name"], r["observed_time"], export.EventName, r["_time"])
				}
			}
			checkMapping(t, cases, rows)
		})
	}
}

// createOwnedPod creates in kube-apiserver, in a new namespace, a Pod
// controlled by a ReplicaSet controlled by a Deployment, and returns a
// reference to the Pod's container and what a record of an event about it
// holds of its chain.
func createOwnedPod(t *testing.T, admin kubernetes.Interface, namespace string) (corev1.ObjectReference, map[string]string) {
	t.Helper()
	ctx := ctxFor(t)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
	// No controllers run in envtest: the objects are made as they would.
	d, err := admin.AppsV1().Deployments(namespace).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := admin.AppsV1().ReplicaSets(namespace).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d4f9", OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := admin.CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d4f9-a", OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
		Spec:       template.Spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	regarding := corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: pod.Name, UID: pod.UID, APIVersion: "v1",
		FieldPath: "spec.containers{app}", ResourceVersion: pod.ResourceVersion}
	return regarding, map[string]string{
		"k8s.replicaset.name": rs.Name, "k8s.replicaset.uid": string(rs.UID),
		"k8s.deployment.name": d.Name, "k8s.deployment.uid": string(d.UID),
		export.AttrAncestors:    `["ReplicaSet/` + rs.Name + `","Deployment/` + d.Name + `"]`,
		export.AttrAncestorUIDs: `["` + string(rs.UID) + `","` + string(d.UID) + `"]`,
	}
}
