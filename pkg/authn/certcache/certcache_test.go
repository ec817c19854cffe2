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

package certcache

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"
)

// testCA signs certificates for the tests, valid from notBefore.
type testCA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

var (
	serialNumber atomic.Int64
	// notBefore is when every test certificate becomes valid; the tests'
	// clocks start an hour later.
	notBefore = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	start     = notBefore.Add(time.Hour)
)

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// newCA makes a self-signed CA valid until notAfter.
func newCA(t testing.TB, name string, notAfter time.Time) *testCA {
	t.Helper()
	key := newKey(t)
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(serialNumber.Add(1)),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	return &testCA{cert: sign(t, template, template, key.Public(), key), key: key}
}

// issue makes a client certificate for name in groups, valid until notAfter.
func (ca *testCA) issue(t testing.TB, name string, groups []string, notAfter time.Time) *x509.Certificate {
	t.Helper()
	template := &x509.Certificate{
		SerialNumber: big.NewInt(serialNumber.Add(1)),
		Subject:      pkix.Name{CommonName: name, Organization: groups},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return sign(t, template, ca.cert, newKey(t).Public(), ca.key)
}

func sign(t testing.TB, template, parent *x509.Certificate, pub crypto.PublicKey, key crypto.Signer) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, template, parent, pub, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func bundlePEM(cas ...*testCA) []byte {
	var b []byte
	for _, ca := range cas {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})...)
	}
	return b
}

// reloadableCA is a CA bundle the test replaces, as a rotated CA file is
// reloaded, verifying at the test's clock.
type reloadableCA struct {
	clock   *clocktesting.FakeClock
	current atomic.Pointer[dynamiccertificates.CAContentProvider]
}

func newReloadableCA(t testing.TB, clk *clocktesting.FakeClock, cas ...*testCA) *reloadableCA {
	r := &reloadableCA{clock: clk}
	r.load(t, cas...)
	return r
}

func (r *reloadableCA) load(t testing.TB, cas ...*testCA) {
	t.Helper()
	p, err := dynamiccertificates.NewStaticCAContent("test-ca", bundlePEM(cas...))
	if err != nil {
		t.Fatal(err)
	}
	r.current.Store(&p)
}

func (r *reloadableCA) Name() string { return "test-ca" }
func (r *reloadableCA) CurrentCABundleContent() []byte {
	return (*r.current.Load()).CurrentCABundleContent()
}
func (r *reloadableCA) VerifyOptions() (x509.VerifyOptions, bool) {
	opts, ok := (*r.current.Load()).VerifyOptions()
	opts.CurrentTime = r.clock.Now()
	return opts, ok
}
func (r *reloadableCA) AddListener(dynamiccertificates.Listener) {}

// servers are the same union of authenticators k8s.io/apiserver builds,
// alone and wrapped in an Authenticator.
type servers struct {
	union, cached authenticator.Request
	// frontProxy is the union's request-header configuration.
	frontProxy *authenticatorfactory.RequestHeaderConfig
}

// newServers builds the union as a delegated server has it: the front proxy
// (when proxyCA is given, allowing the name "front-proxy"), the client
// certificates of clientCA, and anonymous requests.
func newServers(t testing.TB, proxyCA, clientCA dynamiccertificates.CAContentProvider, size int, clk *clocktesting.FakeClock) servers {
	t.Helper()
	config := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                          &apiserver.AnonymousAuthConfig{Enabled: true},
		ClientCertificateCAContentProvider: clientCA,
	}
	if proxyCA != nil {
		config.RequestHeaderConfig = &authenticatorfactory.RequestHeaderConfig{
			UsernameHeaders:     headerrequest.StaticStringSlice{"X-Remote-User"},
			UIDHeaders:          headerrequest.StaticStringSlice{"X-Remote-Uid"},
			GroupHeaders:        headerrequest.StaticStringSlice{"X-Remote-Group"},
			ExtraHeaderPrefixes: headerrequest.StaticStringSlice{"X-Remote-Extra-"},
			CAContentProvider:   proxyCA,
			AllowedClientNames:  headerrequest.StaticStringSlice{"front-proxy"},
		}
	}
	union, _, err := config.New()
	if err != nil {
		t.Fatal(err)
	}
	sources := Sources{FrontProxy: config.RequestHeaderConfig, ClientCA: clientCA}
	return servers{union: union, cached: New(union, sources, size, clk), frontProxy: config.RequestHeaderConfig}
}

