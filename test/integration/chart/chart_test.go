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

// Package chart checks that the Helm chart charts/events-apiserver renders
// the objects the kustomize overlays do: each overlay is built with the real
// kubectl (kustomize) and the chart with the helm CLI pinned in
// hack/tools/go.mod (`go tool helm`), into the overlays' namespace, and the
// two object sets must be equal, object by object and field by field. Only
// kustomize's generated-name hash on the ConfigMap events-apiserver-etcd,
// and the overlays' Namespace (the chart installs into the release
// namespace, which it does not own), are set aside. It also checks the
// chart's conventions: the release namespace, the etcd members' required
// spread, and the PodDisruptionBudgets.
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test ./test/integration/chart/
package chart

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// repoRoot is the module root, two directories up.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// run runs a command in dir and returns its standard output.
func run(t *testing.T, dir, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// kubectl is the envtest assets' kubectl.
func kubectl(t *testing.T) string {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal(`KUBEBUILDER_ASSETS is not set: this test builds the overlays with the real kubectl. ` +
			`Run it as: KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test ./test/integration/chart/`)
	}
	return filepath.Join(assets, "kubectl")
}

// helmBinary is the pinned helm, built once (`go tool -n` builds and
// caches it, and prints its path).
var helmBinary = sync.OnceValues(func() (string, error) {
	cmd := exec.Command("go", "tool", "-n", "helm")
	cmd.Dir = filepath.Join("..", "..", "..", "hack", "tools")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go tool -n helm (hack/tools): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
})

// overlayNamespace is the namespace of the overlays' objects.
const overlayNamespace = "events-apiserver"

// helmTemplate renders the chart with the pinned helm, into the overlays'
// namespace, with the values file valuesFile (when not empty) and values
// (--set).
func helmTemplate(t *testing.T, valuesFile string, values ...string) (string, error) {
	t.Helper()
	return helmTemplateIn(t, overlayNamespace, valuesFile, values...)
}

// helmTemplateIn is helmTemplate into the release namespace namespace.
func helmTemplateIn(t *testing.T, namespace, valuesFile string, values ...string) (string, error) {
	t.Helper()
	helm, err := helmBinary()
	if err != nil {
		t.Fatal(err)
	}
	root := repoRoot(t)
	args := []string{"template", "events-apiserver", filepath.Join(root, "charts", "events-apiserver"), "--namespace", namespace}
	if valuesFile != "" {
		args = append(args, "--values", valuesFile)
	}
	for _, v := range values {
		args = append(args, "--set", v)
	}
	return run(t, t.TempDir(), helm, args...)
}

// generatedHash is the suffix of a ConfigMap's name that changes with its
// content: kustomize's generators add one, and the chart one of its own.
var generatedHash = regexp.MustCompile(`^(events-apiserver-(?:etcd|event-policy))-[a-z0-9]{10}$`)

// yamlData are the ConfigMap keys that hold a YAML file: compared as the
// objects they hold, since the chart writes them out from values (sorted,
// without the overlay's comments).
var yamlData = map[string]bool{"event-policy.yaml": true}

// objects parses a multi-document YAML stream into objects keyed by
// apiVersion, kind, namespace and name.
func objects(t *testing.T, stream string) map[string]any {
	t.Helper()
	out := map[string]any{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(stream)))
	for {
		doc, err := reader.Read()
		if err != nil {
			break
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatalf("parsing %s: %v", doc, err)
		}
		if obj == nil {
			continue
		}
		unhash(obj)
		if data, ok := obj["data"].(map[string]any); ok && obj["kind"] == "ConfigMap" {
			for k, v := range data {
				if text, ok := v.(string); ok && yamlData[k] {
					var parsed any
					if err := yaml.Unmarshal([]byte(text), &parsed); err != nil {
						t.Fatalf("parsing the ConfigMap's %s: %v", k, err)
					}
					data[k] = parsed
				}
			}
		}
		meta, _ := obj["metadata"].(map[string]any)
		key := fmt.Sprintf("%s %s %s/%s", obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"])
		if _, dup := out[key]; dup {
			t.Fatalf("%s twice", key)
		}
		out[key] = obj
	}
	return out
}

