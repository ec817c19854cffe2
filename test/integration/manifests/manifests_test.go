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

// Package manifests checks the kustomize install in artifacts/: every overlay
// builds with the real kubectl, what it builds has the shape the install
// depends on, a real kube-apiserver (envtest) accepts all of it in a server
// dry run, and the RBAC it grants is what the server and its users need.
//
// Run with the envtest assets of hack/envtest-assets.sh:
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test ./test/integration/manifests/
package manifests

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-events/events-apiserver/cmd/events-apiserver/app"
	"github.com/kube-events/events-apiserver/pkg/embedded/pki"
	"github.com/kube-events/events-apiserver/test/harness"
)

const (
	namespace      = "events-apiserver"
	serviceAccount = "system:serviceaccount:events-apiserver:events-apiserver"
	servingSecret  = "events-apiserver-serving-cert"
	servingDNSName = "events-apiserver.events-apiserver.svc"
	apiServiceName = "v1beta1.events.k8s.io"
	// summariesAPIServiceName registers the event summaries' group.
	summariesAPIServiceName = "v1alpha1.summaries.kube-events.io"
	// kubeV1VersionPriority is kube-apiserver's own versionPriority for
	// v1.events.k8s.io (pkg/controlplane/apiserver/aggregator.go).
	kubeV1VersionPriority = 15
)

// cluster is an envtest kube-apiserver and a kubectl logged in as an admin.
type cluster struct {
	env        *envtest.Environment
	kubectl    string
	kubeconfig string
	root       string
}

var shared *cluster

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		if err := shared.env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
		}
		_ = os.RemoveAll(filepath.Dir(shared.kubeconfig))
	}
	os.Exit(code)
}

// startCluster starts the shared envtest control plane on first use, with
// stand-ins for cert-manager's CRDs, and creates the events-apiserver
// Namespace for real (a dry run cannot create what later objects live in).
func startCluster(t *testing.T) *cluster {
	t.Helper()
	if shared != nil {
		return shared
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal(`KUBEBUILDER_ASSETS is not set: this test needs a real kube-apiserver, etcd and kubectl. ` +
			`Run it as: KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test ./test/integration/manifests/`)
	}
	kubectl := filepath.Join(assets, "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("KUBEBUILDER_ASSETS=%s has no kubectl (hack/envtest-assets.sh builds one): %v", assets, err)
	}
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join("testdata", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	if _, err := env.Start(); err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	c := &cluster{env: env, kubectl: kubectl, root: root}
	shared = c
	admin, err := env.AddUser(envtest.User{Name: "manifests-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatalf("adding admin user: %v", err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		t.Fatalf("admin kubeconfig: %v", err)
	}
	dir, err := os.MkdirTemp("", "manifests-kubeconfig-")
	if err != nil {
		t.Fatal(err)
	}
	c.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(c.kubeconfig, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}

	ns := c.render(t, filepath.Join(root, "artifacts", "overlays", "default")).find("Namespace", "", namespace)
	if ns == nil {
		t.Fatal("artifacts/overlays/default has no Namespace " + namespace)
	}
	c.applyForReal(t, []*unstructured.Unstructured{ns})
	return c
}

// run runs kubectl against the cluster, feeding it stdin.
func (c *cluster) run(stdin io.Reader, args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(c.kubectl, append([]string{"--kubeconfig=" + c.kubeconfig}, args...)...)
	cmd.Dir = c.root
	cmd.Stdin = stdin
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// render runs `kubectl kustomize dir` and decodes its objects.
func (c *cluster) render(t *testing.T, dir string) objects {
	t.Helper()
	stdout, stderr, err := c.run(nil, "kustomize", dir)
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr)
	}
	objs, err := decode(stdout)
	if err != nil {
		t.Fatalf("decoding kubectl kustomize %s: %v", dir, err)
	}
	return objs
}

// applyForReal applies objs (not a dry run).
func (c *cluster) applyForReal(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	var in bytes.Buffer
	for _, o := range objs {
		data, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		in.Write(data)
		in.WriteString("\n")
	}
	if _, stderr, err := c.run(&in, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, stderr)
	}
}

// objects is what an overlay builds, in kubectl's order.
type objects []*unstructured.Unstructured

func decode(manifests string) (objects, error) {
	var objs objects
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
			continue
		}
		// Unstructured's own JSON decoding keeps integers as int64.
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(raw); err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
}

// find returns the object of that kind (and API group) named name, or nil.
func (objs objects) find(kind, group, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GroupVersionKind().Group == group && o.GetName() == name {
			return o
		}
	}
	return nil
}

// ofKind returns every object of that kind and API group.
func (objs objects) ofKind(kind, group string) objects {
	var out objects
	for _, o := range objs {
		if o.GetKind() == kind && o.GroupVersionKind().Group == group {
			out = append(out, o)
		}
	}
	return out
}

// printedName is how kubectl's name printer refers to an object:
// <kind>[.<group>]/<name>, lower case.
func printedName(o *unstructured.Unstructured) string {
	return strings.ToLower(o.GroupVersionKind().GroupKind().String()) + "/" + o.GetName()
}

func typed[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
		t.Fatalf("converting %s: %v", printedName(o), err)
	}
	return out
}

// overlayCase is one installable kustomization and what must hold of it.
type overlayCase struct {
	name string
	// dir returns the kustomization directory; it may generate it.
	dir   func(t *testing.T, root string) string
	check func(t *testing.T, objs objects, dir string)
}

func TestOverlaysBuildAndPassServerDryRun(t *testing.T) {
	c := startCluster(t)
	cases := []overlayCase{
		{
			name: "default: bundled etcd, self-managed certificates",
			dir:  artifactsDir("overlays", "default"),
			check: func(t *testing.T, objs objects, _ string) {
				expectBundledEtcd(t, objs, "events-etcd-client-ca")
				expectSelfManaged(t, objs, "bundled", true)
				expectVersionPriority(t, objs, 20)
				expectArchiveSingleNode(t, objs)
			},
		},
		{
			name: "cert-manager: overlays/default with every certificate from cert-manager",
			dir:  artifactsDir("overlays", "cert-manager"),
			check: func(t *testing.T, objs objects, _ string) {
				expectBundledEtcd(t, objs, "events-etcd-ca")
				expectBundledEtcdCertManager(t, objs)
				expectEtcdClientCert(t, objs)
				expectCertManager(t, objs)
				expectVersionPriority(t, objs, 20)
				expectArchiveSingleNode(t, objs)
				expectArchiveCertManager(t, objs, archiveClusterNames)
			},
		},
		{
			name: "victorialogs-cluster: the archive on a VictoriaLogs cluster",
			dir:  artifactsDir("overlays", "victorialogs-cluster"),
			check: func(t *testing.T, objs objects, _ string) {
				expectBundledEtcd(t, objs, "events-etcd-client-ca")
				expectSelfManaged(t, objs, "bundled", true)
				expectArchiveCluster(t, objs, 2)
				if objs.find("StatefulSet", "apps", "events-victorialogs") != nil {
					t.Error("the cluster overlay keeps the single node")
				}
			},
		},
		{
			name: "offload: kube-apiserver's events in the bundled etcd, with hack/gen-offload-etcd-cert.sh",
			dir:  generatedOffloadCert("offload"),
			check: func(t *testing.T, objs objects, dir string) {
				expectBundledEtcd(t, objs, "events-etcd-client-ca")
				expectSelfManaged(t, objs, "offload", false)
				expectOffload(t, objs, dir)
				expectVersionPriority(t, objs, 20)
			},
		},
		{
			name: "takeover: offload, and events.k8s.io/v1 served by the server",
			// Applied, as docs/takeover.md says, once kube-apiserver no
			// longer serves events.k8s.io/v1: started so, it deletes its
			// own APIService v1.events.k8s.io.
			dir: func(t *testing.T, root string) string {
				if stdout, stderr, err := c.run(nil, "delete", "apiservice", "v1.events.k8s.io"); err != nil {
					t.Fatalf("kubectl delete apiservice v1.events.k8s.io: %v\n%s%s", err, stdout, stderr)
				}
				return generatedOffloadCert("takeover")(t, root)
			},
			check: func(t *testing.T, objs objects, dir string) {
				expectBundledEtcd(t, objs, "events-etcd-client-ca")
				expectSelfManaged(t, objs, "offload", false)
				expectOffload(t, objs, dir)
				expectVersionPriority(t, objs, 20)
				expectTakeover(t, objs)
			},
		},
		{
			name: "external-etcd: etcd over mutual TLS, self-managed serving certificate",
			dir:  artifactsDir("overlays", "external-etcd"),
			check: func(t *testing.T, objs objects, _ string) {
				expectExternalEtcd(t, objs)
				expectSelfManaged(t, objs, "", false)
				expectVersionPriority(t, objs, 20)
			},
		},
		{
			name: "default with components/kube-v1-preferred",
			dir: func(t *testing.T, root string) string {
				return kustomization(t, root, "resources:\n- %s\ncomponents:\n- %s\n",
					filepath.Join(root, "artifacts", "overlays", "default"),
					filepath.Join(root, "artifacts", "components", "kube-v1-preferred"))
			},
			check: func(t *testing.T, objs objects, _ string) {
				expectBundledEtcd(t, objs, "events-etcd-client-ca")
				expectVersionPriority(t, objs, 10)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir(t, c.root)
			objs := c.render(t, dir)
			expectCommonShape(t, objs)
			tc.check(t, objs, dir)
			expectServerDryRunAccepts(t, c, dir, objs)
		})
	}
}

