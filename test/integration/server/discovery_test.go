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
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestDiscovery: both discovery formats (client-go's discovery client asks
// for the aggregated one, kubectl api-resources too) list events in
// /api/v1, events.k8s.io/v1 and v1beta1 with the short name ev and every
// verb, events.k8s.io/v1beta1 preferred (the version this server exists to
// serve; see pkg/apis/events/install), and the event summaries in
// summaries.kube-events.io/v1alpha1, namespaced, list only.
func TestDiscovery(t *testing.T) {
	t.Parallel()
	client, err := discovery.NewDiscoveryClientForConfig(shared.RestConfig)
	if err != nil {
		t.Fatal(err)
	}
	groups, resources, err := client.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if g.Name == "events.k8s.io" && g.PreferredVersion.Version != "v1beta1" {
			t.Errorf("events.k8s.io prefers %s, want v1beta1", g.PreferredVersion.Version)
		}
	}
	// The unaggregated format, which clients get when they ask for plain JSON.
	raw, err := jsonClient(t).CoreV1().RESTClient().Get().AbsPath("/apis").DoRaw(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	var legacy metav1.APIGroupList
	if err := json.Unmarshal(raw, &legacy); err != nil {
		t.Fatal(err)
	}
	if len(legacy.Groups) != 2 || legacy.Groups[0].Name != "events.k8s.io" || legacy.Groups[0].PreferredVersion.Version != "v1beta1" ||
		legacy.Groups[1].Name != "summaries.kube-events.io" {
		t.Errorf("unaggregated /apis: %s", raw)
	}

	verbs := []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	found := map[string]bool{}
	for _, list := range resources {
		for _, r := range list.APIResources {
			if r.Name == "eventsummaries" {
				found[list.GroupVersion] = true
				if list.GroupVersion != "summaries.kube-events.io/v1alpha1" || !r.Namespaced || r.Kind != "EventSummary" || !slices.Equal(r.Verbs, []string{"list"}) {
					t.Errorf("%s eventsummaries: %+v", list.GroupVersion, r)
				}
				continue
			}
			if r.Name != "events" {
				continue
			}
			found[list.GroupVersion] = true
			got := append([]string(nil), r.Verbs...)
			slices.Sort(got)
			if !r.Namespaced || r.Kind != "Event" || !slices.Equal(r.ShortNames, []string{"ev"}) || !slices.Equal(got, verbs) {
				t.Errorf("%s events: %+v", list.GroupVersion, r)
			}
		}
	}
	for _, gv := range []string{"v1", "events.k8s.io/v1", "events.k8s.io/v1beta1", "summaries.kube-events.io/v1alpha1"} {
		if !found[gv] {
			t.Errorf("discovery has no events or eventsummaries in %s", gv)
		}
	}

	out, errOut, err := framework.Kubectl(t, shared.KubeconfigPath, "api-resources", "--no-headers", "-o", "name")
	if err != nil {
		t.Fatalf("kubectl api-resources: %v\n%s", err, errOut)
	}
	if got := strings.Fields(out); !slices.Equal(got, []string{"events", "events.events.k8s.io", "eventsummaries.summaries.kube-events.io"}) {
		t.Errorf("kubectl api-resources: %q, want events, events.events.k8s.io and eventsummaries.summaries.kube-events.io", got)
	}
}

// TestHealthAndMetrics: /healthz, /livez and /readyz answer anyone, /readyz
// includes the etcd check; /metrics answers the admin.
func TestHealthAndMetrics(t *testing.T) {
	t.Parallel()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(shared.RestConfig.CAData) {
		t.Fatal("no CA in the admin kubeconfig")
	}
	anonymous := &http.Client{Timeout: requestTimeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer anonymous.CloseIdleConnections()
	get := func(c *http.Client, path string) (int, string) {
		t.Helper()
		resp, err := c.Get(shared.RestConfig.Host + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		if code, body := get(anonymous, path); code != http.StatusOK || body != "ok" {
			t.Errorf("anonymous GET %s: %d %q, want 200 ok", path, code, body)
		}
	}
	if code, body := get(anonymous, "/readyz?verbose"); code != http.StatusOK || !strings.Contains(body, "[+]etcd ok") || !strings.Contains(body, "[+]etcd-readiness ok") {
		t.Errorf("GET /readyz?verbose: %d\n%s", code, body)
	}
	if code, _ := get(anonymous, "/metrics"); code != http.StatusUnauthorized {
		t.Errorf("anonymous GET /metrics: %d, want 401", code)
	}

	admin := jsonClient(t).CoreV1().RESTClient()
	body, err := admin.Get().AbsPath("/metrics").Timeout(requestTimeout).DoRaw(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, metric := range []string{"apiserver_request_total", "etcd_request_duration_seconds"} {
		if !strings.Contains(string(body), metric) {
			t.Errorf("/metrics lacks %s", metric)
		}
	}
}
