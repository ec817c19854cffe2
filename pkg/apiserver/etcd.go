package apiserver

import (
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	etcdclient "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/kube-events/events-apiserver/pkg/etcdmaint"
)

// etcdMaintenanceHookName names the hooks that start and stop the etcd
// maintenance loop.
const etcdMaintenanceHookName = "start-etcd-maintenance"

// newEtcdClient connects to the etcd of transport, with the TLS files the
// storage uses, for what the server does with etcd besides storing events.
func newEtcdClient(tc storagebackend.TransportConfig) (*etcdclient.Client, error) {
	cfg := etcdclient.Config{
		Endpoints:            tc.ServerList,
		DialTimeout:          20 * time.Second,
		DialKeepAliveTime:    30 * time.Second,
		DialKeepAliveTimeout: 10 * time.Second,
		Logger:               zap.NewNop(),
	}
	if tc.CertFile != "" || tc.KeyFile != "" || tc.TrustedCAFile != "" {
		tlsConfig, err := (transport.TLSInfo{
			CertFile: tc.CertFile, KeyFile: tc.KeyFile, TrustedCAFile: tc.TrustedCAFile,
		}).ClientConfig()
		if err != nil {
			return nil, err
		}
		cfg.TLS = tlsConfig
	}
	return etcdclient.New(cfg)
}

// installEtcdMaintenance runs the etcd maintenance loop from the server's
// start to its shutdown, before storage goes away.
func installEtcdMaintenance(server *genericapiserver.GenericAPIServer, tc storagebackend.TransportConfig, cfg etcdmaint.Config) error {
	client, err := newEtcdClient(tc)
	if err != nil {
		return fmt.Errorf("connecting to etcd for its maintenance: %w", err)
	}
	cfg.Client = client
	maintainer := etcdmaint.New(cfg)
	runner := &sweeperRunner{}
	if err := server.AddPostStartHook(etcdMaintenanceHookName, func(hook genericapiserver.PostStartHookContext) error {
		runner.start(hook, maintainer.Run)
		return nil
	}); err != nil {
		return err
	}
	return server.AddPreShutdownHook(etcdMaintenanceHookName, func() error {
		runner.stop()
		return client.Close()
	})
}

// withoutEtcdChecks drops the etcd checks from a server's /livez checks.
// k8s.io/apiserver adds its etcd check to /livez as well as to /readyz and
// /healthz, so a kubelet would restart every replica of a server that is
// only waiting for etcd, which a restart does not bring back; and a server
// restarted meanwhile fails to start while etcd is away. /readyz keeps the
// checks: a replica that cannot reach etcd takes no traffic, and comes back
// by itself once etcd answers.
func withoutEtcdChecks(checks []healthz.HealthChecker) []healthz.HealthChecker {
	var kept []healthz.HealthChecker
	for _, check := range checks {
		if check.Name() == "etcd" || isEtcdOverrideCheck(check.Name()) {
			continue
		}
		kept = append(kept, check)
	}
	return kept
}

func isEtcdOverrideCheck(name string) bool {
	return strings.HasPrefix(name, "etcd-override-") && !strings.HasSuffix(name, "-readiness")
}
