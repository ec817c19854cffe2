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

// Package framework starts the real events-apiserver for integration
// tests: in this process, through cmd/events-apiserver/app, on the embedded
// etcd of its default contract or on an etcd binary of the envtest assets,
// plus the kubectl of those assets.
//
// Tests run with the assets of hack/envtest-assets.sh:
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test ./test/integration/...
package framework

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-events/events-apiserver/cmd/events-apiserver/app"
	"github.com/kube-events/events-apiserver/test/harness"
)

// serverStartTimeout bounds one start of the server, embedded etcd included.
const serverStartTimeout = 2 * time.Minute

// serverStopTimeout bounds one stop of the server.
const serverStopTimeout = time.Minute

// serverStartMu serializes the configuration phase of servers started in
// one process: the options share the process-wide component registry and
// feature gates.
var serverStartMu sync.Mutex

// Server is an events-apiserver running in this test process in standalone
// mode: client-certificate authentication against its own CA and the admin
// kubeconfig it writes to <DataDir>/kubeconfig once ready.
type Server struct {
	// RestConfig is the admin (system:masters) client configuration read
	// from the kubeconfig the server wrote. It stays valid across Restart.
	RestConfig *rest.Config
	// KubeconfigPath is the admin kubeconfig; it exists while the server runs.
	KubeconfigPath string
	// DataDir holds the embedded etcd, the certificates and the kubeconfig.
	DataDir string
	// Port is the secure port on 127.0.0.1; Restart keeps it.
	Port int
	// Args is the command line the server runs with.
	Args []string
	// Options are the options of the current run.
	Options *app.Options

	ownsDataDir bool
	mu          sync.Mutex
	run         *run // nil while stopped
}

// ServerOption tunes StartServer and RunServer.
type ServerOption func(*serverSettings)

type serverSettings struct {
	dataDir       string
	eventTTL      time.Duration
	etcdEndpoints []string
	extraArgs     []string
}

// WithServerDataDir runs the server on dir instead of a new temporary
// directory; the caller owns dir.
func WithServerDataDir(dir string) ServerOption {
	return func(s *serverSettings) { s.dataDir = dir }
}

// WithEventTTL sets --event-ttl.
func WithEventTTL(ttl time.Duration) ServerOption {
	return func(s *serverSettings) { s.eventTTL = ttl }
}

// WithEtcd stores events in the given etcd (--etcd-servers) instead of
// the embedded one.
func WithEtcd(e *Etcd) ServerOption {
	return func(s *serverSettings) { s.etcdEndpoints = e.Endpoints }
}

// WithServerArgs appends flags to the server's command line.
func WithServerArgs(args ...string) ServerOption {
	return func(s *serverSettings) { s.extraArgs = append(s.extraArgs, args...) }
}

// StartServer starts the server, waits until it is ready and stops it when
// the test ends. Without WithServerDataDir, its data directory is a
// t.TempDir. It fails the test if the server does not become ready.
func StartServer(t testing.TB, opts ...ServerOption) *Server {
	t.Helper()
	var settings serverSettings
	for _, opt := range opts {
		opt(&settings)
	}
	if settings.dataDir == "" {
		opts = append(opts, WithServerDataDir(t.TempDir()))
	}
	s, err := RunServer(opts...)
	if err != nil {
		t.Fatalf("starting events-apiserver: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("stopping events-apiserver: %v", err)
		}
	})
	return s
}

