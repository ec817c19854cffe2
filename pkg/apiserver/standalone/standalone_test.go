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

package standalone

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"

	"github.com/kube-events/events-apiserver/pkg/apis/summaries"
	"github.com/kube-events/events-apiserver/pkg/embedded/pki"
)

func TestAuthorizer(t *testing.T) {
	admin := &user.DefaultInfo{Name: "events-admin", Groups: []string{AdminGroup, user.AllAuthenticated}}
	reader := &user.DefaultInfo{Name: "r", Groups: []string{ReadersGroup, user.AllAuthenticated}}
	writer := &user.DefaultInfo{Name: "w", Groups: []string{WritersGroup, user.AllAuthenticated}}
	nobody := &user.DefaultInfo{Name: "n", Groups: []string{user.AllAuthenticated}}
	anonymous := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}

	events := func(u user.Info, verb, group string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, APIVersion: "v1", Resource: "events", Namespace: "default", ResourceRequest: true}
	}
	eventSummaries := func(u user.Info, verb string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: summaries.GroupName, APIVersion: "v1alpha1", Resource: "eventsummaries", Namespace: "default", ResourceRequest: true}
	}
	path := func(u user.Info, verb, p string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, Path: p}
	}

	tests := []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"admin deletes events", events(admin, "deletecollection", ""), true},
		{"admin reads metrics", path(admin, "get", "/metrics"), true},
		{"admin touches anything", authorizer.AttributesRecord{User: admin, Verb: "create", Resource: "pods", ResourceRequest: true}, true},
		{"reader lists core events", events(reader, "list", ""), true},
		{"reader watches events.k8s.io events", events(reader, "watch", "events.k8s.io"), true},
		{"reader cannot create", events(reader, "create", ""), false},
		{"reader cannot patch", events(reader, "patch", "events.k8s.io"), false},
		{"writer creates", events(writer, "create", "events.k8s.io"), true},
		{"writer patches", events(writer, "patch", ""), true},
		{"writer reads", events(writer, "get", ""), true},
		{"writer deletes collections", events(writer, "deletecollection", ""), true},
		{"writer cannot touch pods", authorizer.AttributesRecord{User: writer, Verb: "create", Resource: "pods", ResourceRequest: true}, false},
		{"writer cannot use an events subresource", authorizer.AttributesRecord{User: writer, Verb: "get", Resource: "events", Subresource: "status", ResourceRequest: true}, false},
		{"writer cannot use events of another group", events(writer, "get", "example.com"), false},
		{"authenticated user without group cannot list", events(nobody, "list", ""), false},
		{"authenticated user reads discovery", path(nobody, "get", "/apis/events.k8s.io/v1"), true},
		{"authenticated user reads openapi", path(nobody, "get", "/openapi/v3"), true},
		{"authenticated user reads version", path(nobody, "get", "/version"), true},
		{"authenticated user cannot read metrics", path(nobody, "get", "/metrics"), false},
		{"authenticated user cannot post to discovery", path(nobody, "post", "/apis"), false},
		{"prefix is not a path boundary", path(nobody, "get", "/apisx"), false},
		{"anonymous reads readyz", path(anonymous, "get", "/readyz"), true},
		{"anonymous reads livez", path(anonymous, "get", "/livez"), true},
		{"anonymous cannot read discovery", path(anonymous, "get", "/api"), false},
		{"anonymous cannot list events", events(anonymous, "list", ""), false},
		{"reader lists event summaries", eventSummaries(reader, "list"), true},
		{"writer lists event summaries", eventSummaries(writer, "list"), true},
		{"reader cannot create event summaries", eventSummaries(reader, "create"), false},
		{"authenticated user without group cannot list event summaries", eventSummaries(nobody, "list"), false},
		{"eventsummaries of another group", authorizer.AttributesRecord{User: reader, Verb: "list", APIGroup: "example.com", Resource: "eventsummaries", ResourceRequest: true}, false},
	}
	authz, err := NewAuthorizer()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decision, reason, err := authz.Authorize(t.Context(), tt.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if got := decision == authorizer.DecisionAllow; got != tt.allow {
				t.Errorf("allowed = %v (%q), want %v", got, reason, tt.allow)
			}
			if !tt.allow && reason == "" {
				t.Error("a denial must say why")
			}
		})
	}
}

func TestAuthenticator(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	ca, err := pki.EnsureCA(dir, "client-ca", "client-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := ca.EnsureCert(dir, "admin", pki.Spec{CommonName: "events-admin", Organization: []string{AdminGroup}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, now)
	if err != nil {
		t.Fatal(err)
	}
	provider, err := dynamiccertificates.NewDynamicCAContentFromFile("client-ca", filepath.Join(dir, "client-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	authn, err := NewAuthenticator(provider)
	if err != nil {
		t.Fatal(err)
	}

	var got *http.Request
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r }))
	server.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	server.StartTLS()
	defer server.Close()
	pair, err := tls.LoadX509KeyPair(admin.CertFile, admin.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	client := server.Client()
	client.Transport.(*http.Transport).TLSClientConfig.Certificates = []tls.Certificate{pair}
	resp, err := client.Get(server.URL + "/api")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	r, ok, err := authn.AuthenticateRequest(got)
	if err != nil || !ok {
		t.Fatalf("client certificate not authenticated: ok=%v err=%v", ok, err)
	}
	if r.User.GetName() != "events-admin" || len(r.User.GetGroups()) != 2 || r.User.GetGroups()[0] != AdminGroup || r.User.GetGroups()[1] != user.AllAuthenticated {
		t.Errorf("user = %s %v, want events-admin [system:masters system:authenticated]", r.User.GetName(), r.User.GetGroups())
	}

	for _, tt := range []struct {
		path      string
		anonymous bool
	}{{"/readyz", true}, {"/healthz", true}, {"/livez", true}, {"/api", false}, {"/api/v1/events", false}} {
		req := httptest.NewRequest(http.MethodGet, tt.path, nil)
		r, ok, err := authn.AuthenticateRequest(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		if ok != tt.anonymous {
			t.Errorf("%s without a certificate: authenticated=%v, want %v", tt.path, ok, tt.anonymous)
		}
		if ok && r.User.GetName() != user.Anonymous {
			t.Errorf("%s: user %q, want anonymous", tt.path, r.User.GetName())
		}
	}
}
