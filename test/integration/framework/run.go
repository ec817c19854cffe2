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
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/cmd/events-apiserver/app"
)

// run is events-apiserver running in this process through the real
// app.Run, as the binary runs it: the one start and stop of the
// standalone Server and of the AggregatedCluster's server.
type run struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when app.Run returned, with err
	err    error
}

// startRun runs app.Run with o until stop and waits, as long as ctx
// allows, until the server is ready: its /readyz answers ok and, when
// standalone, it wrote its admin kubeconfig. A run that stops or is not
// ready in time is an error (and is stopped).
func startRun(ctx context.Context, o *app.Options, standalone bool) (*run, error) {
	runCtx, cancel := context.WithCancel(context.Background())
	r := &run{cancel: cancel, done: make(chan struct{})}
	go func() {
		r.err = app.Run(runCtx, o)
		close(r.done)
	}()
	readyz := "https://" + o.Recommended.SecureServing.Listener.Addr().String() + "/readyz"
	// Anonymous: /readyz is always allowed. The serving certificate is
	// the server's own, which the test trusts by construction.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a test's own server
	}}
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-r.done:
			return false, fmt.Errorf("events-apiserver stopped before it was ready: %v", r.err)
		default:
		}
		if standalone {
			if _, err := os.Stat(o.KubeconfigPath()); err != nil {
				return false, nil
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, readyz, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err == nil {
		return r, nil
	}
	select {
	case <-r.done:
		cancel()
		return nil, err
	default:
		return nil, errors.Join(fmt.Errorf("events-apiserver not ready: %w", err), r.stop())
	}
}

// stop cancels the run and waits, at most serverStopTimeout, until
// app.Run returned; its return is an error unless it is the cancellation.
// Stopping a stopped run returns the same.
func (r *run) stop() error {
	r.cancel()
	select {
	case <-r.done:
		if r.err != nil && !errors.Is(r.err, context.Canceled) {
			return fmt.Errorf("events-apiserver stopped with: %w", r.err)
		}
		return nil
	case <-time.After(serverStopTimeout):
		return fmt.Errorf("events-apiserver did not stop in %v", serverStopTimeout)
	}
}
