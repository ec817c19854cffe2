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

// Package certcache keeps the successful verifications of client
// certificate chains, so that the requests of a chain already verified skip
// the signature checks k8s.io/apiserver's authenticators repeat on every
// request (about a tenth of a create's CPU; kube-apiserver has no such
// cache, kubernetes/kubernetes#90533).
//
// k8s.io/apiserver has no seam inside its authenticators: the x509
// authenticator and the request-header (front-proxy) one verify within
// AuthenticateRequest, from verify options only, and
// authenticatorfactory.DelegatingAuthenticatorConfig.New builds them inside
// the union it returns. So an Authenticator wraps that union. For a request
// with a client certificate it runs the same k8s.io/apiserver authenticators
// in the same order (front proxy, then client certificate) on options it
// reads once, keeps the chains they verified, answers from what it kept, and
// hands every request it does not answer to the union, which then answers as
// it would have alone.
package certcache

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/util/cert"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
)

const (
	// DefaultSize is how many verified chains an Authenticator keeps by
	// default: the front proxies and the clients of one server are far
	// fewer.
	DefaultSize = 1024
	// MaxAge is the longest a verification is kept, whatever the
	// certificates' expiry. It bounds how long a chain goes unseen by
	// k8s.io/apiserver's apiserver_client_certificate_expiration_seconds,
	// which the x509 authenticator observes only when it runs.
	MaxAge = 5 * time.Minute
)

// Sources are the certificate authentications of the union an
// Authenticator wraps, as authenticatorfactory.DelegatingAuthenticatorConfig
// configures them; nil for one the union does not have, or whose CA the
// caller cannot hand over (the union then verifies those requests itself).
// The union tries the front proxy first, so ClientCA without FrontProxy is
// for a union without a front proxy only: a certificate may verify as both.
type Sources struct {
	// FrontProxy authenticates a front proxy's certificate (the proxy CA
	// and its allowed names), then the user its request headers name.
	FrontProxy *authenticatorfactory.RequestHeaderConfig
	// ClientCA authenticates a client certificate's subject as the user.
	ClientCA dynamiccertificates.CAContentProvider
}

// Authenticator answers requests with a client certificate from the
// chains it has seen verified. An answer is the one the wrapped union gives:
// a front proxy's verified chain still has its request headers read on every
// request; a client certificate's user is kept with the chain. A chain is
// kept under the digest of its certificates, the CA bundle it verified
// against and, for a front proxy, the allowed names; a reloaded bundle is
// another key. It is kept until the earliest expiry of its certificates and
// of the bundle's CAs it may chain to, and at most MaxAge. A refusal is
// never kept.
type Authenticator struct {
	union      authenticator.Request
	frontProxy *frontProxy
	clientCA   *caBundle
	clock      clock.PassiveClock
	verified   *lru.Cache
	metrics    *metricSet
}

// frontProxy is the request-header authentication: the proxy's CA, its
// allowed names, and the headers read once the proxy is verified.
type frontProxy struct {
	ca           *caBundle
	allowedNames x509request.StringSliceProvider
	// headers reads the user from the request headers, with
	// system:authenticated added as the union adds it.
	headers authenticator.Request
}

// New wraps union, the authenticator
// authenticatorfactory.DelegatingAuthenticatorConfig.New built with sources
// (and anything else: tokens, anonymous), in an Authenticator keeping at
// most size chains. With no sources it returns union itself.
func New(union authenticator.Request, sources Sources, size int, clk clock.PassiveClock) authenticator.Request {
	if sources.FrontProxy == nil && sources.ClientCA == nil {
		return union
	}
	registerMetrics()
	a := &Authenticator{union: union, clock: clk, metrics: newMetricSet()}
	a.verified = lru.NewWithEvictionFunc(size, func(lru.Key, any) { a.metrics.evictions.Inc() })
	if fp := sources.FrontProxy; fp != nil {
		a.frontProxy = &frontProxy{
			ca:           &caBundle{provider: fp.CAContentProvider},
			allowedNames: fp.AllowedClientNames,
			headers: group.NewAuthenticatedGroupAdder(headerrequest.NewDynamic(
				fp.UsernameHeaders, fp.UIDHeaders, fp.GroupHeaders, fp.ExtraHeaderPrefixes)),
		}
	}
	if sources.ClientCA != nil {
		a.clientCA = &caBundle{provider: sources.ClientCA}
	}
	return a
}