func artifactsDir(elem ...string) func(*testing.T, string) string {
	return func(_ *testing.T, root string) string {
		return filepath.Join(append([]string{root, "artifacts"}, elem...)...)
	}
}

// kustomization writes a kustomization.yaml (format's %s are absolute paths,
// made relative to the new directory) and returns its directory.
func kustomization(t *testing.T, root, format string, paths ...string) string {
	t.Helper()
	dir := t.TempDir()
	args := make([]any, len(paths))
	for i, p := range paths {
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			t.Fatal(err)
		}
		args[i] = rel
	}
	content := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + fmt.Sprintf(format, args...)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// generatedOffloadCert makes a stand-in of the cluster's etcd CA and runs
// hack/gen-offload-etcd-cert.sh with it into a temporary directory on the
// named overlay; the CA's files stay outside that directory.
func generatedOffloadCert(overlay string) func(*testing.T, string) string {
	return func(t *testing.T, root string) string {
		t.Helper()
		caDir, dir := t.TempDir(), t.TempDir()
		ca, err := pki.EnsureCA(caDir, "ca", "kube-etcd-ca", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(root, "hack", "gen-offload-etcd-cert.sh"), dir, filepath.Join(root, "artifacts", "overlays", overlay))
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "ETCD_CA_CERT="+ca.CertFile, "ETCD_CA_KEY="+ca.KeyFile)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("hack/gen-offload-etcd-cert.sh: %v\n%s", err, out)
		}
		return dir
	}
}

// expectServerDryRunAccepts runs `kubectl apply -k dir --dry-run=server` and
// requires every built object to be reported as created (the Namespace,
// which exists for real, as unchanged or configured), nothing else, and no
// warnings (among them PodSecurity's "restricted" checks of the workloads).
func expectServerDryRunAccepts(t *testing.T, c *cluster, dir string, objs objects) {
	t.Helper()
	stdout, stderr, err := c.run(nil, "apply", "-k", dir, "--dry-run=server")
	if err != nil {
		t.Fatalf("kubectl apply -k %s --dry-run=server: %v\nstdout:\n%s\nstderr:\n%s", dir, err, stdout, stderr)
	}
	if strings.TrimSpace(stderr) != "" {
		t.Errorf("kubectl apply --dry-run=server warned:\n%s", stderr)
	}
	got := strings.Split(strings.TrimSpace(stdout), "\n")
	var want []*regexp.Regexp
	for _, o := range objs {
		verbs := "created"
		if o.GetKind() == "Namespace" {
			verbs = "(unchanged|configured)"
		}
		want = append(want, regexp.MustCompile("^"+regexp.QuoteMeta(printedName(o))+" "+verbs+` \(server dry run\)$`))
	}
	if len(got) != len(want) {
		t.Errorf("kubectl reported %d objects, the overlay builds %d:\n%s", len(got), len(want), stdout)
	}
	for _, re := range want {
		if !slices.ContainsFunc(got, re.MatchString) {
			t.Errorf("no line matching %q in kubectl's output:\n%s", re, stdout)
		}
	}
}

// expectCommonShape checks what every install needs, whatever its etcd and
// certificate source.
func expectCommonShape(t *testing.T, objs objects) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "RoleBinding" {
			// The authentication reader's, in kube-system; the
			// certificates', on the Secrets of the server's namespace.
			if want := map[bool]string{true: namespace, false: "kube-system"}[strings.HasSuffix(o.GetName(), "certificates")]; o.GetNamespace() != want {
				t.Errorf("%s is in namespace %q, want %s", printedName(o), o.GetNamespace(), want)
			}
			continue
		}
		if ns := o.GetNamespace(); ns != "" && ns != namespace {
			t.Errorf("%s is in namespace %q, want %q", printedName(o), ns, namespace)
		}
	}

	depObj := objs.find("Deployment", "apps", "events-apiserver")
	if depObj == nil {
		t.Fatal("no Deployment events-apiserver")
	}
	dep := typed[appsv1.Deployment](t, depObj)
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Errorf("Deployment replicas = %v, want 2", dep.Spec.Replicas)
	}
	if len(dep.Spec.Template.Spec.TopologySpreadConstraints) == 0 {
		t.Error("Deployment has no topology spread constraints")
	}
	if len(dep.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("Deployment has %d containers, want 1", len(dep.Spec.Template.Spec.Containers))
	}
	ctr := dep.Spec.Template.Spec.Containers[0]
	for _, arg := range []string{"--secure-port=8443", "--event-ttl=1h", "--etcd-servers=$(ETCD_SERVERS)"} {
		if !slices.Contains(ctr.Args, arg) {
			t.Errorf("server args %q lack %q", ctr.Args, arg)
		}
	}
	for probeName, probe := range map[string]*corev1.Probe{"liveness": ctr.LivenessProbe, "readiness": ctr.ReadinessProbe} {
		wantPath := map[string]string{"liveness": "/livez", "readiness": "/readyz"}[probeName]
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != wantPath ||
			probe.HTTPGet.Scheme != corev1.URISchemeHTTPS || probe.HTTPGet.Port.String() != "https" {
			t.Errorf("%s probe = %+v, want HTTPS GET %s on port https", probeName, probe, wantPath)
		}
	}
	if len(ctr.Ports) != 1 || ctr.Ports[0].Name != "https" || ctr.Ports[0].ContainerPort != 8443 {
		t.Errorf("container ports = %+v, want https 8443", ctr.Ports)
	}
	if ctr.Resources.Requests.Cpu().IsZero() || ctr.Resources.Requests.Memory().IsZero() || ctr.Resources.Limits.Memory().IsZero() {
		t.Errorf("container resources %+v lack requests or a memory limit", ctr.Resources)
	}
	expectHardened(t, "events-apiserver", ctr)
	// Every argument is a flag of the server (a typo would crash-loop).
	fs := pflag.NewFlagSet("events-apiserver", pflag.ContinueOnError)
	app.NewOptions().AddFlags(fs)
	if err := fs.Parse(ctr.Args); err != nil {
		t.Errorf("the server does not take its args %q: %v", ctr.Args, err)
	}
	// No Secret of the install holds a CA's key: the CAs of its own are
	// made in the cluster by the server or cert-manager, and the cluster's
	// etcd CA stays where it is.
	for _, o := range objs.ofKind("Secret", "") {
		if secret := typed[corev1.Secret](t, o); len(secret.Data["tls.key"]) > 0 {
			for _, c := range mustParseCerts(t, secret.Data["tls.crt"]) {
				if c.IsCA {
					t.Errorf("Secret %s holds the key of the CA %s", secret.Name, c.Subject)
				}
			}
		}
	}

	// --etcd-servers comes from the generated ConfigMap the env var names.
	cmName := ""
	for _, e := range ctr.Env {
		if e.Name == "ETCD_SERVERS" && e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
			cmName = e.ValueFrom.ConfigMapKeyRef.Name
		}
	}
	if cmName == "" || objs.find("ConfigMap", "", cmName) == nil {
		t.Errorf("ETCD_SERVERS refers to ConfigMap %q, which the overlay does not build", cmName)
	}

	svc := objs.find("Service", "", "events-apiserver")
	if svc == nil {
		t.Fatal("no Service events-apiserver")
	}
	s := typed[corev1.Service](t, svc)
	if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 443 || s.Spec.Ports[0].TargetPort.String() != "https" {
		t.Errorf("Service ports = %+v, want 443 -> https", s.Spec.Ports)
	}
	for k, v := range s.Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("Service selects %s=%s, which the Deployment's pods lack", k, v)
		}
	}

	pdb := objs.find("PodDisruptionBudget", "policy", "events-apiserver")
	if pdb == nil {
		t.Fatal("no PodDisruptionBudget events-apiserver")
	}
	if v, _, _ := unstructured.NestedInt64(pdb.Object, "spec", "minAvailable"); v != 1 {
		t.Errorf("PodDisruptionBudget minAvailable = %d, want 1", v)
	}

	for name, spec := range map[string]map[string]any{
		apiServiceName:          {"spec.group": "events.k8s.io", "spec.version": "v1beta1", "spec.groupPriorityMinimum": int64(17750)},
		summariesAPIServiceName: {"spec.group": "summaries.kube-events.io", "spec.version": "v1alpha1", "spec.groupPriorityMinimum": int64(100)},
	} {
		api := objs.find("APIService", "apiregistration.k8s.io", name)
		if api == nil {
			t.Fatal("no APIService " + name)
		}
		spec["spec.service.namespace"], spec["spec.service.name"], spec["spec.service.port"] = namespace, "events-apiserver", int64(443)
		for field, want := range spec {
			got, _, _ := unstructured.NestedFieldNoCopy(api.Object, strings.Split(field, ".")...)
			if got != want {
				t.Errorf("APIService %s %s = %v, want %v", name, field, got, want)
			}
		}
	}

	for _, name := range []string{"events-apiserver:view", "events-apiserver:edit"} {
		if objs.find("ClusterRole", "rbac.authorization.k8s.io", name) == nil {
			t.Errorf("no ClusterRole %s", name)
		}
	}
	for role, labels := range map[string][]string{
		"events-apiserver:view": {"rbac.authorization.k8s.io/aggregate-to-view"},
		"events-apiserver:edit": {"rbac.authorization.k8s.io/aggregate-to-edit", "rbac.authorization.k8s.io/aggregate-to-admin"},
	} {
		o := objs.find("ClusterRole", "rbac.authorization.k8s.io", role)
		if o == nil {
			continue
		}
		for _, l := range labels {
			if o.GetLabels()[l] != "true" {
				t.Errorf("ClusterRole %s lacks label %s=true", role, l)
			}
		}
	}
}

