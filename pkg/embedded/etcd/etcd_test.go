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

package etcd

import (
	"crypto/tls"
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func client(t *testing.T, s *Server, certFile, keyFile string) *clientv3.Client {
	t.Helper()
	tlsConfig, err := transport.TLSInfo{CertFile: certFile, KeyFile: keyFile, TrustedCAFile: s.TrustedCAFile}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.ClientURL}, TLS: tlsConfig, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestStartRestartKeepsDataAndRequiresClientCerts(t *testing.T) {
	dir := t.TempDir()
	first, err := Start(t.Context(), Config{Dir: dir, LogLevel: "error"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(first.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "https" || u.Hostname() != "127.0.0.1" {
		t.Errorf("client URL %s, want https on 127.0.0.1", first.ClientURL)
	}
	c := client(t, first, first.CertFile, first.KeyFile)
	if _, err := c.Put(t.Context(), "/registry/events/default/a", "kept"); err != nil {
		t.Fatal(err)
	}

	// Without a client certificate, the TLS handshake is refused.
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // probing client-cert enforcement only
	if err == nil {
		_, err = conn.Write([]byte("x"))
		if err == nil {
			buf := make([]byte, 1)
			_, err = conn.Read(buf)
		}
		conn.Close()
	}
	if err == nil {
		t.Error("etcd accepted a TLS connection without a client certificate")
	}
	first.Close()

	second, err := Start(t.Context(), Config{Dir: dir, LogLevel: "error"})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	c2 := client(t, second, second.CertFile, second.KeyFile)
	resp, err := c2.Get(t.Context(), "/registry/events/default/a")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "kept" {
		t.Fatalf("after restart got %v, want the value written before", resp.Kvs)
	}
}

func TestStartNeedsADirectory(t *testing.T) {
	if _, err := Start(t.Context(), Config{}); err == nil {
		t.Fatal("Start without a directory succeeded")
	}
}
