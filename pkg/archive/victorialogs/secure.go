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
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
	"unicode"
)

// TLSConfig is how the client verifies a VictoriaLogs service reached over
// https, and the certificate it presents. Every file is read again at most
// once per FileReloadInterval while the client is in use, so that rotated
// Secrets take effect without a restart.
type TLSConfig struct {
	// CAFile holds the PEM certificates of the CAs that sign the service's
	// certificate; the system's roots when empty.
	CAFile string
	// CertFile and KeyFile hold a PEM client certificate and its key,
	// presented when the service (or a proxy in front of it) asks for one.
	CertFile, KeyFile string
	// ServerName is the name the service's certificate must hold, when it
	// is not the URL's host.
	ServerName string
}

// enabled tells whether any TLS setting is made.
func (c TLSConfig) enabled() bool {
	return c.CAFile != "" || c.CertFile != "" || c.KeyFile != "" || c.ServerName != ""
}

// AuthConfig is how the client authenticates to a VictoriaLogs service:
// HTTP basic authentication (the service's -httpAuth.username and
// -httpAuth.password), or a bearer token, which a proxy in front of the
// service checks (VictoriaLogs itself checks basic authentication only).
// The files are read again at most once per FileReloadInterval; a trailing
// newline or space is not part of the secret, as VictoriaLogs reads its own
// -httpAuth.password=file://... .
type AuthConfig struct {
	// Username and PasswordFile are the basic authentication credentials.
	Username, PasswordFile string
	// BearerTokenFile holds a bearer token.
	BearerTokenFile string
}

// FileReloadInterval is how often, at most, the client reads its TLS and
// credential files again: VictoriaLogs re-reads its own every second or
// two, so a Secret rotated on both sides agrees again within seconds of
// the kubelet updating the second pod's volume.
const FileReloadInterval = time.Second

// validate checks that the settings go together.
func (c AuthConfig) validate() error {
	switch {
	case c.Username != "" && c.PasswordFile == "":
		return errors.New("basic authentication needs a password file beside the username")
	case c.Username == "" && c.PasswordFile != "":
		return errors.New("basic authentication needs a username beside the password file")
	case c.PasswordFile != "" && c.BearerTokenFile != "":
		return errors.New("choose basic authentication or a bearer token, not both")
	}
	return nil
}

// authenticator sets a request's Authorization header from the current
// contents of the credential files.
type authenticator struct {
	cfg         AuthConfig
	password    *reloadingFile
	bearerToken *reloadingFile
}

func newAuthenticator(cfg AuthConfig) (*authenticator, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := &authenticator{cfg: cfg}
	if cfg.PasswordFile != "" {
		a.password = newReloadingFile(cfg.PasswordFile)
	}
	if cfg.BearerTokenFile != "" {
		a.bearerToken = newReloadingFile(cfg.BearerTokenFile)
	}
	// Fail at start on a file that cannot be read or is empty.
	return a, a.authenticate(&http.Request{Header: http.Header{}})
}

