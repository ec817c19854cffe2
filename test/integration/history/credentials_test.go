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
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kube-events/events-apiserver/test/harness"
)

// TestArchiveCredentialsAreSplit: VictoriaLogs run with the flags of the
// installed archive (overlays/default with the monitoring components)
// gives Prometheus, with what its PodMonitor sends, /metrics and nothing
// else: a query, an append and a delete answer 401 or 403. The server's
// password queries but does not delete (deletes are off until an operator
// turns them on for a purge, docs/security.md).
func TestArchiveCredentialsAreSplit(t *testing.T) {
	objs := renderInstall(t, "overlays/default", "components/monitoring", "components/monitoring-victorialogs")
	var sts appsv1.StatefulSet
	objs.decode(t, "StatefulSet", "events-victorialogs", &sts)
	spec := sts.Spec.Template.Spec
	sec := newArchiveSecurity(t)
	dir := t.TempDir()
	// The flags that decide who may do what; the test's own PKI and
	// password stand for the installed ones.
	var args []string
	for _, arg := range spec.Containers[0].Args {
		name, value, _ := strings.Cut(arg, "=")
		switch name {
		case "-delete.enable", "-internaldelete.enable":
			args = append(args, arg)
		case "-metricsAuthKey", "-flagsAuthKey", "-pprofAuthKey":
			file := filepath.Join(dir, strings.TrimPrefix(name, "-"))
			if err := os.WriteFile(file, []byte(objs.mountedSecret(t, spec, strings.TrimPrefix(value, "file://"))), 0o600); err != nil {
				t.Fatal(err)
			}
			args = append(args, name+"=file://"+file)
		}
	}
	archiveURL := startSecuredVictoriaLogs(t, sec, append(args, "-storageDataPath="+t.TempDir())...)

	password, err := os.ReadFile(sec.passwordFile)
	if err != nil {
		t.Fatal(err)
	}
	server := credential{username: archiveUser, password: strings.TrimSpace(string(password))}
	prometheus := objs.scrapeCredential(t, server)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: sec.roots, MinVersion: tls.VersionTLS12}}}
	defer client.CloseIdleConnections()

	for _, tc := range []struct {
		name      string
		as        credential
		method    string
		path      string
		form      url.Values
		wantAllow bool
	}{
		{"prometheus reads /metrics", prometheus, http.MethodGet, "/metrics", nil, true},
		{"prometheus queries", prometheus, http.MethodPost, "/select/logsql/query", url.Values{"query": {"*"}}, false},
		{"prometheus appends", prometheus, http.MethodPost, "/insert/jsonline", nil, false},
		{"prometheus deletes", prometheus, http.MethodPost, "/delete/run_task", url.Values{"filter": {"*"}}, false},
		{"the server queries", server, http.MethodPost, "/select/logsql/query", url.Values{"query": {"*"}}, true},
		{"the server deletes", server, http.MethodPost, "/delete/run_task", url.Values{"filter": {"*"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := tc.as.do(t, client, tc.method, archiveURL+tc.path, tc.form)
			allowed := status/100 == 2
			if allowed != tc.wantAllow {
				t.Errorf("%s %s: %d %q; want allowed %v", tc.method, tc.path, status, body, tc.wantAllow)
			}
			if !tc.wantAllow && tc.as == prometheus && status != http.StatusUnauthorized && status != http.StatusForbidden {
				t.Errorf("%s %s with the metrics credential: %d %q, want 401 or 403", tc.method, tc.path, status, body)
			}
		})
	}
}

// credential is what a client of VictoriaLogs sends: basic authentication
// and an authKey query parameter, each when set.
type credential struct {
	username, password string
	authKey            string
}