// expectHardened requires the "restricted" container settings the brief and
// the namespace's Pod Security label ask for.
func expectHardened(t *testing.T, name string, ctr corev1.Container) {
	t.Helper()
	sc := ctr.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || sc.SeccompProfile == nil ||
		sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("container %s securityContext = %+v, want runAsNonRoot, readOnlyRootFilesystem, no privilege escalation, drop ALL, seccomp RuntimeDefault", name, sc)
	}
}

// mountSecret returns the Secret mounted at path in ctr, or "".
func mountSecret(pod corev1.PodSpec, ctr corev1.Container, path string) string {
	for _, m := range ctr.VolumeMounts {
		if m.MountPath != path {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				return v.Secret.SecretName
			}
		}
	}
	return ""
}

// etcdServers is the value the Deployment's --etcd-servers expands to.
func etcdServers(t *testing.T, objs objects) string {
	t.Helper()
	dep := typed[appsv1.Deployment](t, objs.find("Deployment", "apps", "events-apiserver"))
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "ETCD_SERVERS" && e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
			if cm := objs.find("ConfigMap", "", e.ValueFrom.ConfigMapKeyRef.Name); cm != nil {
				v, _, _ := unstructured.NestedString(cm.Object, "data", e.ValueFrom.ConfigMapKeyRef.Key)
				return v
			}
		}
	}
	return ""
}

// etcdMembers are the bundled etcd's members, by their names on the
// StatefulSet's headless Service.
var etcdMembers = []string{
	"events-etcd-0.events-etcd-peer.events-apiserver.svc",
	"events-etcd-1.events-etcd-peer.events-apiserver.svc",
	"events-etcd-2.events-etcd-peer.events-apiserver.svc",
}

// expectBundledEtcd checks the three-member etcd with TLS for clients and
// peers, its disruption budget and Services, and the server's flags for it.
// expectBundledEtcd checks the bundled etcd; clientCA is the Secret of the
// CAs whose clients the members admit.
func expectBundledEtcd(t *testing.T, objs objects, clientCA string) {
	t.Helper()
	stsObj := objs.find("StatefulSet", "apps", "events-etcd")
	if stsObj == nil {
		t.Fatal("no bundled etcd StatefulSet events-etcd")
	}
	sts := typed[appsv1.StatefulSet](t, stsObj)
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 || len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Errorf("etcd StatefulSet: replicas %v, %d volume claim templates; want 3 and 1", sts.Spec.Replicas, len(sts.Spec.VolumeClaimTemplates))
	}
	if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("etcd StatefulSet podManagementPolicy = %q, want Parallel: no member is ready before a quorum formed", sts.Spec.PodManagementPolicy)
	}
	ctr := sts.Spec.Template.Spec.Containers[0]
	expectHardened(t, "etcd", ctr)
	if ctr.LivenessProbe == nil || ctr.ReadinessProbe == nil {
		t.Error("etcd container lacks liveness or readiness probe")
	}
	var initialCluster []string
	for i, member := range etcdMembers {
		initialCluster = append(initialCluster, fmt.Sprintf("events-etcd-%d=https://%s:2380", i, member))
	}
	const tlsDir, peerDir, clientCADir = "/var/run/events-etcd/tls", "/var/run/events-etcd/peer", "/var/run/events-etcd/client-ca"
	for _, arg := range []string{
		"--listen-client-urls=https://0.0.0.0:2379", "--listen-peer-urls=https://0.0.0.0:2380",
		"--initial-cluster=" + strings.Join(initialCluster, ","),
		"--client-cert-auth", "--trusted-ca-file=" + clientCADir + "/ca.crt", "--cert-file=" + tlsDir + "/tls.crt", "--key-file=" + tlsDir + "/tls.key",
		"--client-cert-file=" + peerDir + "/tls.crt", "--client-key-file=" + peerDir + "/tls.key",
		"--peer-client-cert-auth", "--peer-trusted-ca-file=" + peerDir + "/ca.crt", "--peer-cert-file=" + peerDir + "/tls.crt", "--peer-key-file=" + peerDir + "/tls.key",
	} {
		if !slices.Contains(ctr.Command, arg) {
			t.Errorf("etcd command %q lacks %q", ctr.Command, arg)
		}
	}
	for dir, want := range map[string]string{tlsDir: "events-etcd-member", peerDir: "events-etcd-peer", clientCADir: clientCA} {
		if got := mountSecret(sts.Spec.Template.Spec, ctr, dir); got != want {
			t.Errorf("etcd's %s mounted from Secret %q, want %s", dir, got, want)
		}
	}

	headlessObj := objs.find("Service", "", sts.Spec.ServiceName)
	if headlessObj == nil {
		t.Fatalf("no governing Service %q for the etcd StatefulSet", sts.Spec.ServiceName)
	}
	headless := typed[corev1.Service](t, headlessObj)
	if headless.Spec.ClusterIP != "None" || !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("etcd peer Service clusterIP = %q, publishNotReadyAddresses = %v; want None (headless) and true", headless.Spec.ClusterIP, headless.Spec.PublishNotReadyAddresses)
	}
	if objs.find("Service", "", "events-etcd") == nil {
		t.Error("no etcd client Service events-etcd")
	}
	pdb := objs.find("PodDisruptionBudget", "policy", "events-etcd")
	if pdb == nil {
		t.Fatal("no PodDisruptionBudget events-etcd")
	}
	if v, _, _ := unstructured.NestedInt64(pdb.Object, "spec", "maxUnavailable"); v != 1 {
		t.Errorf("etcd PodDisruptionBudget maxUnavailable = %d, want 1", v)
	}
	if objs.find("NetworkPolicy", "networking.k8s.io", "events-etcd") == nil {
		t.Error("the bundled etcd has no NetworkPolicy")
	}

	var want []string
	for _, member := range etcdMembers {
		want = append(want, "https://"+member+":2379")
	}
	if got := etcdServers(t, objs); got != strings.Join(want, ",") {
		t.Errorf("--etcd-servers = %q, want every member %q", got, strings.Join(want, ","))
	}
}

