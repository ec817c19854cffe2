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
	"crypto/sha256"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/utils/clock"
)

const (
	// certificateCacheSize bounds how many client certificates' answers
	// are kept: a standalone server has a few clients.
	certificateCacheSize = 1024
	// certificateCacheTTL is the longest an answer is kept; never past the
	// certificate chain's expiry.
	certificateCacheTTL = 5 * time.Minute
)

// certificateCache keeps the answers of a client-certificate authenticator
// by certificate chain and client CA bundle: the TLS handshake verifies a
// client certificate once per connection, the x509 authenticator again on
// every request (a tenth of a create's CPU). An answer depends on the
// chain and the CA bundle alone, so it is kept, keyed by both, until the
// chain's first expiry or certificateCacheTTL; a reloaded CA bundle is a
// new key. Requests without a certificate, refusals and anonymous answers
// are not kept.
type certificateCache struct {
	authenticator.Request
	clientCA dynamiccertificates.CAContentProvider
	clock    clock.PassiveClock
	answers  *cache.LRUExpireCache
}

func newCertificateCache(authn authenticator.Request, clientCA dynamiccertificates.CAContentProvider, clk clock.Clock) *certificateCache {
	return &certificateCache{Request: authn, clientCA: clientCA, clock: clk, answers: cache.NewLRUExpireCacheWithClock(certificateCacheSize, clk)}
}

func (c *certificateCache) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return c.Request.AuthenticateRequest(req)
	}
	key := c.key(req)
	if answer, ok := c.answers.Get(key); ok {
		response := *answer.(*authenticator.Response)
		return &response, true, nil
	}
	response, ok, err := c.Request.AuthenticateRequest(req)
	if err != nil || !ok || response.User.GetName() == user.Anonymous {
		return response, ok, err
	}
	ttl := certificateCacheTTL
	for _, cert := range req.TLS.PeerCertificates {
		ttl = min(ttl, cert.NotAfter.Sub(c.clock.Now()))
	}
	if ttl > 0 {
		kept := *response
		c.answers.Add(key, &kept, ttl)
	}
	return response, ok, err
}

// key digests the client CA bundle and the certificate chain the client
// presented.
func (c *certificateCache) key(req *http.Request) [sha256.Size]byte {
	h := sha256.New()
	h.Write(c.clientCA.CurrentCABundleContent())
	for _, cert := range req.TLS.PeerCertificates {
		h.Write(cert.Raw) // DER: each carries its length
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}