// AuthenticateRequest answers as the union would: the front proxy first,
// then the client certificate, each from a kept verification or by
// verifying now; whatever neither answers, the union answers.
func (a *Authenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return a.union.AuthenticateRequest(req)
	}
	chain := chainDigest(req.TLS.PeerCertificates)
	if a.frontProxy != nil {
		if response, ok := a.viaFrontProxy(req, chain); ok {
			return response, true, nil
		}
	}
	if a.clientCA != nil {
		if response, ok := a.viaClientCertificate(req, chain); ok {
			return response, true, nil
		}
	}
	// Refused, not verifiable, or a verified front proxy that names no
	// user: the union tries every authenticator again, and the rest.
	return a.union.AuthenticateRequest(req)
}

// viaFrontProxy is the request-header authenticator's answer, if it has
// one: the user its headers name, once the proxy's chain is verified.
func (a *Authenticator) viaFrontProxy(req *http.Request, chain [sha256.Size]byte) (*authenticator.Response, bool) {
	fp := a.frontProxy
	bundle := fp.ca.current()
	if bundle == nil {
		return nil, false
	}
	names := fp.allowedNames.Value()
	k := key{source: frontProxySource, chain: chain, ca: bundle.digest, names: namesDigest(names)}
	now := a.clock.Now()
	if _, ok := a.lookup(k, now); ok {
		a.metrics.frontProxyHits.Inc()
		response, ok, err := fp.headers.AuthenticateRequest(req)
		return response, ok && err == nil
	}
	a.metrics.frontProxyMisses.Inc()
	opts, ok := fp.ca.provider.VerifyOptions()
	if !ok {
		return nil, false
	}
	// k8s.io/apiserver's verifier, on the options and names of the key: it
	// reads the headers only once the chain is verified and its name allowed.
	verified := false
	headers := authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		verified = true
		return fp.headers.AuthenticateRequest(req)
	})
	verifier := x509request.NewDynamicCAVerifier(x509request.StaticVerifierFn(opts), headers, x509request.StaticStringSlice(names))
	response, ok, err := verifier.AuthenticateRequest(req)
	if verified {
		a.keep(k, entry{}, fp.ca, bundle, req.TLS.PeerCertificates, now)
	}
	return response, ok && err == nil
}

// viaClientCertificate is the x509 authenticator's answer, if it has one:
// the user the certificate's subject names.
func (a *Authenticator) viaClientCertificate(req *http.Request, chain [sha256.Size]byte) (*authenticator.Response, bool) {
	bundle := a.clientCA.current()
	if bundle == nil {
		return nil, false
	}
	k := key{source: clientCertificateSource, chain: chain, ca: bundle.digest}
	now := a.clock.Now()
	if e, ok := a.lookup(k, now); ok {
		a.metrics.clientCertificateHits.Inc()
		response := *e.response
		return &response, true
	}
	a.metrics.clientCertificateMisses.Inc()
	opts, ok := a.clientCA.provider.VerifyOptions()
	if !ok {
		return nil, false
	}
	x509Authenticator := group.NewAuthenticatedGroupAdder(
		x509request.NewDynamic(x509request.StaticVerifierFn(opts), x509request.CommonNameUserConversion))
	response, ok, err := x509Authenticator.AuthenticateRequest(req)
	if err != nil || !ok {
		return nil, false
	}
	kept := *response
	a.keep(k, entry{response: &kept}, a.clientCA, bundle, req.TLS.PeerCertificates, now)
	return response, true
}