// expectEtcdClientCert checks the server's etcd client certificate flags and
// the Secret they are mounted from.
func expectEtcdClientCert(t *testing.T, objs objects) {
	t.Helper()
	dep := typed[appsv1.Deployment](t, objs.find("Deployment", "apps", "events-apiserver"))
	ctr := dep.Spec.Template.Spec.Containers[0]
	const dir = "/var/run/events-apiserver/etcd-client"
	for _, arg := range []string{"--etcd-cafile=" + dir + "/ca.crt", "--etcd-certfile=" + dir + "/tls.crt", "--etcd-keyfile=" + dir + "/tls.key"} {
		if !slices.Contains(ctr.Args, arg) {
			t.Errorf("server args %q lack %q", ctr.Args, arg)
		}
	}
	if got := mountSecret(dep.Spec.Template.Spec, ctr, dir); got != "events-apiserver-etcd-client" {
		t.Errorf("etcd client certificates mounted from Secret %q, want events-apiserver-etcd-client", got)
	}
}

// expectBundledEtcdCertManager checks that cert-manager issues the
// certificates the bundled etcd and the server mount, from the Issuer
// events-etcd-ca backed by the Secret events-etcd-ca, each with only the
// usages it needs.
func expectBundledEtcdCertManager(t *testing.T, objs objects) {
	t.Helper()
	const caSecret = "events-etcd-ca" //nolint:gosec // G101: a Secret's name
	for secret, usages := range map[string][]string{
		"events-etcd-member":           {"server auth", "digital signature", "key encipherment"},
		"events-etcd-peer":             {"server auth", "client auth", "digital signature", "key encipherment"},
		"events-apiserver-etcd-client": {"client auth", "digital signature", "key encipherment"},
	} {
		var cert *unstructured.Unstructured
		for _, c := range objs.ofKind("Certificate", "cert-manager.io") {
			if s, _, _ := unstructured.NestedString(c.Object, "spec", "secretName"); s == secret {
				cert = c
			}
		}
		if cert == nil {
			t.Errorf("no Certificate writes Secret %s", secret)
			continue
		}
		if issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name"); issuer != "events-etcd-ca" {
			t.Errorf("Certificate %s is issued by %q, want events-etcd-ca", cert.GetName(), issuer)
		}
		if got, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "usages"); !slices.Equal(got, usages) {
			t.Errorf("Certificate %s usages %q, want %q", cert.GetName(), got, usages)
		}
	}
	issuer := objs.find("Issuer", "cert-manager.io", "events-etcd-ca")
	if issuer == nil {
		t.Fatal("no Issuer events-etcd-ca")
	}
	if got, _, _ := unstructured.NestedString(issuer.Object, "spec", "ca", "secretName"); got != caSecret {
		t.Errorf("Issuer events-etcd-ca signs with Secret %q, want %q", got, caSecret)
	}
	member := objs.find("Certificate", "cert-manager.io", "events-etcd-member")
	dnsNames, _, _ := unstructured.NestedStringSlice(member.Object, "spec", "dnsNames")
	for _, name := range etcdMembers {
		if !slices.ContainsFunc(dnsNames, func(pattern string) bool { return matchesDNSName(pattern, name) }) {
			t.Errorf("Certificate events-etcd-member dnsNames %q do not cover the member %s", dnsNames, name)
		}
	}
}

// matchesDNSName reports whether a certificate's DNS name (possibly a
// wildcard of one label) covers name.
func matchesDNSName(pattern, name string) bool {
	if rest, ok := strings.CutPrefix(pattern, "*."); ok {
		_, domain, found := strings.Cut(name, ".")
		return found && domain == rest
	}
	return pattern == name
}

// expectOffload checks offload mode: the members serve kube-apiserver the
// certificate hack/gen-offload-etcd-cert.sh issued from the cluster's etcd
// CA (server auth only, for the name kube-apiserver dials), the Secrets hold
// no key of that CA, kube-apiserver reaches the members through a node
// port, and the server never mirrors.
func expectOffload(t *testing.T, objs objects, dir string) {
	t.Helper()
	for _, o := range objs {
		if o.GroupVersionKind().Group == "cert-manager.io" {
			t.Errorf("offload builds %s", printedName(o))
		}
	}
	kubeCA, err := os.ReadFile(filepath.Join(dir, "kube-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	memberObj := objs.find("Secret", "", "events-etcd-member")
	kubeCAObj := objs.find("Secret", "", "events-etcd-kube-ca")
	if memberObj == nil || kubeCAObj == nil {
		t.Fatal("no Secret events-etcd-member or events-etcd-kube-ca")
	}
	member, kubeCASecret := typed[corev1.Secret](t, memberObj), typed[corev1.Secret](t, kubeCAObj)
	if diff := cmp.Diff(map[string][]byte{"ca.crt": kubeCA}, kubeCASecret.Data); diff != "" {
		t.Errorf("Secret events-etcd-kube-ca holds more than the cluster etcd CA's certificate (-want +got):\n%s", diff)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(kubeCA)
	cert := mustParseCerts(t, member.Data["tls.crt"])[0]
	if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("the members' certificate has extended key usages %v, want server auth only", cert.ExtKeyUsage)
	}
	for _, name := range append([]string{"events-etcd.cluster.example"}, etcdMembers...) {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("the members' certificate does not verify for %s against the cluster's etcd CA: %v", name, err)
		}
	}
	svc := typed[corev1.Service](t, objs.find("Service", "", "events-etcd"))
	if svc.Spec.Type != corev1.ServiceTypeNodePort || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].NodePort != 32379 {
		t.Errorf("etcd client Service type %q ports %+v, want NodePort 32379", svc.Spec.Type, svc.Spec.Ports)
	}
	dep := typed[appsv1.Deployment](t, objs.find("Deployment", "apps", "events-apiserver"))
	args := dep.Spec.Template.Spec.Containers[0].Args
	for _, arg := range []string{"--events-shared-with-kube-apiserver", "--mirror=false"} {
		if !slices.Contains(args, arg) {
			t.Errorf("server args %q lack %q", args, arg)
		}
	}
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--etcd-prefix=") }) {
		t.Errorf("server args %q set --etcd-prefix; offload needs kube-apiserver's /registry", args)
	}
}

// expectTakeover checks takeover mode: our v1.events.k8s.io beside
// v1beta1, with kube-apiserver's priorities for v1, the same caBundle
// injection, and not the label by which kube-apiserver manages (and, when
// it does not serve v1, deletes) its own.
func expectTakeover(t *testing.T, objs objects) {
	t.Helper()
	v1 := objs.find("APIService", "apiregistration.k8s.io", "v1.events.k8s.io")
	if v1 == nil {
		t.Fatal("takeover builds no APIService v1.events.k8s.io")
	}
	v1beta1 := objs.find("APIService", "apiregistration.k8s.io", apiServiceName)
	service, _, _ := unstructured.NestedMap(v1.Object, "spec", "service")
	wantService, _, _ := unstructured.NestedMap(v1beta1.Object, "spec", "service")
	groupPriority, _, _ := unstructured.NestedInt64(v1.Object, "spec", "groupPriorityMinimum")
	versionPriority, _, _ := unstructured.NestedInt64(v1.Object, "spec", "versionPriority")
	if diff := cmp.Diff(
		[]any{wantService, int64(17750), int64(kubeV1VersionPriority), v1beta1.GetAnnotations()["cert-manager.io/inject-ca-from"]},
		[]any{service, groupPriority, versionPriority, v1.GetAnnotations()["cert-manager.io/inject-ca-from"]},
	); diff != "" {
		t.Errorf("APIService v1.events.k8s.io service, groupPriorityMinimum, versionPriority, inject-ca-from (-want +got):\n%s", diff)
	}
	dep := typed[appsv1.Deployment](t, objs.find("Deployment", "apps", "events-apiserver"))
	if arg := "--self-managed-certificates-apiservices=" + apiServiceName + "," + summariesAPIServiceName + ",v1.events.k8s.io"; !slices.Contains(dep.Spec.Template.Spec.Containers[0].Args, arg) {
		t.Errorf("server args lack %s: the server would not keep v1.events.k8s.io's caBundle", arg)
	}
	if value, ok := v1.GetLabels()["kube-aggregator.kubernetes.io/automanaged"]; ok {
		t.Errorf("APIService v1.events.k8s.io has label kube-aggregator.kubernetes.io/automanaged=%s: kube-apiserver would manage it", value)
	}
}