func (c credential) do(t *testing.T, client *http.Client, method, target string, form url.Values) (int, string) {
	t.Helper()
	if c.authKey != "" {
		target += "?" + url.Values{"authKey": {c.authKey}}.Encode()
	}
	req, err := http.NewRequestWithContext(t.Context(), method, target, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if c.username != "" {
		req.SetBasicAuth(c.username, c.password)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// installObjects are the objects of a kustomize build, by kind and name.
type installObjects map[[2]string]*unstructured.Unstructured

// renderInstall builds a kustomization of artifacts/<base> with the
// components artifacts/<components>, as an operator's overlay would.
func renderInstall(t *testing.T, base string, components ...string) installObjects {
	t.Helper()
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "artifacts"), filepath.Join(dir, "artifacts")); err != nil {
		t.Fatal(err)
	}
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../artifacts/" + base + "\ncomponents:\n"
	for _, c := range components {
		kustomization += "- ../artifacts/" + c + "\n"
	}
	install := filepath.Join(dir, "install")
	if err := os.Mkdir(install, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(install, "kustomization.yaml"), []byte(kustomization), 0o600); err != nil {
		t.Fatal(err)
	}
	// kubectl's kustomize, not krusty's package: krusty imports the
	// plugin package, whose dynamic linking the archive engine's cgo zstd
	// in this test binary cannot take.
	out, err := exec.Command("kubectl", "kustomize", install).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize of %s with %v: %v", base, components, err)
	}
	objs := installObjects{}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if len(obj.Object) > 0 {
			objs[[2]string{obj.GetKind(), obj.GetName()}] = obj
		}
	}
	return objs
}

// decode decodes the object of kind and name into into.
func (objs installObjects) decode(t *testing.T, kind, name string, into any) {
	t.Helper()
	obj, ok := objs[[2]string{kind, name}]
	if !ok {
		t.Fatalf("the install has no %s %s", kind, name)
	}
	data, err := yaml.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatal(err)
	}
}

// mountedSecret is the value a container of spec reads at file, from a
// Secret of the install mounted there.
func (objs installObjects) mountedSecret(t *testing.T, spec corev1.PodSpec, file string) string {
	t.Helper()
	dir, key := path.Split(file)
	for _, mount := range spec.Containers[0].VolumeMounts {
		if path.Clean(mount.MountPath) != path.Clean(dir) {
			continue
		}
		for _, volume := range spec.Volumes {
			if volume.Name != mount.Name || volume.Secret == nil {
				continue
			}
			for _, item := range volume.Secret.Items {
				if item.Path == key {
					key = item.Key
				}
			}
			var secret corev1.Secret
			objs.decode(t, "Secret", volume.Secret.SecretName, &secret)
			if value, ok := secret.StringData[key]; ok {
				return value
			}
			return string(secret.Data[key])
		}
	}
	t.Fatalf("no Secret of the install is mounted at %s", file)
	return ""
}

// scrapeCredential is what Prometheus sends, as the PodMonitor
// events-victorialogs configures it: its authKey parameter, and its basic
// authentication, whose password is the archive's (server's) when it
// names that Secret.
func (objs installObjects) scrapeCredential(t *testing.T, server credential) credential {
	t.Helper()
	monitor, ok := objs[[2]string{"PodMonitor", "events-victorialogs"}]
	if !ok {
		t.Fatal("the install has no PodMonitor events-victorialogs")
	}
	endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "podMetricsEndpoints")
	if len(endpoints) != 1 {
		t.Fatalf("PodMonitor events-victorialogs has %d endpoints, want 1", len(endpoints))
	}
	endpoint := endpoints[0].(map[string]any)
	var c credential
	if keys, _, _ := unstructured.NestedStringSlice(endpoint, "params", "authKey"); len(keys) > 0 {
		c.authKey = keys[0]
	}
	if secret, ok, _ := unstructured.NestedString(endpoint, "basicAuth", "password", "name"); ok {
		if !slices.Contains([]string{"events-victorialogs-auth"}, secret) {
			t.Fatalf("PodMonitor events-victorialogs signs in with the password in Secret %s, which the test does not know", secret)
		}
		c.username, c.password = server.username, server.password
	}
	return c
}
