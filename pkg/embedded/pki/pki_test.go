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

package pki

import (
	"bytes"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func serving() Spec {
	return Spec{
		CommonName: "server",
		DNSNames:   []string{"localhost"},
		IPs:        []net.IP{net.IPv4(127, 0, 0, 1)},
		Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestEnsureCAAndCertAreReusedOnTheSecondCall(t *testing.T) {
	dir := t.TempDir()
	ca, err := EnsureCA(dir, "ca", "test-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.EnsureCert(dir, "server", serving(), now)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, certPEM := read(t, ca.CertFile), read(t, pair.CertFile)

	again, err := EnsureCA(dir, "ca", "test-ca", now.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	pairAgain, err := again.EnsureCert(dir, "server", serving(), now.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(caPEM, read(t, again.CertFile)) || !bytes.Equal(certPEM, read(t, pairAgain.CertFile)) {
		t.Fatal("a second start generated new certificates instead of reusing them")
	}
	if info, err := os.Stat(pair.KeyFile); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode = %v (%v), want 0600", info.Mode().Perm(), err)
	}
}

func TestCertificateVerifiesForItsNamesAndUsage(t *testing.T) {
	dir := t.TempDir()
	ca, err := EnsureCA(dir, "ca", "test-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.EnsureCert(dir, "server", serving(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, _, err := load(pair.CertFile, pair.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, name := range []string{"localhost", "127.0.0.1"} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("a serving certificate verified as a client certificate")
	}
}

func TestEnsureCertRenews(t *testing.T) {
	tests := []struct {
		name   string
		change func(dir string, ca *CA) (*CA, Spec, time.Time)
	}{{
		name: "close to expiry",
		change: func(_ string, ca *CA) (*CA, Spec, time.Time) {
			return ca, serving(), now.Add(CertValidity - RenewBefore + time.Hour)
		},
	}, {
		name: "a name it must now cover",
		change: func(_ string, ca *CA) (*CA, Spec, time.Time) {
			spec := serving()
			spec.DNSNames = append(spec.DNSNames, "events.example")
			return ca, spec, now
		},
	}, {
		name: "different organization",
		change: func(_ string, ca *CA) (*CA, Spec, time.Time) {
			spec := serving()
			spec.Organization = []string{"system:masters"}
			return ca, spec, now
		},
	}, {
		name: "a new CA",
		change: func(dir string, _ *CA) (*CA, Spec, time.Time) {
			_ = os.Remove(filepath.Join(dir, "ca.crt"))
			ca, err := EnsureCA(dir, "ca", "test-ca", now)
			if err != nil {
				panic(err)
			}
			return ca, serving(), now
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ca, err := EnsureCA(dir, "ca", "test-ca", now)
			if err != nil {
				t.Fatal(err)
			}
			pair, err := ca.EnsureCert(dir, "server", serving(), now)
			if err != nil {
				t.Fatal(err)
			}
			before := read(t, pair.CertFile)
			ca, spec, at := tt.change(dir, ca)
			if _, err := ca.EnsureCert(dir, "server", spec, at); err != nil {
				t.Fatal(err)
			}
			after := read(t, pair.CertFile)
			if bytes.Equal(before, after) {
				t.Fatal("certificate was not renewed")
			}
			cert, _, err := load(pair.CertFile, pair.KeyFile)
			if err != nil {
				t.Fatal(err)
			}
			if !ca.valid(cert, spec, at) {
				t.Fatal("renewed certificate does not satisfy its spec")
			}
		})
	}
}

func TestEnsureCAReportsUnreadableFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.key"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureCA(dir, "ca", "test-ca", now); err == nil {
		t.Fatal("EnsureCA silently replaced a corrupt CA")
	}
}
