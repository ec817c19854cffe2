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

package chart

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// clusterScoped are the kinds the chart renders without a namespace.
var clusterScoped = map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true, "APIService": true}

// TestChartInstallsIntoTheReleaseNamespace: every namespaced object goes
// into the release namespace, or namespaceOverride, and so do the names the
// objects refer to each other by (Services' DNS names, the namespace the
// server keeps its certificates in); the chart owns no Namespace, so that `helm install -n X
// --create-namespace` works.
func TestChartInstallsIntoTheReleaseNamespace(t *testing.T) {
	cases := []struct {
		name, releaseNamespace, want string
		values                       []string
	}{
		{name: "release namespace", releaseNamespace: "team-events", want: "team-events"},
		{name: "namespaceOverride", releaseNamespace: "default", want: "platform-events", values: []string{"namespaceOverride=platform-events"}},
		{name: "release namespace, cluster layout, monitored", releaseNamespace: "team-events", want: "team-events",
			values: []string{"history.layout=cluster", "serviceMonitor.enabled=true", "podMonitors.enabled=true", "prometheusRule.enabled=true", "grafanaDashboard.enabled=true"}},
		{name: "release namespace, takeover", releaseNamespace: "team-events", want: "team-events", values: []string{"mode=takeover", "history.enabled=false"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rendered, err := helmTemplateIn(t, tc.releaseNamespace, "", tc.values...)
			if err != nil {
				t.Fatal(err)
			}
			if lines := linesWith(rendered, ".events-apiserver.svc", "inject-ca-from: events-apiserver/"); lines != "" {
				t.Errorf("the rendered chart names the namespace events-apiserver:\n%s", lines)
			}
			// The server names its Service in its serving certificate
			// from the namespace of its pod.
			if !strings.Contains(rendered, "fieldPath: metadata.namespace") {
				t.Error("the server is not given its pod's namespace (POD_NAMESPACE), where it keeps its certificates")
			}
			if !strings.Contains(rendered, "."+tc.want+".svc") {
				t.Errorf("the rendered chart never names a Service of the namespace %s", tc.want)
			}
			var wrong []string
			for key, obj := range objects(t, rendered) {
				u := obj.(map[string]any)
				kind := u["kind"].(string)
				namespace, _ := u["metadata"].(map[string]any)["namespace"].(string)
				switch {
				case kind == "Namespace":
					wrong = append(wrong, key+": the chart owns a Namespace")
				case clusterScoped[kind]:
					if namespace != "" {
						wrong = append(wrong, key+": cluster-scoped, with a namespace")
					}
				// The RoleBinding that lets the server read kube-system's
				// extension-apiserver-authentication ConfigMap.
				case namespace == "kube-system" && kind == "RoleBinding":
				case namespace != tc.want:
					wrong = append(wrong, key+": namespace "+namespace)
				}
			}
			sort.Strings(wrong)
			if len(wrong) > 0 {
				t.Errorf("objects outside namespace %s:\n%s", tc.want, strings.Join(wrong, "\n"))
			}
		})
	}
}