// authenticate sets req's credentials, if any are configured.
func (a *authenticator) authenticate(req *http.Request) error {
	switch {
	case a.password != nil:
		password, err := a.secret(a.password, "password")
		if err != nil {
			return err
		}
		req.SetBasicAuth(a.cfg.Username, password)
	case a.bearerToken != nil:
		token, err := a.secret(a.bearerToken, "bearer token")
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return nil
}

func (a *authenticator) secret(f *reloadingFile, what string) (string, error) {
	content, err := f.read()
	if err != nil {
		return "", fmt.Errorf("reading the archive's %s: %w", what, err)
	}
	secret := strings.TrimRightFunc(string(content), unicode.IsSpace)
	if secret == "" {
		return "", fmt.Errorf("the archive's %s file %s is empty", what, f.path)
	}
	return secret, nil
}

// refused explains a 401 or 403 answer by the credentials sent.
func (a *authenticator) refused() string {
	switch {
	case a.password != nil:
		return fmt.Sprintf("the service refused the basic authentication of user %q with the password in %s", a.cfg.Username, a.cfg.PasswordFile)
	case a.bearerToken != nil:
		return fmt.Sprintf("the service refused the bearer token in %s", a.cfg.BearerTokenFile)
	default:
		return "the service requires credentials and none are configured"
	}
}

// newTLSConfig returns the client's TLS configuration: the service's
// certificate verified against the current contents of cfg.CAFile (the
// system's roots when empty) for cfg.ServerName or the URL's host, and the
// current client certificate, if any. It reads every file once, so that a
// missing or malformed one fails at start.
func newTLSConfig(cfg TLSConfig) (*tls.Config, error) {
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, errors.New("a client certificate needs both its certificate file and its key file")
	}
	config := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: cfg.ServerName}
	if cfg.CertFile != "" {
		certs := &clientCertificate{cert: newReloadingFile(cfg.CertFile), key: newReloadingFile(cfg.KeyFile)}
		if _, err := certs.get(); err != nil {
			return nil, err
		}
		config.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return certs.get() }
	}
	if cfg.CAFile != "" {
		roots := &caPool{file: newReloadingFile(cfg.CAFile)}
		if _, err := roots.get(); err != nil {
			return nil, err
		}
		// crypto/tls verifies against a fixed pool; to follow a rotated CA
		// file, the client verifies in VerifyConnection instead, the same
		// way: the chain to the current roots, for the name dialed.
		config.InsecureSkipVerify = true //nolint:gosec // verified in VerifyConnection below
		config.VerifyConnection = func(cs tls.ConnectionState) error {
			pool, err := roots.get()
			if err != nil {
				return err
			}
			return verifyServer(cs, pool, cfg.CAFile)
		}
	}
	return config, nil
}

// verifyServer checks the service's chain against roots for the name the
// client dialed (ServerName, or the URL's host), as crypto/tls would.
func verifyServer(cs tls.ConnectionState, roots *x509.CertPool, caFile string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the archive service presented no certificate")
	}
	opts := x509.VerifyOptions{
		Roots:         roots,
		DNSName:       cs.ServerName,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, cert := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(cert)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return fmt.Errorf("the archive service's certificate does not verify against the CA in %s: %w", caFile, err)
	}
	return nil
}

// caPool is the CA file's pool, parsed again when its contents change.
type caPool struct {
	file *reloadingFile

	mu      sync.Mutex
	content []byte
	pool    *x509.CertPool
}

func (p *caPool) get() (*x509.CertPool, error) {
	content, err := p.file.read()
	if err != nil {
		return nil, fmt.Errorf("reading the archive's CA: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pool != nil && bytes.Equal(content, p.content) {
		return p.pool, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(content) {
		return nil, fmt.Errorf("the archive's CA file %s holds no PEM certificate", p.file.path)
	}
	p.content, p.pool = content, pool
	return pool, nil
}

// clientCertificate is the client's certificate, parsed again when either
// file changes.
type clientCertificate struct {
	cert, key *reloadingFile

	mu              sync.Mutex
	certPEM, keyPEM []byte
	parsed          *tls.Certificate
}

func (c *clientCertificate) get() (*tls.Certificate, error) {
	certPEM, err := c.cert.read()
	if err != nil {
		return nil, fmt.Errorf("reading the archive's client certificate: %w", err)
	}
	keyPEM, err := c.key.read()
	if err != nil {
		return nil, fmt.Errorf("reading the archive's client key: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parsed != nil && bytes.Equal(certPEM, c.certPEM) && bytes.Equal(keyPEM, c.keyPEM) {
		return c.parsed, nil
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// A rotation writes the two files one after the other: until both
		// are new, keep presenting the last pair that matched.
		if c.parsed != nil {
			return c.parsed, nil
		}
		return nil, fmt.Errorf("the archive's client certificate %s and key %s: %w", c.cert.path, c.key.path, err)
	}
	c.certPEM, c.keyPEM, c.parsed = certPEM, keyPEM, &pair
	return c.parsed, nil
}

// reloadingFile is a file's contents, read again when the last read is
// older than FileReloadInterval.
type reloadingFile struct {
	path string

	mu      sync.Mutex
	content []byte
	readAt  time.Time
}

func newReloadingFile(path string) *reloadingFile { return &reloadingFile{path: path} }

func (f *reloadingFile) read() ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.content != nil && time.Since(f.readAt) < FileReloadInterval {
		return f.content, nil
	}
	content, err := os.ReadFile(f.path)
	if err != nil {
		return nil, err
	}
	f.content, f.readAt = content, time.Now()
	return content, nil
}
