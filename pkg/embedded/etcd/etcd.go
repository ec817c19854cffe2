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

// Package etcd runs the single-member etcd a standalone events-apiserver
// keeps its events in when it is given no --etcd-servers: in-process, data
// under one directory, listening on loopback only, and speaking TLS with
// client-certificate authentication so that only this server can use it.
package etcd

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/kube-events/events-apiserver/pkg/embedded/pki"
)

// Config configures the embedded etcd.
type Config struct {
	// Dir holds everything: the member's data in Dir/data and its
	// certificates in Dir/pki. Reusing Dir reuses the data.
	Dir string
	// LogLevel is etcd's own log level (debug, info, warn, error); warn if empty.
	LogLevel string
	// StartTimeout bounds how long Start waits for etcd to serve; 1m if zero.
	StartTimeout time.Duration
}

// Server is a running embedded etcd.
type Server struct {
	etcd *embed.Etcd
	// ClientURL is where etcd serves clients, https on 127.0.0.1.
	ClientURL string
	// TrustedCAFile verifies etcd's serving certificate.
	TrustedCAFile string
	// CertFile and KeyFile are the client certificate that etcd accepts.
	CertFile string
	KeyFile  string
}

// Start starts etcd on free loopback ports and waits until it serves. The
// ports are chosen afresh on every start; a single member does not care
// that its peer address changed.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("embedded etcd needs a directory")
	}
	if cfg.LogLevel == "" {
		cfg.LogLevel = "warn"
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = time.Minute
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	creds, err := ensureCredentials(filepath.Join(cfg.Dir, "pki"), time.Now())
	if err != nil {
		return nil, fmt.Errorf("embedded etcd certificates: %w", err)
	}

	// A port picked free may be taken before etcd binds it; try again then.
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		server, err := start(ctx, cfg, creds)
		if err == nil {
			return server, nil
		}
		lastErr = err
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	return nil, lastErr
}

func start(ctx context.Context, cfg Config, creds credentials) (*Server, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	clientURL := url.URL{Scheme: "https", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	peerURL := url.URL{Scheme: "https", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}

	ec := embed.NewConfig()
	ec.Name = "events-apiserver"
	ec.Dir = filepath.Join(cfg.Dir, "data")
	ec.ListenClientUrls = []url.URL{clientURL}
	ec.AdvertiseClientUrls = []url.URL{clientURL}
	ec.ListenPeerUrls = []url.URL{peerURL}
	ec.AdvertisePeerUrls = []url.URL{peerURL}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	ec.ListenMetricsUrls = nil
	ec.LogLevel = cfg.LogLevel
	ec.ClientTLSInfo = transport.TLSInfo{
		CertFile:       creds.server.CertFile,
		KeyFile:        creds.server.KeyFile,
		TrustedCAFile:  creds.ca.CertFile,
		ClientCertAuth: true,
	}
	ec.PeerTLSInfo = transport.TLSInfo{
		CertFile:       creds.peer.CertFile,
		KeyFile:        creds.peer.KeyFile,
		TrustedCAFile:  creds.ca.CertFile,
		ClientCertAuth: true,
	}

	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("starting embedded etcd in %s: %w", ec.Dir, err)
	}
	timer := time.NewTimer(cfg.StartTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd failed while starting: %w", err)
	case <-timer.C:
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s did not become ready within %v", ec.Dir, cfg.StartTimeout)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	return &Server{
		etcd:          e,
		ClientURL:     clientURL.String(),
		TrustedCAFile: creds.ca.CertFile,
		CertFile:      creds.client.CertFile,
		KeyFile:       creds.client.KeyFile,
	}, nil
}

// Err reports errors etcd hits after it started.
func (s *Server) Err() <-chan error { return s.etcd.Err() }

// Close stops etcd and waits until it has stopped.
func (s *Server) Close() { s.etcd.Close() }

// credentials are etcd's own CA, the certificates etcd serves clients and
// its peer port with, and the client certificate the API server presents.
type credentials struct {
	ca                   *pki.CA
	server, peer, client pki.KeyPair
}

func ensureCredentials(dir string, now time.Time) (credentials, error) {
	ca, err := pki.EnsureCA(dir, "ca", "events-apiserver-etcd-ca", now)
	if err != nil {
		return credentials{}, err
	}
	loopback := pki.Spec{
		CommonName: "events-apiserver-etcd",
		DNSNames:   []string{"localhost"},
		IPs:        []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	server, err := ca.EnsureCert(dir, "server", loopback, now)
	if err != nil {
		return credentials{}, err
	}
	peer, err := ca.EnsureCert(dir, "peer", loopback, now)
	if err != nil {
		return credentials{}, err
	}
	client, err := ca.EnsureCert(dir, "apiserver-etcd-client", pki.Spec{
		CommonName: "events-apiserver",
		Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, now)
	if err != nil {
		return credentials{}, err
	}
	return credentials{ca: ca, server: server, peer: peer, client: client}, nil
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free loopback port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