// linesWith are the lines of text, comments aside, that hold any of subs.
func linesWith(text string, subs ...string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, sub := range subs {
			if strings.Contains(line, sub) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestChartEtcdMembersSpreadOverNodes: the bundled etcd's members must be
// on different nodes (DoNotSchedule on kubernetes.io/hostname, counting
// only the nodes they tolerate), unless etcd.whenUnsatisfiable relaxes it.
func TestChartEtcdMembersSpreadOverNodes(t *testing.T) {
	cases := []struct {
		name   string
		values []string
		want   corev1.UnsatisfiableConstraintAction
	}{
		{name: "default", want: corev1.DoNotSchedule},
		{name: "relaxed", values: []string{"etcd.whenUnsatisfiable=ScheduleAnyway"}, want: corev1.ScheduleAnyway},
		{name: "offload", values: []string{"mode=offload", "history.enabled=false"}, want: corev1.DoNotSchedule},
	}
	honor := corev1.NodeInclusionPolicyHonor
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rendered, err := helmTemplate(t, "", tc.values...)
			if err != nil {
				t.Fatal(err)
			}
			var etcd appsv1.StatefulSet
			decode(t, objects(t, rendered), "apps/v1 StatefulSet "+overlayNamespace+"/events-etcd", &etcd)
			want := []corev1.TopologySpreadConstraint{{
				MaxSkew:           1,
				TopologyKey:       corev1.LabelHostname,
				WhenUnsatisfiable: tc.want,
				NodeTaintsPolicy:  &honor,
				LabelSelector:     &metav1.LabelSelector{MatchLabels: etcd.Spec.Selector.MatchLabels},
			}}
			if diff := cmp.Diff(want, etcd.Spec.Template.Spec.TopologySpreadConstraints); diff != "" {
				t.Errorf("etcd members' spread (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChartPodDisruptionBudgets: the server, the bundled etcd and every
// VictoriaLogs workload have a PodDisruptionBudget that selects all of its
// pods and lets a drain evict at most one at a time.
func TestChartPodDisruptionBudgets(t *testing.T) {
	cases := []struct {
		name   string
		values []string
		// want maps each workload to its budget.
		want map[string]string
	}{
		{name: "default", want: map[string]string{
			"Deployment events-apiserver":     "events-apiserver",
			"StatefulSet events-etcd":         "events-etcd",
			"StatefulSet events-victorialogs": "events-victorialogs",
		}},
		{name: "victorialogs cluster", values: []string{"history.layout=cluster"}, want: map[string]string{
			"Deployment events-apiserver":    "events-apiserver",
			"StatefulSet events-etcd":        "events-etcd",
			"Deployment events-victorialogs": "events-victorialogs",
			"StatefulSet events-vlstorage":   "events-vlstorage",
		}},
		{name: "external etcd, no history", values: []string{"etcd.bundled=false", "history.enabled=false"}, want: map[string]string{
			"Deployment events-apiserver": "events-apiserver",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rendered, err := helmTemplate(t, "", tc.values...)
			if err != nil {
				t.Fatal(err)
			}
			objs := objects(t, rendered)
			budgets := map[string]policyv1.PodDisruptionBudget{}
			type workload struct {
				Replicas *int32                 `json:"replicas"`
				Template corev1.PodTemplateSpec `json:"template"`
			}
			workloads := map[string]workload{}
			for key, obj := range objs {
				u := obj.(map[string]any)
				meta := u["metadata"].(map[string]any)
				switch u["kind"] {
				case "PodDisruptionBudget":
					var pdb policyv1.PodDisruptionBudget
					decode(t, objs, key, &pdb)
					budgets[pdb.Name] = pdb
				case "Deployment", "StatefulSet":
					var w struct {
						Spec workload `json:"spec"`
					}
					decode(t, objs, key, &w)
					workloads[u["kind"].(string)+" "+meta["name"].(string)] = w.Spec
				}
			}
			got := map[string]string{}
			for name, w := range workloads {
				for _, pdb := range budgets {
					selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
					if err != nil {
						t.Fatalf("PodDisruptionBudget %s: %v", pdb.Name, err)
					}
					if selector.Matches(labels.Set(w.Template.Labels)) {
						got[name] = pdb.Name
						if pdb.Spec.MaxUnavailable != nil && pdb.Spec.MaxUnavailable.IntValue() != 1 {
							t.Errorf("PodDisruptionBudget %s: maxUnavailable %s, want 1", pdb.Name, pdb.Spec.MaxUnavailable)
						}
						if pdb.Spec.MinAvailable != nil && (w.Replicas == nil || pdb.Spec.MinAvailable.IntValue() != int(*w.Replicas)-1) {
							t.Errorf("PodDisruptionBudget %s: minAvailable %s of %v replicas, want one fewer than the replicas", pdb.Name, pdb.Spec.MinAvailable, w.Replicas)
						}
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("workloads' PodDisruptionBudgets (-want +got):\n%s", diff)
			}
		})
	}
}

// decode converts the object objs holds at key into out.
func decode(t *testing.T, objs map[string]any, key string, out any) {
	t.Helper()
	obj, ok := objs[key]
	if !ok {
		keys := keys(objs)
		t.Fatalf("no %s among %s", key, strings.Join(keys, ", "))
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(map[string]any), out); err != nil {
		data, _ := json.Marshal(obj)
		t.Fatalf("%s: %v\n%s", key, err, data)
	}
}
