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

package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// target is a server under load: kube-apiserver (the anchor) or ours.
type target struct {
	name   string
	config *rest.Config
	// etcdURL is the client URL of the server's etcd, whose /metrics the
	// benchmark reads.
	etcdURL string
	stop    func() error
}

// etcdQuota is both etcds' --quota-backend-bytes, 8 GiB (etcd's default
// is 2 GiB): a million events take about 1 GB of kube-apiserver's
// database in use, and more of the file.
const etcdQuota = "8589934592"

// startKubeAPIServer starts the assets' kube-apiserver on a fresh etcd
// of the same assets through envtest, with its shipped defaults (no watch
// cache for events).
func startKubeAPIServer(assets string) (*target, error) {
	ctrllog.SetLogger(logr.Discard())
	etcd := &envtest.Etcd{}
	etcd.Configure().Set("quota-backend-bytes", etcdQuota)
	env := &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlane: envtest.ControlPlane{Etcd: etcd}}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver: %w", err)
	}
	return &target{name: "kube-apiserver", config: cfg, etcdURL: env.ControlPlane.Etcd.URL.String(), stop: env.Stop}, nil
}

// benchRateLimits keep EventRateLimit on (its cost per write is
// measured) with limits above the benchmark's load: with the defaults,
// 200 creates/s per namespace, every phase in the one "bench" namespace
// would measure the limit (client-go waits out each 429's Retry-After and
// retries) instead of the server. kube-apiserver, the anchor, has no
// events rate limit by default.
const benchRateLimits = `    limits:
    - {type: Reporter, qps: 100000, burst: 100000}
    - {type: Object, qps: 100000, burst: 100000}
    - {type: Namespace, qps: 100000, burst: 100000}
`

// startEventsAPIServer starts the server binary as its own process (so
// that its memory is its own) in standalone mode on a fresh etcd of the
// assets, and waits until it is ready.
func startEventsAPIServer(ctx context.Context, assets, binary string, env, args []string, dir string) (*target, error) {
	etcd, err := harness.StartEtcd(filepath.Join(assets, "etcd"), filepath.Join(dir, "etcd"), 1, "--log-level=error", "--quota-backend-bytes="+etcdQuota)
	if err != nil {
		return nil, fmt.Errorf("starting etcd: %w", err)
	}
	admissionConfig, err := framework.WriteRateLimitAdmissionConfig(dir, benchRateLimits)
	if err != nil {
		return nil, errors.Join(err, etcd.Stop())
	}
	server, err := harness.NewServer(binary, filepath.Join(dir, "events-apiserver"), append([]string{
		"--etcd-servers=" + etcd.Endpoints[0],
		"--admission-control-config-file=" + admissionConfig,
	}, args...)...)
	if err != nil {
		return nil, errors.Join(err, etcd.Stop())
	}
	server.Env = env
	if err := server.Start(); err != nil {
		return nil, errors.Join(err, etcd.Stop())
	}
	stop := func() error { return errors.Join(server.Stop(), etcd.Stop()) }
	if err := server.WaitReady(ctx, harness.ServerStartTimeout); err != nil {
		return nil, errors.Join(err, stop())
	}
	return &target{name: "events-apiserver", config: server.RestConfig, etcdURL: etcd.Endpoints[0], stop: stop}, nil
}

// saveProfile writes the server's pprof profile at path (with query) to file.
func saveProfile(ctx context.Context, cfg *rest.Config, path, query, file string) error {
	c, err := rest.UnversionedRESTClientFor(withCodecs(cfg))
	if err != nil {
		return err
	}
	req := c.Get().AbsPath(path)
	for _, kv := range strings.Split(query, "&") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			req = req.Param(k, v)
		}
	}
	body, err := req.Timeout(2 * time.Minute).DoRaw(ctx)
	if err != nil {
		return err
	}
	return os.WriteFile(file, body, 0o644)
}

// profileCPU starts a 10 s CPU profile of the server into dir/name.pprof
// and, with generator set, of the load generator (this process) into
// dir/name-generator.pprof, for the phase that runs meanwhile; wait
// returns once both are written. With dir empty it profiles nothing.
func profileCPU(ctx context.Context, t *target, dir, name string, generator bool) (wait func() error) {
	if dir == "" {
		return func() error { return nil }
	}
	done := make(chan error, 1)
	go func() {
		stop := func() error { return nil }
		if generator {
			var err error
			if stop, err = profileSelf(filepath.Join(dir, name+"-generator.pprof")); err != nil {
				done <- err
				return
			}
		}
		err := saveProfile(ctx, t.config, "/debug/pprof/profile", "seconds=10", filepath.Join(dir, name+".pprof"))
		done <- errors.Join(err, stop())
	}()
	return func() error {
		if err := <-done; err != nil {
			return fmt.Errorf("CPU profile %s: %w", name, err)
		}
		return nil
	}
}

// profileSelf starts a CPU profile of the load generator (this process)
// into file; the returned function stops it.
func profileSelf(file string) (func() error, error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
