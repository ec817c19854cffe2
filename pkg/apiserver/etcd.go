package apiserver

import (
	"context"
	"fmt"
	"strings"
	"sync"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/etcdmaint"
)

// etcdMaintenanceHookName names the hooks that start and stop the etcd
// maintenance loop.
const etcdMaintenanceHookName = "start-etcd-maintenance"

// installEtcdMaintenance runs the etcd maintenance loop on this replica
// from the server's start to its shutdown, before storage goes away.
//
// It runs on every replica, not under the controllers' election: the loop
// exists to bring etcd back from NOSPACE, and while etcd refuses writes no
// replica can win a new election (a campaign is a write), so a leader lost
// during the alarm would leave nobody to clear it. Its steps are safe to
// repeat: defragmenting a member that another replica just defragmented
// finds little to do, and disarming a disarmed alarm is a no-op.
func (c CompletedConfig) installEtcdMaintenance(server *genericapiserver.GenericAPIServer, cfg etcdmaint.Config) error {
	options, err := c.GenericConfig.RESTOptionsGetter.GetRESTOptions(core.Resource("events"), &core.Event{})
	if err != nil {
		return fmt.Errorf("events storage options: %w", err)
	}
	client, err := NewEtcdClient(options.StorageConfig.Config)
	if err != nil {
		return fmt.Errorf("connecting to etcd for its maintenance: %w", err)
	}
	cfg.Client = client
	maintainer := etcdmaint.New(cfg)
	var (
		mu     sync.Mutex
		cancel context.CancelFunc
		done   chan struct{}
	)
	if err := server.AddPostStartHook(etcdMaintenanceHookName, func(hook genericapiserver.PostStartHookContext) error {
		mu.Lock()
		defer mu.Unlock()
		var ctx context.Context
		ctx, cancel = context.WithCancel(hook) //nolint:gosec // cancel is called by the pre-shutdown hook below
		done = make(chan struct{})
		go func(done chan struct{}) {
			defer close(done)
			maintainer.Run(ctx)
		}(done)
		return nil
	}); err != nil {
		return err
	}
	return server.AddPreShutdownHook(etcdMaintenanceHookName, func() error {
		mu.Lock()
		defer mu.Unlock()
		if cancel != nil {
			cancel()
			<-done
		}
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