// RunServer is StartServer for callers without a testing.TB, such as
// TestMain: it returns once the server is ready, and the caller must Close
// it. Without WithServerDataDir, Close removes the data directory it made.
func RunServer(opts ...ServerOption) (*Server, error) {
	var settings serverSettings
	for _, opt := range opts {
		opt(&settings)
	}
	s := &Server{DataDir: settings.dataDir}
	if s.DataDir == "" {
		dir, err := os.MkdirTemp("", "events-apiserver-test-")
		if err != nil {
			return nil, err
		}
		s.DataDir, s.ownsDataDir = dir, true
	}
	s.KubeconfigPath = filepath.Join(s.DataDir, "kubeconfig")

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.removeDataDir()
		return nil, err
	}
	s.Port = listener.Addr().(*net.TCPAddr).Port

	// The command line of the default contract, --data-dir and
	// --secure-port, with the authentication mode stated so that running
	// in a pod (KUBERNETES_SERVICE_HOST set) changes nothing.
	s.Args = []string{
		"--data-dir=" + s.DataDir,
		"--secure-port=" + strconv.Itoa(s.Port),
		"--standalone",
		"--embedded-etcd-log-level=error",
	}
	if settings.eventTTL != 0 {
		s.Args = append(s.Args, "--event-ttl="+settings.eventTTL.String())
	}
	for _, endpoint := range settings.etcdEndpoints {
		s.Args = append(s.Args, "--etcd-servers="+endpoint)
	}
	s.Args = append(s.Args, settings.extraArgs...)

	if err := s.start(listener); err != nil {
		s.removeDataDir()
		return nil, err
	}
	return s, nil
}

// start runs the server on listener until Stop and waits until it is ready.
func (s *Server) start(listener net.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run != nil {
		listener.Close()
		return errors.New("events-apiserver is already running")
	}

	serverStartMu.Lock()
	defer serverStartMu.Unlock()

	o := app.NewOptions()
	fs := pflag.NewFlagSet("events-apiserver", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(s.Args); err != nil {
		listener.Close()
		return fmt.Errorf("parsing %v: %w", s.Args, err)
	}
	// The port is already bound, so that no other process takes it
	// between choosing it and the server listening on it.
	o.Recommended.SecureServing.Listener = listener

	ctx, cancel := context.WithTimeout(context.Background(), serverStartTimeout)
	defer cancel()
	r, err := startRun(ctx, o, true)
	if err != nil {
		listener.Close()
		return fmt.Errorf("events-apiserver %v: %w", s.Args, err)
	}

	config, err := clientcmd.BuildConfigFromFlags("", s.KubeconfigPath)
	if err != nil {
		return errors.Join(fmt.Errorf("reading the kubeconfig the server wrote: %w", err), r.stop())
	}
	// Tests run many requests in parallel: no client-side throttling.
	config.QPS, config.Burst = -1, -1
	if s.RestConfig == nil {
		s.RestConfig = config
	}
	s.Options = o
	s.run = r
	return nil
}

// Stop stops the server and waits until it has; the data directory stays
// for Restart. Stopping a stopped server does nothing.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == nil {
		return nil
	}
	err := s.run.stop()
	s.run = nil
	return err
}

// Restart stops the server and starts it again with the same command line:
// same data directory, same port.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	listener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)))
	if err != nil {
		return fmt.Errorf("listening again on port %d: %w", s.Port, err)
	}
	return s.start(listener)
}

// Close stops the server and removes the data directory if RunServer made it.
func (s *Server) Close() error {
	err := s.Stop()
	s.removeDataDir()
	return err
}

func (s *Server) removeDataDir() {
	if s.ownsDataDir {
		_ = os.RemoveAll(s.DataDir)
	}
}

// Etcd is an etcd binary of the envtest assets, started by the framework,
// for tests that look at what the server stores: keys and leases.
type Etcd = harness.Etcd

// StartEtcd starts $KUBEBUILDER_ASSETS/etcd, one member on free loopback
// ports with a t.TempDir data directory, waits until it answers, and stops
// it when the test ends. It fails the test if KUBEBUILDER_ASSETS is unset.
func StartEtcd(t testing.TB) *Etcd {
	t.Helper()
	return harness.StartTestEtcd(t)
}

// RunEtcd is StartEtcd for callers without a testing.TB: it starts the
// etcd binary at path, one member, in dir; the caller must Stop it.
func RunEtcd(path, dir string) (*Etcd, error) {
	return harness.StartEtcd(path, dir, 1, "--log-level=error")
}
