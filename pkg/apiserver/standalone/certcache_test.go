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
	"os"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/embedded/pki"
)

// reloadableCA is a client CA bundle the test replaces, as a rotated CA
// file would be.
type reloadableCA struct {
	current atomic.Pointer[dynamiccertificates.CAContentProvider]
}

func (c *reloadableCA) load(t *testing.T, file string) {
	t.Helper()
	bundle, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	provider, err := dynamiccertificates.NewStaticCAContent("client-ca", bundle)
	if err != nil {
		t.Fatal(err)
	}
	p := dynamiccertificates.CAContentProvider(provider)
	c.current.Store(&p)
}

func (c *reloadableCA) Name() string { return "client-ca" }
func (c *reloadableCA) CurrentCABundleContent() []byte {
	return (*c.current.Load()).CurrentCABundleContent()
}
func (c *reloadableCA) VerifyOptions() (x509.VerifyOptions, bool) {
	return (*c.current.Load()).VerifyOptions()
}
func (c *reloadableCA) AddListener(dynamiccertificates.Listener) {}

// countingAuthenticator counts the requests the cache passes on.
type countingAuthenticator struct {
	authenticator.Request
	calls int
}

func (c *countingAuthenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	c.calls++
	return c.Request.AuthenticateRequest(req)
}

// TestCertificateCache: the answer for a client certificate is verified
// once and then kept, at most certificateCacheTTL and never past the
// certificate's expiry; a reloaded CA bundle verifies it again (and
// refuses a certificate of the old CA); refusals and requests without a
// certificate are never kept.
func TestCertificateCache(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	ca, err := pki.EnsureCA(dir, "client-ca", "client-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	otherCA, err := pki.EnsureCA(dir, "other-ca", "other-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	certificate := func(ca *pki.CA, name string) *x509.Certificate {
		t.Helper()
		pair, err := ca.EnsureCert(dir, name, pki.Spec{CommonName: name, Organization: []string{WritersGroup}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, now)
		if err != nil {
			t.Fatal(err)
		}
		kp, err := tls.LoadX509KeyPair(pair.CertFile, pair.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := x509.ParseCertificate(kp.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	writer, stranger := certificate(ca, "writer"), certificate(otherCA, "stranger")

	clientCA := &reloadableCA{}
	clientCA.load(t, ca.CertFile)
	inner, err := NewAuthenticator(clientCA)
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingAuthenticator{Request: inner.(*certificateCache).Request}
	clk := clocktesting.NewFakeClock(now)
	authn := newCertificateCache(counted, clientCA, clk)

	request := func(cert *x509.Certificate) *http.Request {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/events", nil)
		if cert != nil {
			req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
		}
		return req
	}
	steps := []struct {
		name      string
		do        func()
		cert      *x509.Certificate
		wantUser  string // "" for refused
		wantCalls int    // the inner authenticator's, so far
	}{
		{name: "first request verifies", cert: writer, wantUser: "writer", wantCalls: 1},
		{name: "second request is kept", cert: writer, wantUser: "writer", wantCalls: 1},
		{name: "kept within the TTL", do: func() { clk.Step(certificateCacheTTL - time.Second) }, cert: writer, wantUser: "writer", wantCalls: 1},
		{name: "verified again past the TTL", do: func() { clk.Step(2 * time.Second) }, cert: writer, wantUser: "writer", wantCalls: 2},
		{name: "a refusal", cert: stranger, wantCalls: 3},
		{name: "is not kept", cert: stranger, wantCalls: 4},
		{name: "no certificate", cert: nil, wantCalls: 5},
		{name: "a reloaded CA bundle verifies again and refuses the old CA's certificate", do: func() { clientCA.load(t, otherCA.CertFile) }, cert: writer, wantCalls: 6},
		{name: "and accepts the new CA's", cert: stranger, wantUser: "stranger", wantCalls: 7},
		// (the inner authenticator verifies on the real clock, so it still accepts)
		{name: "verified again at the certificate's expiry", do: func() { clk.SetTime(stranger.NotAfter) }, cert: stranger, wantUser: "stranger", wantCalls: 8},
	}
	for _, step := range steps {
		if step.do != nil {
			step.do()
		}
		response, ok, _ := authn.AuthenticateRequest(request(step.cert))
		user := ""
		if ok {
			user = response.User.GetName()
		}
		if user != step.wantUser || counted.calls != step.wantCalls {
			t.Errorf("%s: user %q after %d verifications, want %q after %d", step.name, user, counted.calls, step.wantUser, step.wantCalls)
		}
	}
}

// BenchmarkClientCertificate compares a request's authentication with the
// x509 authenticator alone and with its answers kept.
func BenchmarkClientCertificate(b *testing.B) {
	dir := b.TempDir()
	now := time.Now()
	ca, err := pki.EnsureCA(dir, "client-ca", "client-ca", now)
	if err != nil {
		b.Fatal(err)
	}
	pair, err := ca.EnsureCert(dir, "writer", pki.Spec{CommonName: "writer", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, now)
	if err != nil {
		b.Fatal(err)
	}
	kp, err := tls.LoadX509KeyPair(pair.CertFile, pair.KeyFile)
	if err != nil {
		b.Fatal(err)
	}
	cert, err := x509.ParseCertificate(kp.Certificate[0])
	if err != nil {
		b.Fatal(err)
	}
	provider, err := dynamiccertificates.NewDynamicCAContentFromFile("client-ca", ca.CertFile)
	if err != nil {
		b.Fatal(err)
	}
	kept, err := NewAuthenticator(provider)
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/api/v1/events", nil)
	req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	for name, authn := range map[string]authenticator.Request{"verified": kept.(*certificateCache).Request, "kept": kept} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, ok, err := authn.AuthenticateRequest(req); !ok || err != nil {
					b.Fatalf("refused: %v", err)
				}
			}
		})
	}
}