func expectExternalEtcd(t *testing.T, objs objects) {
	t.Helper()
	if sts := objs.ofKind("StatefulSet", "apps"); len(sts) != 0 {
		t.Errorf("external-etcd still builds StatefulSet %s", sts[0].GetName())
	}
	if objs.find("Service", "", "events-etcd") != nil {
		t.Error("external-etcd still builds the bundled etcd's Service")
	}
	if got := etcdServers(t, objs); !strings.HasPrefix(got, "https://") {
		t.Errorf("--etcd-servers = %q, want the external https endpoints", got)
	}
	expectEtcdClientCert(t, objs)
	dep := typed[appsv1.Deployment](t, objs.find("Deployment", "apps", "events-apiserver"))
	if args := dep.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--etcd-prefix=/events-apiserver") {
		t.Errorf("server args %q lack --etcd-prefix=/events-apiserver", args)
	}
}

func expectCertManager(t *testing.T, objs objects) {
	t.Helper()
	dep := typed[appsv1.Deployment](t, objs.find("Deployment", "apps", "events-apiserver"))
	ctr := dep.Spec.Template.Spec.Containers[0]
	for _, arg := range []string{"--tls-cert-file=/var/run/events-apiserver/serving-cert/tls.crt", "--tls-private-key-file=/var/run/events-apiserver/serving-cert/tls.key"} {
		if !slices.Contains(ctr.Args, arg) {
			t.Errorf("server args %q lack %q", ctr.Args, arg)
		}
	}
	if mountSecret(dep.Spec.Template.Spec, ctr, "/var/run/events-apiserver/serving-cert") != servingSecret {
		t.Errorf("serving certificate is not mounted from Secret %s", servingSecret)
	}
	expectParsedFlags(t, ctr.Args, func(o *app.Options) {
		if o.Certificates.Serving || o.Certificates.Etcd != "" || o.Certificates.Archive {
			t.Errorf("with cert-manager the server still makes certificates: %+v", o.Certificates)
		}
	})
	for _, role := range []string{"events-apiserver:certificates", "events-apiserver:etcd-certificates", "events-apiserver:archive-certificates"} {
		if objs.find("Role", "rbac.authorization.k8s.io", role) != nil {
			t.Errorf("with cert-manager the server may still write Secrets (Role %s)", role)
		}
	}
	if api := objs.find("APIService", "apiregistration.k8s.io", summariesAPIServiceName); api.GetAnnotations()["cert-manager.io/inject-ca-from"] !=
		objs.find("APIService", "apiregistration.k8s.io", apiServiceName).GetAnnotations()["cert-manager.io/inject-ca-from"] {
		t.Errorf("APIService %s has its CA injected from %q, not from the serving certificate", summariesAPIServiceName, api.GetAnnotations()["cert-manager.io/inject-ca-from"])
	}
	api := objs.find("APIService", "apiregistration.k8s.io", apiServiceName)
	from := api.GetAnnotations()["cert-manager.io/inject-ca-from"]
	ns, name, _ := strings.Cut(from, "/")
	cert := objs.find("Certificate", "cert-manager.io", name)
	if ns != namespace || cert == nil {
		t.Fatalf("APIService cert-manager.io/inject-ca-from = %q, not a Certificate the overlay builds", from)
	}
	secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	if secret != servingSecret {
		t.Errorf("Certificate %s writes Secret %q, the Deployment mounts %q", name, secret, servingSecret)
	}
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	if !slices.Contains(dnsNames, servingDNSName) {
		t.Errorf("Certificate %s dnsNames %q lack %s, the name the aggregator checks", name, dnsNames, servingDNSName)
	}
	// The issuer chain resolves inside the overlay.
	issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	iss := objs.find("Issuer", "cert-manager.io", issuer)
	if iss == nil {
		t.Fatalf("Certificate %s names Issuer %q, which the overlay does not build", name, issuer)
	}
	caSecret, _, _ := unstructured.NestedString(iss.Object, "spec", "ca", "secretName")
	var caCert *unstructured.Unstructured
	for _, c := range objs.ofKind("Certificate", "cert-manager.io") {
		if s, _, _ := unstructured.NestedString(c.Object, "spec", "secretName"); s == caSecret {
			caCert = c
		}
	}
	if caCert == nil {
		t.Fatalf("Issuer %s signs with Secret %q, which no Certificate writes", issuer, caSecret)
	}
	if isCA, _, _ := unstructured.NestedBool(caCert.Object, "spec", "isCA"); !isCA {
		t.Errorf("Certificate %s backs the CA issuer but is not isCA", caCert.GetName())
	}
}

// expectSelfManaged checks the self-managed certificates: the server makes
// the serving certificate (and, with etcd, the bundled etcd's in that mode;
// with archive, the archive's) in its pod's namespace, may write those
// Secrets and the APIServices' caBundle and nothing more, and nothing of
// cert-manager is left.
func expectSelfManaged(t *testing.T, objs objects, etcd string, archive bool) {
	t.Helper()
	dep := typed[appsv1.Deployment](t, objs.find("Deployment", "apps", "events-apiserver"))
	ctr := dep.Spec.Template.Spec.Containers[0]
	expectParsedFlags(t, ctr.Args, func(o *app.Options) {
		got := []any{o.Certificates.Serving, o.Certificates.Etcd, o.Certificates.Archive}
		if diff := cmp.Diff([]any{true, etcd, archive}, got); diff != "" {
			t.Errorf("self-managed serving, etcd and archive certificates (-want +got):\n%s", diff)
		}
		if o.Recommended.SecureServing.ServerCert.CertKey.CertFile != "" {
			t.Errorf("--tls-cert-file=%s beside the self-managed certificates", o.Recommended.SecureServing.ServerCert.CertKey.CertFile)
		}
	})
	if !slices.ContainsFunc(ctr.Env, func(e corev1.EnvVar) bool {
		return e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace"
	}) {
		t.Error("the server is not given its pod's namespace (POD_NAMESPACE), where it keeps its certificates")
	}
	for _, o := range objs {
		if o.GroupVersionKind().Group == "cert-manager.io" {
			t.Errorf("the self-managed install builds %s", printedName(o))
		}
	}
	for _, name := range []string{apiServiceName, summariesAPIServiceName} {
		if from := objs.find("APIService", "apiregistration.k8s.io", name).GetAnnotations()["cert-manager.io/inject-ca-from"]; from != "" {
			t.Errorf("APIService %s has its CA injected from %s", name, from)
		}
	}
	roles := map[string][]string{"events-apiserver:certificates": {"events-apiserver-ca", servingSecret}}
	switch etcd {
	case "bundled":
		roles["events-apiserver:etcd-certificates"] = []string{"events-etcd-ca", "events-etcd-member", "events-etcd-peer", "events-etcd-client-ca", "events-apiserver-etcd-client", "events-etcd-kube-ca"}
	case "offload":
		roles["events-apiserver:etcd-certificates"] = []string{"events-etcd-ca", "events-etcd-peer", "events-etcd-client-ca", "events-apiserver-etcd-client", "events-etcd-kube-ca"}
	}
	if archive {
		roles["events-apiserver:archive-certificates"] = []string{"events-victorialogs-ca", archiveTLSSecret, archiveAuthSecret}
	}
	for name, secrets := range roles {
		o := objs.find("Role", "rbac.authorization.k8s.io", name)
		if o == nil {
			t.Errorf("no Role %s", name)
			continue
		}
		want := []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: secrets, Verbs: []string{"get", "list", "watch", "update"}},
		}
		if diff := cmp.Diff(want, typed[rbacv1.Role](t, o).Rules); diff != "" {
			t.Errorf("Role %s rules (-want +got):\n%s", name, diff)
		}
	}
	if objs.find("ClusterRole", "rbac.authorization.k8s.io", "events-apiserver:certificates") == nil {
		t.Error("no ClusterRole events-apiserver:certificates (the APIServices' caBundle)")
	}
}

