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

package framework

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// ProxiedRequest is one request a CountingProxy received.
type ProxiedRequest struct {
	Method string
	// Path is the URL path, Query its raw query.
	Path, Query string
	// Body is the request body of PATCH requests (nil otherwise).
	Body []byte
	// At is the proxy's clock reading when the request arrived.
	At time.Time
	// Status is the response's status code (0 while in flight); 429 when
	// the proxy throttled the request itself.
	Status int
}

// CountingProxy is a plain-HTTP front of an API server that records every
// request it receives and forwards it with the upstream configuration's
// credentials, or answers 429 Too Many Requests with Retry-After itself
// while Throttle is on: the server side of a client under test, counted
// where the requests arrive rather than in the client.
type CountingProxy struct {
	server *httptest.Server
	now    func() time.Time

	mu         sync.Mutex
	requests   []ProxiedRequest
	retryAfter time.Duration // > 0 while throttling
}

// StartCountingProxy starts a proxy to upstream and stops it when the test
// ends. now stamps the requests (a fake clock's Now, say; time.Now if nil).
func StartCountingProxy(t testing.TB, upstream *rest.Config, now func() time.Time) *CountingProxy {
	t.Helper()
	if now == nil {
		now = time.Now
	}
	target, err := url.Parse(upstream.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &CountingProxy{now: now}
	forward := httputil.NewSingleHostReverseProxy(target)
	forward.Transport = transport
	p.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, ok := p.record(r)
		if !ok {
			http.Error(w, "reading the request body failed", http.StatusBadRequest)
			return
		}
		status := &statusRecorder{ResponseWriter: w}
		if !p.throttle(status) {
			forward.ServeHTTP(status, r)
		}
		p.mu.Lock()
		p.requests[i].Status = status.code
		p.mu.Unlock()
	}))
	t.Cleanup(p.server.Close)
	return p
}

// record notes r and returns its index; false if its body could not be read.
func (p *CountingProxy) record(r *http.Request) (int, bool) {
	req := ProxiedRequest{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery}
	if r.Method == http.MethodPatch {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return 0, false
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		req.Body = body
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	req.At = p.now()
	p.requests = append(p.requests, req)
	return len(p.requests) - 1, true
}

// statusRecorder remembers the status code written.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Flush lets watch responses through.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// throttle answers 429 with Retry-After and a Status body while Throttle is on.
func (p *CountingProxy) throttle(w http.ResponseWriter) bool {
	p.mu.Lock()
	retryAfter := p.retryAfter
	p.mu.Unlock()
	if retryAfter <= 0 {
		return false
	}
	seconds := int(retryAfter / time.Second)
	status := apierrors.NewTooManyRequests("throttled by the test proxy", seconds).ErrStatus
	status.Kind, status.APIVersion = "Status", "v1"
	body, _ := json.Marshal(status)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", strconv.Itoa(seconds))
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(body)
	return true
}

// Throttle makes the proxy answer every request with 429 and
// Retry-After: retryAfter (whole seconds); 0 forwards again.
func (p *CountingProxy) Throttle(retryAfter time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.retryAfter = retryAfter
}

// Requests returns what the proxy received so far, in order.
func (p *CountingProxy) Requests() []ProxiedRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ProxiedRequest(nil), p.requests...)
}

// Config reaches the upstream server through the proxy, without
// client-side rate limiting.
func (p *CountingProxy) Config() *rest.Config {
	return &rest.Config{Host: p.server.URL, QPS: -1, Burst: -1}
}
