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

package victorialogs

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/pkg/archive"
)

// testPKI is a CA, a serving certificate it signed for 127.0.0.1, and a
// basic authentication password, in files, as the manifests mount them.
type testPKI struct {
	dir                       string
	ca                        *x509.Certificate
	caKey                     *ecdsa.PrivateKey
	caFile, certFile, keyFile string
	username, passwordFile    string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir(), username: "events-apiserver"}
	p.ca, p.caKey = newCA(t, "archive-ca")
	p.caFile = filepath.Join(p.dir, "ca.crt")
	writeFile(t, p.caFile, pemCert(p.ca))
	p.certFile, p.keyFile = filepath.Join(p.dir, "tls.crt"), filepath.Join(p.dir, "tls.key")
	p.issue(t, p.certFile, p.keyFile, x509.ExtKeyUsageServerAuth)
	p.passwordFile = filepath.Join(p.dir, "password")
	// A trailing newline, as `kubectl create secret --from-file` keeps it.
	writeFile(t, p.passwordFile, []byte("s3cret-archive-password\n"))
	return p
}

// serverAuth is victoria-logs' flags for https and basic authentication
// with the PKI's files, the password re-read from its file.
func (p *testPKI) serverAuth(*testing.T) []string {
	return []string{
		"-tls", "-tlsCertFile=" + p.certFile, "-tlsKeyFile=" + p.keyFile,
		"-httpAuth.username=" + p.username, "-httpAuth.password=file://" + p.passwordFile,
	}
}

func (p *testPKI) roots() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	return pool
}

func (p *testPKI) clientTLS() TLSConfig { return TLSConfig{CAFile: p.caFile} }

func (p *testPKI) clientAuth() AuthConfig {
	return AuthConfig{Username: p.username, PasswordFile: p.passwordFile}
}

// issue writes a certificate the CA signs, for 127.0.0.1 and localhost.
func (p *testPKI) issue(t *testing.T, certFile, keyFile string, usage x509.ExtKeyUsage) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "events-victorialogs"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	writeFile(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
}

func newCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func pemCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// writeFile replaces path's contents at once, as the kubelet swaps a
// Secret volume's files.
func writeFile(t *testing.T, path string, content []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, content, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// expectUnauthorized checks that a request without credentials to path on
// n is refused with 401.
func expectUnauthorized(t *testing.T, n *vlNode, path string) {
	t.Helper()
	client := n.healthClient()
	defer client.CloseIdleConnections()
	resp, err := client.Post(n.url()+path, "application/x-www-form-urlencoded", strings.NewReader("query=*"))
	if err != nil {
		t.Fatalf("POST %s on %s: %v", path, n.addr, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST %s on %s without credentials: %s, want 401 Unauthorized", path, n.addr, resp.Status)
	}
}

func testRecord(uid string, at time.Time) archive.Record {
	return archive.Record{
		UID: uid, Namespace: "ns", Name: uid, ResourceVersion: "1", Time: at,
		Fields: map[string]string{"metadata.name": uid, "metadata.namespace": "ns"}, Object: []byte{0x0a, 0x01},
	}
}

// TestSecuredSingleNode: victoria-logs serving https with basic
// authentication takes appends and queries from a client with its CA and
// credentials, and refuses every other client with an error that names
// the cause; without credentials, every path but the health checks
// answers 401, /internal/* included.
func TestSecuredSingleNode(t *testing.T) {
	bin := victoriaLogsBinary(t)
	pki := newTestPKI(t)
	node := startNodeWithRoots(t, bin, pki.roots(), append(storageArgs(t), pki.serverAuth(t)...)...)
	ctx := context.Background()
	now := time.Now().Add(-time.Minute)
	window := archive.Query{Since: now.Add(-time.Hour), Until: now.Add(time.Hour), Limit: 10}

	t.Run("with the CA and the credentials", func(t *testing.T) {
		engine := openSecuredService(t, node.url(), "", pki.clientTLS(), pki.clientAuth())
		if err := engine.Archive.Append(ctx, []archive.Record{testRecord("uid-secured", now)}); err != nil {
			t.Fatal(err)
		}
		if err := engine.Archive.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		page, err := engine.Archive.Query(ctx, window)
		if err != nil {
			t.Fatal(err)
		}
		var uids []string
		for _, r := range page.Records {
			uids = append(uids, r.UID)
		}
		if diff := cmp.Diff([]string{"uid-secured"}, uids); diff != "" {
			t.Errorf("queried UIDs (-want +got):\n%s", diff)
		}
	})

	otherCA, _ := newCA(t, "another-ca")
	otherCAFile := filepath.Join(t.TempDir(), "other-ca.crt")
	writeFile(t, otherCAFile, pemCert(otherCA))
	wrongPassword := filepath.Join(t.TempDir(), "password")
	writeFile(t, wrongPassword, []byte("not-the-password"))
	for _, tc := range []struct {
		name string
		tls  TLSConfig
		auth AuthConfig
		want string
	}{
		{
			name: "no credentials",
			tls:  pki.clientTLS(),
			want: "401 Unauthorized: the service requires credentials and none are configured",
		},
		{
			name: "a wrong password",
			tls:  pki.clientTLS(),
			auth: AuthConfig{Username: pki.username, PasswordFile: wrongPassword},
			want: `401 Unauthorized: the service refused the basic authentication of user "events-apiserver" with the password in ` + wrongPassword,
		},
		{
			name: "a wrong user",
			tls:  pki.clientTLS(),
			auth: AuthConfig{Username: "someone", PasswordFile: pki.passwordFile},
			want: `401 Unauthorized: the service refused the basic authentication of user "someone"`,
		},
		{
			name: "a bearer token, which VictoriaLogs does not check",
			tls:  pki.clientTLS(),
			auth: AuthConfig{BearerTokenFile: pki.passwordFile},
			want: "401 Unauthorized: the service refused the bearer token in " + pki.passwordFile,
		},
		{
			name: "another CA",
			tls:  TLSConfig{CAFile: otherCAFile},
			auth: pki.clientAuth(),
			want: "the archive service's certificate does not verify against the CA in " + otherCAFile + ": x509: certificate signed by unknown authority",
		},
		{
			name: "the system's roots",
			tls:  TLSConfig{ServerName: "localhost"},
			auth: pki.clientAuth(),
			want: "x509: certificate signed by unknown authority",
		},
		{
			name: "a name the certificate lacks",
			tls:  TLSConfig{CAFile: pki.caFile, ServerName: "events-victorialogs.example"},
			auth: pki.clientAuth(),
			want: "x509: certificate is valid for localhost, not events-victorialogs.example",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			engine := openSecuredService(t, node.url(), "", tc.tls, tc.auth)
			for _, op := range []struct {
				name string
				call func() error
			}{
				{"append", func() error { return engine.Archive.Append(ctx, []archive.Record{testRecord("uid-refused", now)}) }},
				{"query", func() error { _, err := engine.Archive.Query(ctx, window); return err }},
			} {
				err := op.call()
				if !errors.Is(err, archive.ErrUnavailable) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: got %v, want archive.ErrUnavailable saying %q", op.name, err, tc.want)
				} else {
					t.Logf("%s: %v", op.name, err)
				}
			}
		})
	}

	t.Run("every path but the health checks needs credentials", func(t *testing.T) {
		for _, path := range []string{
			"/insert/jsonline", "/select/logsql/query", "/internal/force_flush", "/internal/force_merge",
			"/internal/select/query", "/internal/insert", "/internal/partition/list", "/metrics", "/flags",
		} {
			expectUnauthorized(t, node, path)
		}
		resp, err := node.healthClient().Get(node.url() + "/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /health without credentials: %s, want 200 (the probes')", resp.Status)
		}
	})
}