// expectParsedFlags parses the server's args as the server would and hands
// the options to check.
func expectParsedFlags(t *testing.T, args []string, check func(*app.Options)) {
	t.Helper()
	o := app.NewOptions()
	fs := pflag.NewFlagSet("events-apiserver", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the server does not take its args %q: %v", args, err)
	}
	check(o)
}

func mustParseCerts(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	var certs []*x509.Certificate
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		t.Fatal("no PEM certificate")
	}
	return certs
}

func expectVersionPriority(t *testing.T, objs objects, want int64) {
	t.Helper()
	api := objs.find("APIService", "apiregistration.k8s.io", apiServiceName)
	got, _, _ := unstructured.NestedInt64(api.Object, "spec", "versionPriority")
	if got != want {
		t.Errorf("APIService versionPriority = %d, want %d (v1beta1 preferred over kube-apiserver's v1: %v)", got, want, want > kubeV1VersionPriority)
	}
}

// TestRBACGrantsWhatTheServerAndItsUsersNeed applies the RBAC of the default
// overlay for real and asks kube-apiserver's authorizer (kubectl auth can-i,
// impersonating) what the server's ServiceAccount and bound users may do.
func TestRBACGrantsWhatTheServerAndItsUsersNeed(t *testing.T) {
	c := startCluster(t)
	objs := c.render(t, filepath.Join(c.root, "artifacts", "overlays", "default"))
	var rbac []*unstructured.Unstructured
	for _, o := range objs {
		if o.GroupVersionKind().Group == "rbac.authorization.k8s.io" || o.GetKind() == "ServiceAccount" {
			rbac = append(rbac, o)
		}
	}
	if len(rbac) == 0 {
		t.Fatal("the default overlay builds no RBAC")
	}
	c.applyForReal(t, rbac)
	// Users bound to our own roles directly: the built-in view/edit/admin
	// aggregation is done by kube-controller-manager, which envtest lacks.
	for _, b := range []struct{ user, role string }{{"events-viewer", "events-apiserver:view"}, {"events-editor", "events-apiserver:edit"}} {
		if _, stderr, err := c.run(nil, "create", "clusterrolebinding", b.user, "--clusterrole="+b.role, "--user="+b.user); err != nil {
			t.Fatalf("binding %s: %v\n%s", b.user, err, stderr)
		}
	}

	cases := []struct {
		as      string
		verb    string
		what    string // resource[.group][/name], as kubectl auth can-i takes it
		sub     string
		ns      string // "" means all namespaces
		allowed bool
	}{
		// Delegated authentication and authorization.
		{serviceAccount, "create", "tokenreviews.authentication.k8s.io", "", "", true},
		{serviceAccount, "create", "subjectaccessreviews.authorization.k8s.io", "", "", true},
		{serviceAccount, "get", "configmaps/extension-apiserver-authentication", "", "kube-system", true},
		{serviceAccount, "watch", "configmaps/extension-apiserver-authentication", "", "kube-system", true},
		{serviceAccount, "get", "configmaps", "", "default", false},
		// Admission plugins of k8s.io/apiserver's RecommendedOptions.
		{serviceAccount, "get", "namespaces", "", "", true},
		{serviceAccount, "watch", "namespaces", "", "", true},
		{serviceAccount, "list", "mutatingwebhookconfigurations.admissionregistration.k8s.io", "", "", true},
		{serviceAccount, "watch", "validatingwebhookconfigurations.admissionregistration.k8s.io", "", "", true},
		{serviceAccount, "list", "validatingadmissionpolicies.admissionregistration.k8s.io", "", "", true},
		{serviceAccount, "watch", "validatingadmissionpolicybindings.admissionregistration.k8s.io", "", "", true},
		{serviceAccount, "list", "mutatingadmissionpolicies.admissionregistration.k8s.io", "", "", true},
		{serviceAccount, "watch", "mutatingadmissionpolicybindings.admissionregistration.k8s.io", "", "", true},
		{serviceAccount, "create", "validatingwebhookconfigurations.admissionregistration.k8s.io", "", "", false},
		// API Priority and Fairness.
		{serviceAccount, "list", "flowschemas.flowcontrol.apiserver.k8s.io", "", "", true},
		{serviceAccount, "watch", "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io", "", "", true},
		{serviceAccount, "patch", "flowschemas.flowcontrol.apiserver.k8s.io", "status", "", true},
		{serviceAccount, "patch", "flowschemas.flowcontrol.apiserver.k8s.io", "", "", false},
		// The mirror reads every namespace's core events and writes none.
		{serviceAccount, "list", "events", "", "", true},
		{serviceAccount, "watch", "events", "", "", true},
		{serviceAccount, "get", "events", "", "kube-system", true},
		{serviceAccount, "create", "events", "", "default", false},
		{serviceAccount, "list", "secrets", "", "", false},
		// Users of our events.
		{"events-viewer", "list", "events.events.k8s.io", "", "default", true},
		{"events-viewer", "watch", "events.events.k8s.io", "", "", true},
		{"events-viewer", "create", "events.events.k8s.io", "", "default", false},
		{"events-editor", "create", "events.events.k8s.io", "", "default", true},
		{"events-editor", "deletecollection", "events.events.k8s.io", "", "default", true},
		{"events-editor", "patch", "events.events.k8s.io", "", "default", true},
		{"events-editor", "list", "pods", "", "default", false},
	}
	for _, tc := range cases {
		args := []string{"auth", "can-i", tc.verb, tc.what, "--as=" + tc.as}
		if tc.sub != "" {
			args = append(args, "--subresource="+tc.sub)
		}
		if tc.ns == "" {
			args = append(args, "--all-namespaces")
		} else {
			args = append(args, "--namespace="+tc.ns)
		}
		t.Run(strings.Join(args[2:], " "), func(t *testing.T) {
			stdout, stderr, err := c.run(nil, args...)
			answer := strings.TrimSpace(stdout)
			// can-i exits 1 for "no"; anything else is an error.
			var exitErr *exec.ExitError
			if err != nil && (!errors.As(err, &exitErr) || exitErr.ExitCode() != 1 || answer != "no") {
				t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, stdout, stderr)
			}
			if got := answer == "yes"; got != tc.allowed {
				t.Errorf("kubectl %s = %q, want allowed=%v", strings.Join(args, " "), answer, tc.allowed)
			}
		})
	}

	// The event summaries: kubectl auth can-i cannot name a resource that
	// the cluster does not serve (envtest has no events-apiserver), so ask
	// kube-apiserver's authorizer with a SubjectAccessReview.
	for _, tc := range []struct {
		as, verb, ns string
		allowed      bool
	}{
		{"events-viewer", "list", "default", true},
		{"events-viewer", "list", "", true},
		{"events-editor", "list", "default", false}, // our edit role only writes; the built-in edit aggregates view too
		{"events-viewer", "create", "default", false},
	} {
		t.Run(fmt.Sprintf("SubjectAccessReview %s eventsummaries as %s in %q", tc.verb, tc.as, tc.ns), func(t *testing.T) {
			review := fmt.Sprintf(`{"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {"user": %q,
				"resourceAttributes": {"group": "summaries.kube-events.io", "resource": "eventsummaries", "verb": %q, "namespace": %q}}}`, tc.as, tc.verb, tc.ns)
			stdout, stderr, err := c.run(strings.NewReader(review), "create", "-f", "-", "-o", "jsonpath={.status.allowed}")
			if err != nil {
				t.Fatalf("creating the SubjectAccessReview: %v\n%s", err, stderr)
			}
			if got := strings.TrimSpace(stdout) == "true"; got != tc.allowed {
				t.Errorf("allowed = %q, want %v", stdout, tc.allowed)
			}
		})
	}
}

