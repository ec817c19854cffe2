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

package selfcert

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// backdate is how far before its issue a certificate is valid, for clocks
// a little behind the issuer's.
const backdate = 5 * time.Minute

// authority is a CA's certificate and key, and the bundle of every CA
// certificate still trusted (this one first, then older ones that have not
// expired, whose certificates may still be served).
type authority struct {
	cert            *x509.Certificate
	key             crypto.Signer
	certPEM, keyPEM []byte
	bundle          []*x509.Certificate
}

// bundlePEM is the bundle in PEM, the current CA first.
func (a *authority) bundlePEM() []byte {
	var buf bytes.Buffer
	for _, c := range a.bundle {
		_ = pem.Encode(&buf, &pem.Block{Type: certutil.CertificateBlockType, Bytes: c.Raw})
	}
	return buf.Bytes()
}

// pool is the bundle as a verification pool.
func (a *authority) pool() *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range a.bundle {
		p.AddCert(c)
	}
	return p
}

// newAuthority makes a self-signed CA valid for lifetime, keeping in its
// bundle the certificates of previous that are still valid at now.
func newAuthority(commonName string, lifetime time.Duration, now time.Time, previous []*x509.Certificate) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	a := &authority{cert: cert, key: key, certPEM: encodeCert(cert), keyPEM: keyPEM, bundle: []*x509.Certificate{cert}}
	for _, c := range previous {
		if now.Before(c.NotAfter) && !c.Equal(cert) {
			a.bundle = append(a.bundle, c)
		}
	}
	return a, nil
}

// parseAuthority reads a CA from its Secret's data: the certificate, the
// key and the bundle, which must hold the certificate.
func parseAuthority(certPEM, keyPEM, bundlePEM []byte) (*authority, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, errors.New("the certificate is not a CA")
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("the key cannot sign")
	}
	bundle, err := certutil.ParseCertsPEM(bundlePEM)
	if err != nil || !slices.ContainsFunc(bundle, cert.Equal) {
		bundle = []*x509.Certificate{cert}
	}
	return &authority{cert: cert, key: signer, certPEM: certPEM, keyPEM: keyPEM, bundle: bundle}, nil
}

// issue signs a leaf certificate for spec, valid for lifetime but never
// past the CA's own expiry.
func (a *authority) issue(spec CertificateSpec, lifetime time.Duration, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	notAfter := now.Add(lifetime)
	if notAfter.After(a.cert.NotAfter) {
		notAfter = a.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: spec.CommonName},
		DNSNames:              spec.DNSNames,
		IPAddresses:           spec.IPAddresses,
		NotBefore:             now.Add(-backdate),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           spec.Usages,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der}), keyPEM, nil
}

// parseLeaf reads a certificate and its key, and checks that they match.
func parseLeaf(certPEM, keyPEM []byte) (*x509.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(pair.Certificate[0])
}

// renewalTime is when a certificate is renewed: after two thirds of its
// validity, as cert-manager does by default, so that a third of its life is
// left for the renewal to reach every reader.
func renewalTime(c *x509.Certificate) time.Time {
	return c.NotBefore.Add(c.NotAfter.Sub(c.NotBefore) * 2 / 3)
}

// matches tells whether cert was issued for spec: the same subject names
// and extended key usages, and a chain to the authority's bundle for the
// first of them.
func (a *authority) matches(cert *x509.Certificate, spec CertificateSpec, now time.Time) bool {
	if cert.Subject.CommonName != spec.CommonName ||
		!slices.Equal(cert.DNSNames, spec.DNSNames) ||
		!slices.EqualFunc(cert.IPAddresses, spec.IPAddresses, net.IP.Equal) ||
		!slices.Equal(cert.ExtKeyUsage, spec.Usages) {
		return false
	}
	_, err := cert.Verify(x509.VerifyOptions{Roots: a.pool(), CurrentTime: now, KeyUsages: spec.Usages})
	return err == nil
}

func encodeCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: c.Raw})
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("a serial number: %w", err)
	}
	return serial, nil
}