// TestSecuredRotation: the client reads its password and CA files again,
// victoria-logs its password and certificate files, so rotated Secrets
// take effect on both sides without a restart; between the two sides'
// updates the client's errors say the credentials were refused.
func TestSecuredRotation(t *testing.T) {
	bin := victoriaLogsBinary(t)
	pki := newTestPKI(t)
	serverPassword := filepath.Join(t.TempDir(), "password")
	writeFile(t, serverPassword, []byte("first-password"))
	clientPassword := filepath.Join(t.TempDir(), "password")
	writeFile(t, clientPassword, []byte("first-password\n"))
	clientCA := filepath.Join(t.TempDir(), "ca.crt")
	writeFile(t, clientCA, pemCert(pki.ca))
	args := append(storageArgs(t), "-tls", "-tlsCertFile="+pki.certFile, "-tlsKeyFile="+pki.keyFile,
		"-httpAuth.username="+pki.username, "-httpAuth.password=file://"+serverPassword)
	node := startNodeWithRoots(t, bin, pki.roots(), args...)
	engine := openSecuredService(t, node.url(), "", TLSConfig{CAFile: clientCA}, AuthConfig{Username: pki.username, PasswordFile: clientPassword})
	ctx := context.Background()
	now := time.Now()
	query := func() error {
		_, err := engine.Archive.Query(ctx, archive.Query{Since: now.Add(-time.Hour), Until: now.Add(time.Hour), Limit: 1})
		return err
	}
	// waitFor polls query until its error satisfies done.
	waitFor := func(what string, done func(error) bool) {
		t.Helper()
		var last error
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			// New connections, so that a rotated certificate is seen.
			_ = engine.Archive.Close()
			last = query()
			return done(last), nil
		}); err != nil {
			t.Fatalf("%s: last query: %v", what, last)
		}
	}
	if err := query(); err != nil {
		t.Fatal(err)
	}

	writeFile(t, serverPassword, []byte("second-password"))
	waitFor("the service's password rotated", func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "the service refused the basic authentication")
	})
	writeFile(t, clientPassword, []byte("second-password\n"))
	waitFor("the client's password rotated too", func(err error) bool { return err == nil })

	// A new CA: the service's certificate first, then the client's CA
	// file, as a CA rotation reaches the two pods.
	newPKI := newTestPKI(t)
	writeFile(t, pki.certFile, mustRead(t, newPKI.certFile))
	writeFile(t, pki.keyFile, mustRead(t, newPKI.keyFile))
	waitFor("the service's certificate from a new CA", func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "x509: certificate signed by unknown authority")
	})
	writeFile(t, clientCA, append(pemCert(pki.ca), pemCert(newPKI.ca)...))
	waitFor("the client trusting the new CA", func(err error) bool { return err == nil })
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNewHTTPRefusesSettingsThatDoNotGoTogether: NewHTTP says what is
// wrong with TLS and credential settings before it contacts anything.
func TestNewHTTPRefusesSettingsThatDoNotGoTogether(t *testing.T) {
	pki := newTestPKI(t)
	empty := filepath.Join(t.TempDir(), "empty")
	writeFile(t, empty, []byte("\n"))
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		name string
		cfg  HTTPConfig
		want string
	}{
		{"TLS on an http URL", HTTPConfig{URL: "http://archive:9428", TLS: pki.clientTLS()}, `archive URL "http://archive:9428": the TLS settings need an https URL`},
		{"TLS on an http select URL", HTTPConfig{URL: "https://archive:9428", SelectURL: "http://select:9428", TLS: pki.clientTLS()}, `archive URL "http://select:9428": the TLS settings need an https URL`},
		{"another scheme", HTTPConfig{URL: "ftp://archive"}, `archive URL "ftp://archive" is not an absolute http or https URL`},
		{"a certificate without its key", HTTPConfig{URL: "https://archive:9428", TLS: TLSConfig{CertFile: pki.certFile}}, "a client certificate needs both its certificate file and its key file"},
		{"a key that is not the certificate's", HTTPConfig{URL: "https://archive:9428", TLS: TLSConfig{CertFile: pki.certFile, KeyFile: pki.passwordFile}}, "the archive's client certificate " + pki.certFile + " and key " + pki.passwordFile},
		{"a CA file without a certificate", HTTPConfig{URL: "https://archive:9428", TLS: TLSConfig{CAFile: pki.passwordFile}}, "the archive's CA file " + pki.passwordFile + " holds no PEM certificate"},
		{"a missing CA file", HTTPConfig{URL: "https://archive:9428", TLS: TLSConfig{CAFile: missing}}, "reading the archive's CA: open " + missing},
		{"a username without a password", HTTPConfig{URL: "https://archive:9428", Auth: AuthConfig{Username: "u"}}, "basic authentication needs a password file beside the username"},
		{"a password without a username", HTTPConfig{URL: "https://archive:9428", Auth: AuthConfig{PasswordFile: pki.passwordFile}}, "basic authentication needs a username beside the password file"},
		{"basic and bearer", HTTPConfig{URL: "https://archive:9428", Auth: AuthConfig{Username: "u", PasswordFile: pki.passwordFile, BearerTokenFile: pki.passwordFile}}, "choose basic authentication or a bearer token, not both"},
		{"an empty password file", HTTPConfig{URL: "https://archive:9428", Auth: AuthConfig{Username: "u", PasswordFile: empty}}, "the archive's password file " + empty + " is empty"},
		{"a missing token file", HTTPConfig{URL: "https://archive:9428", Auth: AuthConfig{BearerTokenFile: missing}}, "reading the archive's bearer token: open " + missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewHTTP(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewHTTP: got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestClientCertificate: the client presents its certificate to a service
// that asks for one. VictoriaLogs' open-source builds do not (-mtls is an
// enterprise flag); a proxy in front of it may, as this TLS server does,
// which answers queries with no rows.
func TestClientCertificate(t *testing.T) {
	pki := newTestPKI(t)
	clientCert, clientKey := filepath.Join(pki.dir, "client.crt"), filepath.Join(pki.dir, "client.key")
	pki.issue(t, clientCert, clientKey, x509.ExtKeyUsageClientAuth)
	serving, err := tls.LoadX509KeyPair(pki.certFile, pki.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	// presented is the common name of the client certificate the server
	// last verified.
	var presented atomic.Value
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		presented.Store(r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{serving},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pki.roots(),
		MinVersion:   tls.VersionTLS12,
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ctx := context.Background()
	now := time.Now()
	query := archive.Query{Since: now.Add(-time.Hour), Until: now, Limit: 1}

	for _, tc := range []struct {
		name    string
		tls     TLSConfig
		wantErr string
	}{
		{name: "with the certificate", tls: TLSConfig{CAFile: pki.caFile, CertFile: clientCert, KeyFile: clientKey}},
		{name: "without", tls: TLSConfig{CAFile: pki.caFile}, wantErr: "certificate required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			presented.Store("")
			engine := openSecuredService(t, srv.URL, "", tc.tls, AuthConfig{})
			_, err := engine.Archive.Query(ctx, query)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := presented.Load(); got != "events-victorialogs" {
					t.Errorf("the server saw the client certificate of %q, want the client's", got)
				}
				return
			}
			if !errors.Is(err, archive.ErrUnavailable) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got %v, want archive.ErrUnavailable saying %q", err, tc.wantErr)
			}
		})
	}
}