// TestMetricsScraperMayGetMetricsOnly applies the RBAC of
// components/monitoring for real and asks kube-apiserver's authorizer what
// the ServiceAccount the ServiceMonitor scrapes as may do: get /metrics,
// which the server authorizes by SubjectAccessReview, and nothing more;
// and that no other ServiceAccount of the namespace may.
func TestMetricsScraperMayGetMetricsOnly(t *testing.T) {
	c := startCluster(t)
	dir := kustomization(t, c.root, "resources:\n- %s\ncomponents:\n- %s\n",
		filepath.Join(c.root, "artifacts", "overlays", "default"),
		filepath.Join(c.root, "artifacts", "components", "monitoring"))
	var rbac []*unstructured.Unstructured
	for _, o := range c.render(t, dir) {
		if strings.Contains(o.GetName(), "metrics") &&
			(o.GroupVersionKind().Group == "rbac.authorization.k8s.io" || o.GetKind() == "ServiceAccount") {
			rbac = append(rbac, o)
		}
	}
	if len(rbac) != 3 {
		t.Fatalf("components/monitoring builds %d ServiceAccounts, ClusterRoles and ClusterRoleBindings for the scraper, want 3", len(rbac))
	}
	c.applyForReal(t, rbac)

	const scraper = "system:serviceaccount:events-apiserver:events-apiserver-metrics-scraper"
	cases := []struct {
		as      string
		args    []string
		allowed bool
	}{
		{scraper, []string{"get", "/metrics"}, true},
		{scraper, []string{"get", "/debug/pprof/profile"}, false},
		{scraper, []string{"list", "events.events.k8s.io", "--all-namespaces"}, false},
		{scraper, []string{"get", "secrets", "--namespace=events-apiserver"}, false},
		{"system:serviceaccount:events-apiserver:default", []string{"get", "/metrics"}, false},
	}
	for _, tc := range cases {
		args := append(append([]string{"auth", "can-i"}, tc.args...), "--as="+tc.as)
		t.Run(strings.Join(args[2:], " "), func(t *testing.T) {
			stdout, stderr, err := c.run(nil, args...)
			answer := strings.TrimSpace(stdout)
			var exitErr *exec.ExitError
			if err != nil && (!errors.As(err, &exitErr) || exitErr.ExitCode() != 1 || answer != "no") {
				t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, stdout, stderr)
			}
			if got := answer == "yes"; got != tc.allowed {
				t.Errorf("kubectl %s = %q, want allowed=%v", strings.Join(args, " "), answer, tc.allowed)
			}
		})
	}
}

// The archive's address, the same for the single node and a cluster.
const archiveService = "events-victorialogs"

// expectArchiveService checks the archive's Service: port 9428 to the pods
// of spec, which run victoria-logs hardened and with probes.
func expectArchiveService(t *testing.T, objs objects, spec corev1.PodTemplateSpec) corev1.Container {
	t.Helper()
	svcObj := objs.find("Service", "", archiveService)
	if svcObj == nil {
		t.Fatal("no archive Service " + archiveService)
	}
	svc := typed[corev1.Service](t, svcObj)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 9428 || svc.Spec.Ports[0].TargetPort.String() != "https" {
		t.Errorf("archive Service ports = %+v, want 9428 -> https", svc.Spec.Ports)
	}
	for k, v := range svc.Spec.Selector {
		if spec.Labels[k] != v {
			t.Errorf("archive Service selects %s=%s, which the archive's pods lack", k, v)
		}
	}
	if len(spec.Spec.Containers) != 1 {
		t.Fatalf("archive pods have %d containers, want 1", len(spec.Spec.Containers))
	}
	ctr := spec.Spec.Containers[0]
	expectHardened(t, "victoria-logs", ctr)
	if ctr.LivenessProbe == nil || ctr.ReadinessProbe == nil {
		t.Error("victoria-logs lacks liveness or readiness probe")
	}
	expectArchiveServesTLSWithAuth(t, "the archive's front", spec)
	if objs.find("NetworkPolicy", "networking.k8s.io", archiveService) == nil {
		t.Error("no NetworkPolicy for the archive")
	}
	expectServerReachesArchiveSecured(t, objs)
	return ctr
}

// The archive's Secrets: VictoriaLogs' serving certificate (with the CA as
// ca.crt) and the basic authentication password (tls.key).
const (
	archiveTLSSecret  = "events-victorialogs-tls"
	archiveAuthSecret = "events-victorialogs-auth"
)

// expectArchiveServesTLSWithAuth checks a victoria-logs pod template: https
// with the certificate of archiveTLSSecret, basic authentication with the
// password of archiveAuthSecret, and probes over https (/health asks for
// no credentials).
func expectArchiveServesTLSWithAuth(t *testing.T, what string, spec corev1.PodTemplateSpec) {
	t.Helper()
	ctr := spec.Spec.Containers[0]
	for _, arg := range []string{
		"-tls", "-tlsCertFile=/etc/victorialogs/tls/tls.crt", "-tlsKeyFile=/etc/victorialogs/tls/tls.key",
		"-httpAuth.username=events-apiserver", "-httpAuth.password=file:///etc/victorialogs/auth/password",
	} {
		if !slices.Contains(ctr.Args, arg) {
			t.Errorf("%s args %q lack %q", what, ctr.Args, arg)
		}
	}
	for _, probe := range []*corev1.Probe{ctr.LivenessProbe, ctr.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Scheme != corev1.URISchemeHTTPS || probe.HTTPGet.Path != "/health" {
			t.Errorf("%s probe %+v, want GET /health over https", what, probe)
		}
	}
	expectSecretMounted(t, what, spec, "/etc/victorialogs/tls", archiveTLSSecret, nil)
	expectSecretMounted(t, what, spec, "/etc/victorialogs/auth", archiveAuthSecret, map[string]string{"tls.key": "password"})
}

// expectSecretMounted checks that the pod's first container mounts secret
// at dir, with exactly the keys items maps to files (all keys when nil).
func expectSecretMounted(t *testing.T, what string, spec corev1.PodTemplateSpec, dir, secret string, items map[string]string) {
	t.Helper()
	for _, m := range spec.Spec.Containers[0].VolumeMounts {
		if m.MountPath != dir {
			continue
		}
		for _, v := range spec.Spec.Volumes {
			if v.Name != m.Name {
				continue
			}
			if v.Secret == nil || v.Secret.SecretName != secret {
				t.Errorf("%s mounts %+v at %s, want the Secret %s", what, v.VolumeSource, dir, secret)
				return
			}
			got := map[string]string{}
			for _, item := range v.Secret.Items {
				got[item.Key] = item.Path
			}
			if items == nil {
				items = map[string]string{}
			}
			if diff := cmp.Diff(items, got); diff != "" {
				t.Errorf("%s: the Secret %s's items at %s (-want +got):\n%s", what, secret, dir, diff)
			}
			return
		}
	}
	t.Errorf("%s mounts nothing at %s (the Secret %s)", what, dir, secret)
}

// expectServerReachesArchiveSecured checks the server's side: https with
// the archive's CA, and the password, from volumes that hold nothing else
// (never VictoriaLogs' serving key).
func expectServerReachesArchiveSecured(t *testing.T, objs objects) {
	t.Helper()
	dep := typed[appsv1.Deployment](t, objs.find("Deployment", "apps", "events-apiserver"))
	args := dep.Spec.Template.Spec.Containers[0].Args
	// Self-managed, the server writes the CA and the password it reads
	// from their Secrets to /tmp; with cert-manager it mounts them.
	dir := map[bool]string{true: "/tmp/archive", false: "/var/run/events-apiserver"}[slices.Contains(args, "--self-managed-archive-certificates")]
	caFile, passwordFile := dir+"/ca.crt", dir+"/password"
	if dir != "/tmp/archive" {
		caFile, passwordFile = dir+"/archive-ca/ca.crt", dir+"/archive-auth/password"
		expectSecretMounted(t, "the server", dep.Spec.Template, dir+"/archive-ca", archiveTLSSecret, map[string]string{"ca.crt": "ca.crt"})
		expectSecretMounted(t, "the server", dep.Spec.Template, dir+"/archive-auth", archiveAuthSecret, map[string]string{"tls.key": "password"})
	}
	for _, arg := range []string{
		"--archive=url",
		"--archive-url=https://" + archiveService + "." + namespace + ".svc:9428",
		"--archive-ca-file=" + caFile,
		"--archive-username=events-apiserver",
		"--archive-password-file=" + passwordFile,
	} {
		if !slices.Contains(args, arg) {
			t.Errorf("server args %q lack %q", args, arg)
		}
	}
}