// request is a request presenting chain (none if empty), with headers
// given as name, value pairs.
func request(chain []*x509.Certificate, headers ...string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/apis/events.k8s.io/v1/namespaces/default/events", nil)
	if len(chain) > 0 {
		req.TLS = &tls.ConnectionState{PeerCertificates: chain}
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	return req
}

// answer is what an authenticator says of a request, and the request
// headers it leaves (the front proxy's are cleared once read).
type answer struct {
	OK      bool
	Err     bool
	User    string
	UID     string
	Groups  []string
	Extra   map[string][]string
	Headers http.Header
}

func authenticate(authn authenticator.Request, req *http.Request) answer {
	response, ok, err := authn.AuthenticateRequest(req)
	a := answer{OK: ok, Err: err != nil, Headers: req.Header}
	if ok {
		a.User, a.UID, a.Groups, a.Extra = response.User.GetName(), response.User.GetUID(), response.User.GetGroups(), response.User.GetExtra()
	}
	return a
}

func lookupCount(t *testing.T, authenticatorName, result string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(lookups.WithLabelValues(authenticatorName, result))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSameAnswers: for every kind of request the cached authenticator
// answers as k8s.io/apiserver's union does, when it verifies and when it
// answers from what it kept, keeping both kinds of chains or the front
// proxy's only; with distinct CAs for the front proxy and the clients, and
// with one CA for both, where a client's certificate also verifies as a
// front proxy's.
func TestSameAnswers(t *testing.T) {
	end := start.Add(24 * time.Hour)
	proxyCA, clientCA, otherCA := newCA(t, "proxy-ca", end), newCA(t, "client-ca", end), newCA(t, "other-ca", end)
	proxyHeaders := []string{"X-Remote-User", "alice", "X-Remote-Uid", "a-1", "X-Remote-Group", "team", "X-Remote-Extra-Scopes", "view", "X-Other", "kept"}

	for _, setup := range []struct {
		name    string
		proxy   *testCA // CA of the front proxy
		clients *testCA // CA of the client certificates
	}{
		{name: "distinct CAs", proxy: proxyCA, clients: clientCA},
		{name: "one CA for proxy and clients", proxy: clientCA, clients: clientCA},
	} {
		t.Run(setup.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			s := newServers(t, newReloadableCA(t, clk, setup.proxy), newReloadableCA(t, clk, setup.clients), DefaultSize, clk)
			frontProxyOnly := New(s.union, Sources{FrontProxy: s.frontProxy}, DefaultSize, clk)
			proxy := setup.proxy.issue(t, "front-proxy", nil, end)
			otherProxy := setup.proxy.issue(t, "not-the-proxy", nil, end)
			writer := setup.clients.issue(t, "writer", []string{"events-writers"}, end)
			stranger := otherCA.issue(t, "stranger", []string{"events-writers"}, end)
			for _, tc := range []struct {
				name    string
				chain   []*x509.Certificate
				headers []string
			}{
				{name: "front proxy naming a user", chain: []*x509.Certificate{proxy}, headers: proxyHeaders},
				{name: "front proxy naming no user", chain: []*x509.Certificate{proxy}},
				{name: "front proxy's CA, a name not allowed", chain: []*x509.Certificate{otherProxy}, headers: proxyHeaders},
				{name: "client certificate", chain: []*x509.Certificate{writer}},
				{name: "client certificate with a front proxy's headers", chain: []*x509.Certificate{writer}, headers: proxyHeaders},
				{name: "client certificate with its CA in the chain", chain: []*x509.Certificate{writer, setup.clients.cert}},
				{name: "unknown CA", chain: []*x509.Certificate{stranger}, headers: proxyHeaders},
				{name: "no certificate", headers: proxyHeaders},
			} {
				t.Run(tc.name, func(t *testing.T) {
					want := authenticate(s.union, request(tc.chain, tc.headers...))
					for _, cached := range []struct {
						name  string
						authn authenticator.Request
					}{{"both kept", s.cached}, {"front proxy kept (a delegated server)", frontProxyOnly}} {
						for _, attempt := range []string{"first", "second", "third"} {
							if diff := cmp.Diff(want, authenticate(cached.authn, request(tc.chain, tc.headers...))); diff != "" {
								t.Errorf("%s, %s request: cached answer differs from k8s.io/apiserver's (-want +got):\n%s", cached.name, attempt, diff)
							}
						}
					}
				})
			}
		})
	}
}

// TestKeptVerifications: what is verified once is kept, by authenticator;
// a certificate is refused once it expires, or its CA does, though it was
// kept; a reloaded CA bundle verifies again and refuses the old CA's
// certificates; a refusal is never kept; nothing is kept past MaxAge.
func TestKeptVerifications(t *testing.T) {
	end := start.Add(24 * time.Hour)
	proxyCA, clientCA, newClientCA := newCA(t, "proxy-ca", end), newCA(t, "client-ca", end), newCA(t, "new-client-ca", end)
	shortCA := newCA(t, "short-lived-ca", start.Add(2*time.Hour))
	clk := clocktesting.NewFakeClock(start)
	proxyBundle, clientBundle := newReloadableCA(t, clk, proxyCA), newReloadableCA(t, clk, clientCA, shortCA)
	s := newServers(t, proxyBundle, clientBundle, DefaultSize, clk)

	proxy := proxyCA.issue(t, "front-proxy", nil, end)
	writer := clientCA.issue(t, "writer", []string{"events-writers"}, end)
	shortLived := clientCA.issue(t, "short-lived", nil, start.Add(time.Hour+time.Minute))
	underShortCA := shortCA.issue(t, "under-short-ca", nil, end)
	newWriter := newClientCA.issue(t, "new-writer", nil, end)
	proxyHeaders := []string{"X-Remote-User", "alice"}

	type counts struct{ ProxyHits, ProxyMisses, ClientHits, ClientMisses float64 }
	read := func() counts {
		return counts{
			ProxyHits: lookupCount(t, "front-proxy", "hit"), ProxyMisses: lookupCount(t, "front-proxy", "miss"),
			ClientHits: lookupCount(t, "client-certificate", "hit"), ClientMisses: lookupCount(t, "client-certificate", "miss"),
		}
	}
	for _, step := range []struct {
		name     string
		do       func()
		chain    []*x509.Certificate
		headers  []string
		wantUser string // "" when refused
		want     counts // lookups in this step
	}{
		{name: "a front proxy is verified", chain: []*x509.Certificate{proxy}, headers: proxyHeaders, wantUser: "alice", want: counts{ProxyMisses: 1}},
		{name: "and kept", chain: []*x509.Certificate{proxy}, headers: proxyHeaders, wantUser: "alice", want: counts{ProxyHits: 1}},
		{name: "the headers are read on each request", chain: []*x509.Certificate{proxy}, headers: []string{"X-Remote-User", "bob"}, wantUser: "bob", want: counts{ProxyHits: 1}},
		{name: "a client certificate is verified", chain: []*x509.Certificate{writer}, wantUser: "writer", want: counts{ProxyMisses: 1, ClientMisses: 1}},
		{name: "and kept", chain: []*x509.Certificate{writer}, wantUser: "writer", want: counts{ProxyMisses: 1, ClientHits: 1}},
		{name: "kept within MaxAge", do: func() { clk.Step(MaxAge - time.Second) }, chain: []*x509.Certificate{writer}, wantUser: "writer", want: counts{ProxyMisses: 1, ClientHits: 1}},
		{name: "verified again past MaxAge", do: func() { clk.Step(time.Second) }, chain: []*x509.Certificate{writer}, wantUser: "writer", want: counts{ProxyMisses: 1, ClientMisses: 1}},
		{name: "a certificate about to expire is kept", chain: []*x509.Certificate{shortLived}, wantUser: "short-lived", want: counts{ProxyMisses: 1, ClientMisses: 1}},
		{name: "until it expires", do: func() { clk.SetTime(shortLived.NotAfter) }, chain: []*x509.Certificate{shortLived}, wantUser: "short-lived", want: counts{ProxyMisses: 1, ClientMisses: 1}},
		{name: "and is refused after", do: func() { clk.SetTime(shortLived.NotAfter.Add(time.Second)) }, chain: []*x509.Certificate{shortLived}, want: counts{ProxyMisses: 1, ClientMisses: 1}},
		{name: "a certificate of a CA about to expire is kept", do: func() { clk.SetTime(shortCA.cert.NotAfter.Add(-time.Minute)) }, chain: []*x509.Certificate{underShortCA}, wantUser: "under-short-ca", want: counts{ProxyMisses: 1, ClientMisses: 1}},
		{name: "until its CA expires", do: func() { clk.Step(time.Minute) }, chain: []*x509.Certificate{underShortCA}, wantUser: "under-short-ca", want: counts{ProxyMisses: 1, ClientMisses: 1}},
		{name: "and is refused after", do: func() { clk.Step(time.Second) }, chain: []*x509.Certificate{underShortCA}, want: counts{ProxyMisses: 1, ClientMisses: 1}},
		{name: "a certificate of an unknown CA is refused", chain: []*x509.Certificate{newWriter}, want: counts{ProxyMisses: 1, ClientMisses: 1}},
		{name: "and its refusal is not kept", chain: []*x509.Certificate{newWriter}, want: counts{ProxyMisses: 1, ClientMisses: 1}},
		{name: "the writer is verified again (past MaxAge)", chain: []*x509.Certificate{writer}, wantUser: "writer", want: counts{ProxyMisses: 1, ClientMisses: 1}},
		{name: "a reloaded bundle refuses the old CA's certificate", do: func() { clientBundle.load(t, newClientCA) }, chain: []*x509.Certificate{writer}, want: counts{ProxyMisses: 1, ClientMisses: 1}},
		{name: "and accepts the new CA's", chain: []*x509.Certificate{newWriter}, wantUser: "new-writer", want: counts{ProxyMisses: 1, ClientMisses: 1}},
		{name: "the bundle back: its verification is still kept", do: func() { clientBundle.load(t, clientCA, shortCA) }, chain: []*x509.Certificate{writer}, wantUser: "writer", want: counts{ProxyMisses: 1, ClientHits: 1}},
		{name: "a reloaded proxy CA refuses the proxy", do: func() { proxyBundle.load(t, newClientCA) }, chain: []*x509.Certificate{proxy}, headers: proxyHeaders, want: counts{ProxyMisses: 1, ClientMisses: 1}},
	} {
		if step.do != nil {
			step.do()
		}
		before := read()
		got := authenticate(s.cached, request(step.chain, step.headers...))
		after := read()
		delta := counts{after.ProxyHits - before.ProxyHits, after.ProxyMisses - before.ProxyMisses, after.ClientHits - before.ClientHits, after.ClientMisses - before.ClientMisses}
		if got.User != step.wantUser {
			t.Errorf("%s: user %q, want %q", step.name, got.User, step.wantUser)
		}
		if diff := cmp.Diff(step.want, delta); diff != "" {
			t.Errorf("%s: lookups (-want +got):\n%s", step.name, diff)
		}
		if want := authenticate(s.union, request(step.chain, step.headers...)); !cmp.Equal(want, got) {
			t.Errorf("%s: cached answer differs from k8s.io/apiserver's (-want +got):\n%s", step.name, cmp.Diff(want, got))
		}
	}
}

// TestBound: the cache keeps at most its size, dropping the least recently
// used, and counts what it drops.
func TestBound(t *testing.T) {
	end := start.Add(24 * time.Hour)
	ca := newCA(t, "client-ca", end)
	clk := clocktesting.NewFakeClock(start)
	const size = 2
	s := newServers(t, nil, newReloadableCA(t, clk, ca), size, clk)
	cached := s.cached.(*Authenticator)
	evicted := func() float64 {
		v, err := testutil.GetCounterMetricValue(evictions)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := evicted()
	var certs []*x509.Certificate
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		c := ca.issue(t, name, nil, end)
		certs = append(certs, c)
		if got := authenticate(cached, request([]*x509.Certificate{c})); got.User != name {
			t.Fatalf("user %q, want %q", got.User, name)
		}
		if n := cached.verified.Len(); n > size {
			t.Fatalf("%d kept, want at most %d", n, size)
		}
	}
	if got, want := evicted()-before, float64(len(certs)-size); got != want {
		t.Errorf("%v evictions, want %v", got, want)
	}
	hits := lookupCount(t, "client-certificate", "hit")
	authenticate(cached, request(certs[len(certs)-1:]))
	authenticate(cached, request(certs[:1]))
	if got := lookupCount(t, "client-certificate", "hit") - hits; got != 1 {
		t.Errorf("%v hits, want 1: the newest kept, the oldest dropped", got)
	}
}

// BenchmarkAuthenticate is the authentication of one request by
// k8s.io/apiserver's union alone and wrapped in an Authenticator, as the
// server wires them: a front proxy's request to a delegated server (whose
// union also has a client CA), and a client certificate's to a standalone
// one.
func BenchmarkAuthenticate(b *testing.B) {
	end := start.Add(24 * time.Hour)
	proxyCA, clientCA := newCA(b, "proxy-ca", end), newCA(b, "client-ca", end)
	clk := clocktesting.NewFakeClock(start)
	delegated := newServers(b, newReloadableCA(b, clk, proxyCA), newReloadableCA(b, clk, clientCA), DefaultSize, clk)
	delegated.cached = New(delegated.union, Sources{FrontProxy: delegated.frontProxy}, DefaultSize, clk) // as the server wires it
	standalone := newServers(b, nil, newReloadableCA(b, clk, clientCA), DefaultSize, clk)
	for _, tc := range []struct {
		name    string
		servers servers
		chain   []*x509.Certificate
		headers []string
	}{
		{name: "front-proxy", servers: delegated, chain: []*x509.Certificate{proxyCA.issue(b, "front-proxy", nil, end)},
			headers: []string{"X-Remote-User", "alice", "X-Remote-Group", "team"}},
		{name: "client-certificate", servers: standalone, chain: []*x509.Certificate{clientCA.issue(b, "writer", []string{"events-writers"}, end)}},
	} {
		for _, server := range []struct {
			name  string
			authn authenticator.Request
		}{{"verified", tc.servers.union}, {"kept", tc.servers.cached}} {
			b.Run(tc.name+"/"+server.name, func(b *testing.B) {
				req := request(tc.chain, tc.headers...)
				headers := req.Header.Clone()
				b.ReportAllocs()
				for b.Loop() {
					req.Header = headers.Clone() // the front proxy's are cleared once read
					if _, ok, err := server.authn.AuthenticateRequest(req); !ok || err != nil {
						b.Fatalf("refused: %v", err)
					}
				}
			})
		}
	}
}