// key identifies a verification: by which authenticator, of which chain,
// against which CA bundle, with which allowed names.
type key struct {
	source source
	chain  [sha256.Size]byte
	ca     [sha256.Size]byte
	names  [sha256.Size]byte
}

type source uint8

const (
	frontProxySource source = iota
	clientCertificateSource
)

// entry is a kept verification: until when, and the client certificate's
// answer (none for a front proxy, whose answer is in each request's headers).
type entry struct {
	expires  time.Time
	response *authenticator.Response
}

func (a *Authenticator) lookup(k key, now time.Time) (entry, bool) {
	v, ok := a.verified.Get(k)
	if !ok {
		return entry{}, false
	}
	e := v.(entry)
	return e, now.Before(e.expires)
}

// keep keeps e under k until the chain or a CA of bundle it may chain to
// expires, at most MaxAge, unless the provider's bundle changed while it
// was verified (the verification may then be the new bundle's).
func (a *Authenticator) keep(k key, e entry, ca *caBundle, bundle *bundleState, chain []*x509.Certificate, now time.Time) {
	if ca.current() != bundle {
		return
	}
	e.expires = now.Add(MaxAge)
	for _, c := range chain {
		if c.NotAfter.Before(e.expires) {
			e.expires = c.NotAfter
		}
	}
	if caExpiry, ok := bundle.issuersExpiry(chain); ok && caExpiry.Before(e.expires) {
		e.expires = caExpiry
	}
	if now.Before(e.expires) {
		a.verified.Add(k, e)
	}
}

// chainDigest digests the certificates a client presented (DER is
// self-delimiting: no two chains have the same concatenation).
func chainDigest(chain []*x509.Certificate) [sha256.Size]byte {
	h := sha256.New()
	for _, c := range chain {
		h.Write(c.Raw)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// namesDigest digests a list of names, each ended by a NUL (which a name
// cannot hold).
func namesDigest(names []string) [sha256.Size]byte {
	h := sha256.New()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// caBundle is a CA provider with the digest and the parsed CAs of its
// current bundle, computed again only when the bundle's content changes.
type caBundle struct {
	provider dynamiccertificates.CAContentProvider
	state    atomic.Pointer[bundleState]
}

type bundleState struct {
	content []byte
	digest  [sha256.Size]byte
	cas     []*x509.Certificate
}

// current is the state of the provider's current bundle, nil if it has none
// (or one that does not parse, which no provider serves).
func (b *caBundle) current() *bundleState {
	content := b.provider.CurrentCABundleContent()
	if len(content) == 0 {
		return nil
	}
	if s := b.state.Load(); s != nil && bytes.Equal(s.content, content) {
		return s
	}
	cas, err := cert.ParseCertsPEM(content)
	if err != nil {
		return nil
	}
	s := &bundleState{content: bytes.Clone(content), digest: sha256.Sum256(content), cas: cas}
	b.state.Store(s)
	return s
}

// issuersExpiry is the earliest expiry of the bundle's CAs that may be in a
// chain verified from chain: its certificates' issuers, and theirs in turn.
// False if there is none.
func (s *bundleState) issuersExpiry(chain []*x509.Certificate) (time.Time, bool) {
	var earliest time.Time
	found := false
	issuers := make([][]byte, 0, len(chain))
	for _, c := range chain {
		issuers = append(issuers, c.RawIssuer)
	}
	used := make([]bool, len(s.cas))
	for grew := true; grew; {
		grew = false
		for i, ca := range s.cas {
			if used[i] || !containsBytes(issuers, ca.RawSubject) {
				continue
			}
			used[i], grew = true, true
			if !found || ca.NotAfter.Before(earliest) {
				earliest, found = ca.NotAfter, true
			}
			issuers = append(issuers, ca.RawIssuer)
		}
	}
	return earliest, found
}

func containsBytes(list [][]byte, b []byte) bool {
	for _, x := range list {
		if bytes.Equal(x, b) {
			return true
		}
	}
	return false
}
