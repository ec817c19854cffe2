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

package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-events/events-apiserver/test/freeport"
)

const (
	// ServerStartTimeout bounds one start of the server until it is ready.
	ServerStartTimeout = 2 * time.Minute
	// ServerStopTimeout bounds a graceful stop of the server.
	ServerStopTimeout = time.Minute
)

// Server is the events-apiserver binary running standalone as a Process:
// client-certificate authentication against its own CA, on a fixed
// loopback port and data directory, so that a restart is the same server.
type Server struct {
	*Process
	// DataDir holds the embedded etcd, the certificates, the admin
	// kubeconfig and the server's log (server.log).
	DataDir string
	// Port is the secure port on 127.0.0.1.
	Port int
	// RestConfig is the admin client configuration, from the kubeconfig
	// the server writes once ready; set by WaitReady.
	RestConfig *rest.Config
}

// NewServer prepares binary to run with --standalone, --data-dir=dataDir,
// a free --secure-port and args; the caller may set Env, then Start and
// WaitReady.
func NewServer(binary, dataDir string, args ...string) (*Server, error) {
	ports, err := freeport.Ports(1)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	return &Server{DataDir: dataDir, Port: ports[0], Process: &Process{
		Name:    "events-apiserver",
		Path:    binary,
		LogPath: filepath.Join(dataDir, "server.log"),
		Args: append([]string{"--standalone", "--data-dir=" + dataDir, "--secure-port=" + strconv.Itoa(ports[0])},
			args...),
	}}, nil
}

// StartServer is NewServer, Start and WaitReady: it returns once the
// server is ready, and kills it if it is not within ServerStartTimeout.
func StartServer(ctx context.Context, binary, dataDir string, args ...string) (*Server, error) {
	s, err := NewServer(binary, dataDir, args...)
	if err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	if err := s.WaitReady(ctx, ServerStartTimeout); err != nil {
		return nil, errors.Join(err, s.Kill())
	}
	return s, nil
}

// WaitReady waits, at most timeout, until the server has written its admin
// kubeconfig and its /readyz answers ok through a client of that
// kubeconfig, and sets RestConfig (without client-side rate limits). It
// fails at once if the server exits.
func (s *Server) WaitReady(ctx context.Context, timeout time.Duration) error {
	kubeconfig := filepath.Join(s.DataDir, "kubeconfig")
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-s.Exited():
			return false, fmt.Errorf("events-apiserver exited before it was ready: %v", s.Err())
		default:
		}
		if s.RestConfig == nil {
			config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				lastErr = err // not written yet
				return false, nil
			}
			config.QPS, config.Burst = -1, -1
			s.RestConfig = config
		}
		client, err := kubernetes.NewForConfig(s.RestConfig)
		if err != nil {
			return false, err
		}
		lastErr = client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
		return lastErr == nil, nil
	})
	if err != nil {
		if lastErr != nil {
			err = fmt.Errorf("%w (last: %v)", err, lastErr)
		}
		return fmt.Errorf("events-apiserver not ready in %v: %w; output:\n%s", timeout, err, s.Tail())
	}
	return nil
}

// Stop ends the server gracefully (SIGTERM), waiting at most
// ServerStopTimeout; an exit status other than 0 is an error.
func (s *Server) Stop() error {
	return s.Process.Stop(ServerStopTimeout)
}

// Metrics reads the server's /metrics.
func (s *Server) Metrics(ctx context.Context) (Metrics, error) {
	client, err := kubernetes.NewForConfig(s.RestConfig)
	if err != nil {
		return nil, err
	}
	return ScrapeMetrics(ctx, client.CoreV1().RESTClient())
}

// leaderMetric is the gauge every server serves on /metrics: 1 on the
// replica that runs the controllers, 0 on the others.
const leaderMetric = "events_apiserver_leader"

// Leads says whether m, a server's metrics, shows it leading the
// controllers election.
func Leads(m Metrics) bool {
	return m.Value(leaderMetric, map[string]string{"election": "controllers"}) == 1
}

// Leader waits, at most timeout, until exactly one of replicas (nil ones
// are skipped) reports leading the controllers election on /metrics, and
// returns its index. Two replicas reporting it at once is an error: leave
// out a replica that is handing over.
func Leader(ctx context.Context, timeout time.Duration, replicas ...*Server) (int, error) {
	lead := -1
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		lead = -1
		for i, r := range replicas {
			if r == nil {
				continue
			}
			m, err := r.Metrics(ctx)
			if err != nil {
				return false, nil
			}
			if !Leads(m) {
				continue
			}
			if lead >= 0 {
				return false, fmt.Errorf("replicas %d and %d lead the controllers at once", lead, i)
			}
			lead = i
		}
		return lead >= 0, nil
	})
	if err != nil {
		return -1, fmt.Errorf("no single leader of the controllers election: %w", err)
	}
	return lead, nil
}
