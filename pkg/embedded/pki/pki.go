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

// Package pki creates and reuses the certificate authorities and
// certificates of a standalone events-apiserver: PEM files in a directory,
// made once and read back on every later start, renewed only when a
// certificate is about to expire, no longer matches its authority, or no
// longer covers the names it must.
//
// client-go's util/cert and keyutil make the CAs and encode and parse
// certificates and keys; this package adds what they lack: issuing leaf
// certificates from a CA, deciding when one must be renewed, and writing
// files atomically.
package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

const (
	// CAValidity is how long a generated certificate authority is valid
	// (client-go's util/cert makes CAs for ten years).
	CAValidity = 10 * 365 * 24 * time.Hour
	// CertValidity is how long a generated leaf certificate is valid.
	CertValidity = 365 * 24 * time.Hour
	// RenewBefore is how long before its expiry a certificate is renewed.
	RenewBefore = 30 * 24 * time.Hour
)

// CA is a certificate authority whose certificate and key live in
// <dir>/<name>.crt and <dir>/<name>.key.
type CA struct {
	Cert     *x509.Certificate
	Key      crypto.Signer
	CertFile string
	KeyFile  string
}

// KeyPair is a certificate and key on disk.
type KeyPair struct {
	CertFile string
	KeyFile  string
}

// CertPEM reads the certificate file.
func (p KeyPair) CertPEM() ([]byte, error) { return os.ReadFile(p.CertFile) }

// KeyPEM reads the key file.
func (p KeyPair) KeyPEM() ([]byte, error) { return os.ReadFile(p.KeyFile) }

// CertPEM is the CA certificate in PEM.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: ca.Cert.Raw})
}

// Spec describes a leaf certificate.
type Spec struct {
	CommonName   string
	Organization []string
	// DNSNames and IPs make it a serving certificate for those names.
	DNSNames []string
	IPs      []net.IP
	// Usages are the extended key usages (server and/or client auth).
	Usages []x509.ExtKeyUsage
}

// EnsureCA loads the CA <dir>/<name>.{crt,key}, or creates it with the given
// common name if either file is missing. A CA that has expired or is about to
// is replaced, which invalidates every certificate it signed; EnsureCert
// notices and renews them.
func EnsureCA(dir, name, commonName string, now time.Time) (*CA, error) {
	ca := &CA{CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	cert, key, err := load(ca.CertFile, ca.KeyFile)
	switch {
	case err == nil && cert.IsCA && now.Add(RenewBefore).Before(cert.NotAfter):
		ca.Cert, ca.Key = cert, key
		return ca, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, err
	}

	key, err = newKey()
	if err != nil {
		return nil, err
	}
	caCert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: commonName, NotBefore: now.Add(-time.Hour)}, key)
	if err != nil {
		return nil, fmt.Errorf("creating CA %s: %w", name, err)
	}
	if err := write(ca.CertFile, ca.KeyFile, caCert.Raw, key); err != nil {
		return nil, err
	}
	ca.Cert, ca.Key = caCert, key
	return ca, nil
}

// EnsureCert loads <dir>/<name>.{crt,key} if it is signed by ca, matches spec
// and is not about to expire; otherwise it issues a new one from ca.
func (ca *CA) EnsureCert(dir, name string, spec Spec, now time.Time) (KeyPair, error) {
	pair := KeyPair{CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	cert, _, err := load(pair.CertFile, pair.KeyFile)
	switch {
	case err == nil && ca.valid(cert, spec, now):
		return pair, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return KeyPair{}, err
	}

	key, err := newKey()
	if err != nil {
		return KeyPair{}, err
	}
	template := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: spec.CommonName, Organization: spec.Organization},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(CertValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  spec.Usages,
		DNSNames:     spec.DNSNames,
		IPAddresses:  spec.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("creating certificate %s: %w", name, err)
	}
	return pair, write(pair.CertFile, pair.KeyFile, der, key)
}

// valid tells whether cert was issued by ca for spec and stays valid long enough.
func (ca *CA) valid(cert *x509.Certificate, spec Spec, now time.Time) bool {
	if cert.CheckSignatureFrom(ca.Cert) != nil || !bytes.Equal(cert.RawIssuer, ca.Cert.RawSubject) {
		return false
	}
	if !now.Add(RenewBefore).Before(cert.NotAfter) || now.Before(cert.NotBefore) {
		return false
	}
	if cert.Subject.CommonName != spec.CommonName || !slices.Equal(cert.Subject.Organization, spec.Organization) {
		return false
	}
	if !slices.Equal(cert.ExtKeyUsage, spec.Usages) {
		return false
	}
	for _, name := range spec.DNSNames {
		if !slices.Contains(cert.DNSNames, name) {
			return false
		}
	}
	for _, ip := range spec.IPs {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(fmt.Sprintf("reading random serial number: %v", err))
	}
	return n
}

// load reads and parses a certificate and its key; a missing file is
// reported as os.ErrNotExist.
func load(certFile, keyFile string) (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, err
	}
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", certFile, err)
	}
	parsed, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", keyFile, err)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("%s: unsupported key type %T", keyFile, parsed)
	}
	return certs[0], key, nil
}

// write stores a certificate (world-readable) and its key (owner only),
// each through a temporary file renamed into place.
func write(certFile, keyFile string, der []byte, key crypto.Signer) error {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(certFile), 0o700); err != nil {
		return err
	}
	if err := WriteFileAtomic(keyFile, keyPEM, 0o600); err != nil {
		return err
	}
	return WriteFileAtomic(certFile, pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der}), 0o644)
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory, so readers see the old content or the new, never a part.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