// unhash drops kustomize's name hash wherever the ConfigMap's name is.
func unhash(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok {
				v[k] = generatedHash.ReplaceAllString(s, "$1")
				continue
			}
			unhash(e)
		}
	case []any:
		for i, e := range v {
			if s, ok := e.(string); ok {
				v[i] = generatedHash.ReplaceAllString(s, "$1")
				continue
			}
			unhash(e)
		}
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestChartRendersTheOverlays(t *testing.T) {
	root := repoRoot(t)
	// The kube-v1-preferred variant: overlays/default with the component,
	// as its comment in overlays/default says.
	preferred := t.TempDir()
	// A link to artifacts/ keeps the variant's paths relative, as an
	// overlay of the user's own would have them.
	if err := os.Symlink(filepath.Join(root, "artifacts"), filepath.Join(preferred, "artifacts")); err != nil {
		t.Fatal(err)
	}
	variant := filepath.Join(preferred, "variant")
	if err := os.Mkdir(variant, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(variant, "kustomization.yaml"), []byte(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../artifacts/overlays/default
components:
- ../artifacts/components/kube-v1-preferred
`), 0o644); err != nil {
		t.Fatal(err)
	}

	// An overlay with the monitoring components, as docs/monitoring.md
	// has an operator write it, and the chart values that turn them on.
	monitored := func(name, overlay string, components ...string) string {
		t.Helper()
		dir := filepath.Join(preferred, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../artifacts/overlays/" + overlay + "\ncomponents:\n"
		for _, c := range components {
			kustomization += "- ../artifacts/components/" + c + "\n"
		}
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	monitoring := []string{"serviceMonitor.enabled=true", "podMonitors.enabled=true", "prometheusRule.enabled=true", "grafanaDashboard.enabled=true"}

	configured := filepath.Join(root, "artifacts", "examples", "configured")
	cases := []struct {
		name       string
		overlay    string
		valuesFile string
		values     []string
	}{
		{name: "default", overlay: filepath.Join(root, "artifacts", "overlays", "default")},
		{name: "offload", overlay: filepath.Join(root, "artifacts", "overlays", "offload"), values: []string{"mode=offload", "history.enabled=false"}},
		{name: "takeover", overlay: filepath.Join(root, "artifacts", "overlays", "takeover"), values: []string{"mode=takeover", "history.enabled=false"}},
		{name: "external etcd", overlay: filepath.Join(root, "artifacts", "overlays", "external-etcd"), values: []string{"etcd.bundled=false", "history.enabled=false"}},
		{name: "victorialogs cluster", overlay: filepath.Join(root, "artifacts", "overlays", "victorialogs-cluster"), values: []string{"history.layout=cluster"}},
		{name: "kube v1 preferred", overlay: variant, values: []string{"kubeV1Preferred=true"}},
		// Every setting of docs/install.md#configuration, the kustomize way
		// and in the chart's values.
		{name: "configured", overlay: configured, valuesFile: filepath.Join(configured, "values.yaml")},
		{
			name:    "default monitored",
			overlay: monitored("default-monitored", "default", "monitoring", "monitoring-etcd", "monitoring-victorialogs"),
			values:  monitoring,
		},
		{
			name:    "victorialogs cluster monitored",
			overlay: monitored("cluster-monitored", "victorialogs-cluster", "monitoring", "monitoring-etcd", "monitoring-victorialogs"),
			values:  append([]string{"history.layout=cluster"}, monitoring...),
		},
		{
			// No archive: the chart leaves out what the overlay's operator
			// leaves out, the VictoriaLogs component.
			name:    "offload monitored",
			overlay: monitored("offload-monitored", "offload", "monitoring", "monitoring-etcd"),
			values:  append([]string{"mode=offload", "history.enabled=false"}, monitoring...),
		},
		{
			name:    "external etcd monitored",
			overlay: monitored("external-etcd-monitored", "external-etcd", "monitoring"),
			values:  append([]string{"etcd.bundled=false", "history.enabled=false"}, monitoring...),
		},
	}
	k := kubectl(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			built, err := run(t, root, k, "kustomize", tc.overlay)
			if err != nil {
				t.Fatal(err)
			}
			rendered, err := helmTemplate(t, tc.valuesFile, tc.values...)
			if err != nil {
				t.Fatal(err)
			}
			want, got := objects(t, built), objects(t, rendered)
			// kubectl apply -k creates the namespace; helm installs into
			// the release namespace, which it does not own.
			for key, obj := range want {
				if u := obj.(map[string]any); u["kind"] == "Namespace" && u["metadata"].(map[string]any)["name"] == overlayNamespace {
					delete(want, key)
				}
			}
			if diff := cmp.Diff(keys(want), keys(got)); diff != "" {
				t.Errorf("objects (-kustomize +helm):\n%s", diff)
			}
			for key, obj := range want {
				if other, ok := got[key]; ok {
					if diff := cmp.Diff(obj, other); diff != "" {
						t.Errorf("%s (-kustomize +helm):\n%s", key, diff)
					}
				}
			}
			expectNetworkPolicyPortsExist(t, got)
		})
	}
}

// expectNetworkPolicyPortsExist: every port a NetworkPolicy admits by name
// is the name of a container port of a pod it selects. A name no selected
// pod has matches nothing, so the policy would shut out what it means to
// let in, on a CNI that enforces it.
func expectNetworkPolicyPortsExist(t *testing.T, objs map[string]any) {
	t.Helper()
	type podTemplate struct {
		name   string
		labels labels.Set
		ports  sets.Set[string]
	}
	var pods []podTemplate
	var policies []networkingv1.NetworkPolicy
	for key, obj := range objs {
		u := obj.(map[string]any)
		switch u["kind"] {
		case "Deployment", "StatefulSet":
			var workload struct {
				Spec struct {
					Template corev1.PodTemplateSpec `json:"template"`
				} `json:"spec"`
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &workload); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			pod := podTemplate{name: key, labels: workload.Spec.Template.Labels, ports: sets.New[string]()}
			for _, c := range workload.Spec.Template.Spec.Containers {
				for _, p := range c.Ports {
					pod.ports.Insert(p.Name)
				}
			}
			pods = append(pods, pod)
		case "NetworkPolicy":
			var policy networkingv1.NetworkPolicy
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &policy); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			policies = append(policies, policy)
		}
	}
	for _, policy := range policies {
		selector, err := metav1.LabelSelectorAsSelector(&policy.Spec.PodSelector)
		if err != nil {
			t.Fatalf("NetworkPolicy %s: %v", policy.Name, err)
		}
		var selected []podTemplate
		for _, pod := range pods {
			if selector.Matches(pod.labels) {
				selected = append(selected, pod)
			}
		}
		for _, rule := range policy.Spec.Ingress {
			for _, port := range rule.Ports {
				if port.Port == nil || port.Port.Type != intstr.String {
					continue
				}
				if !slices.ContainsFunc(selected, func(pod podTemplate) bool { return pod.ports.Has(port.Port.StrVal) }) {
					t.Errorf("NetworkPolicy %s admits port %q, which no pod it selects names", policy.Name, port.Port.StrVal)
				}
			}
		}
	}
}

// The combinations no overlay offers fail to render, saying why.
func TestChartRefuses(t *testing.T) {
	cases := []struct {
		name   string
		values []string
		want   string
	}{
		{"offload with an external etcd", []string{"mode=offload", "etcd.bundled=false"}, "mode offload needs etcd.bundled"},
		{"offload with cert-manager", []string{"mode=offload", "certificates.certManager=true"}, "certificates.certManager must be false"},
		{"takeover with cert-manager", []string{"mode=takeover", "certificates.certManager=true"}, "certificates.certManager must be false"},
		{"takeover with an external etcd", []string{"mode=takeover", "etcd.bundled=false"}, "mode takeover needs etcd.bundled"},
		{"an unknown mode", []string{"mode=proxy"}, `mode "proxy": want mirror, offload or takeover`},
		{"an unknown history layout", []string{"history.layout=replicated"}, `history.layout "replicated": want single or cluster`},
		{"a retention in days", []string{"history.retention=30d"}, `history.retention "30d": want whole hours`},
		{"a retention under a day", []string{"history.retention=12h"}, "history.retention 12h: want at least 24h"},
		{"an unknown etcd spread", []string{"etcd.whenUnsatisfiable=Never"}, `etcd.whenUnsatisfiable "Never": want DoNotSchedule or ScheduleAnyway`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helmTemplate(t, "", tc.values...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template --set %s: error %v, want one saying %q", strings.Join(tc.values, ","), err, tc.want)
			}
		})
	}
}