// expectArchiveCertManager checks the cert-manager objects of the archive:
// a serving certificate for every name the server and the front dial,
// signed by the archive's own CA, and the password's certificate, whose
// key stays across renewals.
func expectArchiveCertManager(t *testing.T, objs objects, names []string) {
	t.Helper()
	tlsCert := objs.find("Certificate", "cert-manager.io", archiveTLSSecret)
	if tlsCert == nil {
		t.Fatal("no Certificate " + archiveTLSSecret)
	}
	if issuer, _, _ := unstructured.NestedString(tlsCert.Object, "spec", "issuerRef", "name"); issuer != "events-victorialogs-ca" {
		t.Errorf("Certificate %s is issued by %q, want events-victorialogs-ca", archiveTLSSecret, issuer)
	}
	issuer := objs.find("Issuer", "cert-manager.io", "events-victorialogs-ca")
	caCert := objs.find("Certificate", "cert-manager.io", "events-victorialogs-ca")
	if issuer == nil || caCert == nil {
		t.Fatal("no Issuer or CA Certificate events-victorialogs-ca")
	}
	if secret, _, _ := unstructured.NestedString(issuer.Object, "spec", "ca", "secretName"); secret != "events-victorialogs-ca" {
		t.Errorf("Issuer events-victorialogs-ca signs with Secret %q, want events-victorialogs-ca", secret)
	}
	if isCA, _, _ := unstructured.NestedBool(caCert.Object, "spec", "isCA"); !isCA {
		t.Error("Certificate events-victorialogs-ca is not isCA")
	}
	dnsNames, _, _ := unstructured.NestedStringSlice(tlsCert.Object, "spec", "dnsNames")
	for _, name := range names {
		if !slices.ContainsFunc(dnsNames, func(pattern string) bool { return matchesDNSName(pattern, name) }) {
			t.Errorf("Certificate %s dnsNames %q do not cover %s", archiveTLSSecret, dnsNames, name)
		}
	}
	auth := objs.find("Certificate", "cert-manager.io", archiveAuthSecret)
	if auth == nil {
		t.Fatal("no Certificate " + archiveAuthSecret)
	}
	if secret, _, _ := unstructured.NestedString(auth.Object, "spec", "secretName"); secret != archiveAuthSecret {
		t.Errorf("Certificate %s writes Secret %q, want %s", archiveAuthSecret, secret, archiveAuthSecret)
	}
	if policy, _, _ := unstructured.NestedString(auth.Object, "spec", "privateKey", "rotationPolicy"); policy != "Never" {
		t.Errorf("Certificate %s privateKey.rotationPolicy %q, want Never (the password stays across renewals)", archiveAuthSecret, policy)
	}
}

// expectArchiveStorage checks a StatefulSet that keeps archive data: a
// volume claim mounted as its data path, and the retention the server
// queries: -retentionPeriod is the server's --archive-retention, 720h.
func expectArchiveStorage(t *testing.T, objs objects, sts *appsv1.StatefulSet) {
	t.Helper()
	ctr := sts.Spec.Template.Spec.Containers[0]
	depObj := objs.find("Deployment", "apps", "events-apiserver")
	if depObj == nil {
		t.Fatal("no Deployment events-apiserver")
	}
	server := typed[appsv1.Deployment](t, depObj).Spec.Template.Spec.Containers[0]
	if !slices.Contains(server.Args, "--archive-retention=720h") {
		t.Errorf("the server's args %q lack --archive-retention=720h", server.Args)
	}
	for _, arg := range []string{"-storageDataPath=/victoria-logs-data", "-retentionPeriod=720h"} {
		if !slices.Contains(ctr.Args, arg) {
			t.Errorf("%s args %q lack %q", sts.Name, ctr.Args, arg)
		}
	}
	// The claim at the data path; the other mounts are the TLS and
	// password Secrets (expectArchiveServesTLSWithAuth).
	if len(sts.Spec.VolumeClaimTemplates) != 1 || len(ctr.VolumeMounts) == 0 ||
		ctr.VolumeMounts[0].Name != sts.Spec.VolumeClaimTemplates[0].Name || ctr.VolumeMounts[0].MountPath != "/victoria-logs-data" {
		t.Errorf("%s: claims %d, mounts %+v; want its claim at /victoria-logs-data", sts.Name, len(sts.Spec.VolumeClaimTemplates), ctr.VolumeMounts)
	}
	if sts.Spec.ServiceName == "" {
		t.Errorf("%s has no governing Service", sts.Name)
	}
}

func expectArchiveSingleNode(t *testing.T, objs objects) {
	t.Helper()
	stsObj := objs.find("StatefulSet", "apps", archiveService)
	if stsObj == nil {
		t.Fatal("no archive StatefulSet " + archiveService)
	}
	sts := typed[appsv1.StatefulSet](t, stsObj)
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 1 {
		t.Errorf("archive StatefulSet replicas = %v, want 1 (a single node)", sts.Spec.Replicas)
	}
	expectArchiveService(t, objs, sts.Spec.Template)
	expectArchiveStorage(t, objs, sts)
}

// The names the server dials (the archive's address) and, in a cluster,
// the front dials (each storage node's), which the serving certificate
// must hold.
var (
	archiveClusterNames = []string{
		archiveService + "." + namespace + ".svc",
		"events-vlstorage-0.events-vlstorage." + namespace + ".svc",
		"events-vlstorage-1.events-vlstorage." + namespace + ".svc",
	}
)

func expectArchiveCluster(t *testing.T, objs objects, nodes int) {
	t.Helper()
	stsObj := objs.find("StatefulSet", "apps", "events-vlstorage")
	if stsObj == nil {
		t.Fatal("no archive storage StatefulSet events-vlstorage")
	}
	sts := typed[appsv1.StatefulSet](t, stsObj)
	if sts.Spec.Replicas == nil || int(*sts.Spec.Replicas) != nodes {
		t.Errorf("events-vlstorage replicas = %v, want %d", sts.Spec.Replicas, nodes)
	}
	expectArchiveStorage(t, objs, sts)
	if objs.find("NetworkPolicy", "networking.k8s.io", "events-vlstorage") == nil {
		t.Error("no NetworkPolicy for the storage nodes")
	}
	depObj := objs.find("Deployment", "apps", archiveService)
	if depObj == nil {
		t.Fatal("no archive front Deployment " + archiveService)
	}
	dep := typed[appsv1.Deployment](t, depObj)
	ctr := expectArchiveService(t, objs, dep.Spec.Template)
	// The front lists every storage node by its stable name, and serves
	// both appends and queries (the server has one address).
	var want []string
	for i := range nodes {
		want = append(want, fmt.Sprintf("events-vlstorage-%d.%s.%s.svc:9428", i, sts.Spec.ServiceName, namespace))
	}
	if arg := "-storageNode=" + strings.Join(want, ","); !slices.Contains(ctr.Args, arg) {
		t.Errorf("front args %q lack %q", ctr.Args, arg)
	}
	// The front reaches every storage node over TLS with the password.
	for _, arg := range []string{
		"-storageNode.tls", "-storageNode.tlsCAFile=/etc/victorialogs/tls/ca.crt",
		"-storageNode.username=events-apiserver", "-storageNode.passwordFile=/etc/victorialogs/auth/password",
	} {
		if !slices.Contains(ctr.Args, arg) {
			t.Errorf("front args %q lack %q", ctr.Args, arg)
		}
	}
	expectArchiveServesTLSWithAuth(t, "the storage nodes", sts.Spec.Template)
	for _, arg := range []string{"-insert.disable", "-select.disable", "-search.allowPartialResponse"} {
		for _, a := range ctr.Args {
			if strings.HasPrefix(a, arg) {
				t.Errorf("front args %q hold %q", ctr.Args, a)
			}
		}
	}
}
