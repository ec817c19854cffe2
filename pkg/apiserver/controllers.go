package apiserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"path"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/namespace"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/klog/v2"

	"github.com/kube-events/events-apiserver/pkg/leaderelection"
)

// Controller is a loop the server runs on the elected replica only.
type Controller interface {
	Name() string
	Run(ctx context.Context) // returns once ctx is done and its work in flight ended
}

// ControllersElection is the name of the election under which the
// server's controllers run.
const ControllersElection = "controllers"

// controllersHookName names the post-start hook that starts the
// controllers and the pre-shutdown hook that stops them.
const controllersHookName = "start-events-controllers"

// LeaderElectionConfig tunes the election of the replica that runs the
// controllers; zero values take leaderelection's defaults.
type LeaderElectionConfig struct {
	// Disabled runs the controllers on this replica without an election:
	// for a single replica only.
	Disabled bool
	// Identity names this replica in the election key (the host name and
	// a UUID by default).
	Identity string
	// TTL is how long a leader that died without resigning keeps the work.
	TTL time.Duration
}

// controllerRunner runs the server's controllers on one replica at a time:
// from the post-start hook it campaigns in the election "controllers" and,
// while it leads, runs every controller; stop ends them, waits for them and
// closes the etcd client, before storage goes away.
type controllerRunner struct {
	client      *clientv3.Client
	election    leaderelection.Config
	elect       bool // false: run the controllers without an election
	controllers []Controller

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// newControllerRunner builds the runner; unless the election is disabled,
// with an etcd client from the storage configuration (servers and TLS
// files), its keys under the storage prefix.
func newControllerRunner(storage storagebackend.Config, le LeaderElectionConfig, controllers []Controller) (*controllerRunner, error) {
	r := &controllerRunner{elect: !le.Disabled, controllers: controllers}
	if !r.elect {
		return r, nil
	}
	client, err := NewEtcdClient(storage)
	if err != nil {
		return nil, fmt.Errorf("etcd client for leader election: %w", err)
	}
	r.client = client
	r.election = leaderelection.Config{Client: client, Name: ControllersElection, Identity: le.Identity, TTL: le.TTL}
	return r, nil
}

// NewEtcdClient returns a client of the etcd the storage configuration
// names, whose keys live under the storage prefix (so that the election
// key is <prefix>/events-apiserver/leader/<name>).
func NewEtcdClient(storage storagebackend.Config) (*clientv3.Client, error) {
	var tlsConfig *tls.Config
	t := storage.Transport
	if t.CertFile != "" || t.KeyFile != "" || t.TrustedCAFile != "" {
		var err error
		tlsConfig, err = transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.TrustedCAFile}.ClientConfig()
		if err != nil {
			return nil, err
		}
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:            t.ServerList,
		TLS:                  tlsConfig,
		DialTimeout:          20 * time.Second,
		DialKeepAliveTime:    30 * time.Second,
		DialKeepAliveTimeout: 10 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	prefix := path.Clean("/" + storage.Prefix)
	if prefix != "/" {
		client.KV = namespace.NewKV(client.KV, prefix)
		client.Watcher = namespace.NewWatcher(client.Watcher, prefix)
		client.Lease = namespace.NewLease(client.Lease, prefix)
	}
	return client, nil
}

// install hands the runner to the server's hooks.
func (r *controllerRunner) install(server *genericapiserver.GenericAPIServer) error {
	if err := server.AddPostStartHook(controllersHookName, func(hook genericapiserver.PostStartHookContext) error {
		r.start(hook)
		return nil
	}); err != nil {
		return err
	}
	return server.AddPreShutdownHook(controllersHookName, func() error {
		r.stop()
		return nil
	})
}

// start campaigns in the background until stop is called or ctx ends; with
// the election disabled it runs the controllers at once.
func (r *controllerRunner) start(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		if !r.elect {
			r.runControllers(ctx)
			return
		}
		if err := leaderelection.Run(ctx, r.election, r.runControllers); err != nil {
			klog.FromContext(ctx).Error(err, "Controllers not started")
		}
	}(r.done)
}

// runControllers runs every controller until ctx ends and waits for all.
func (r *controllerRunner) runControllers(ctx context.Context) {
	logger := klog.FromContext(ctx)
	var wg sync.WaitGroup
	for _, c := range r.controllers {
		wg.Go(func() {
			logger.Info("Starting controller", "controller", c.Name())
			c.Run(klog.NewContext(ctx, logger.WithName(c.Name())))
			logger.Info("Stopped controller", "controller", c.Name())
		})
	}
	wg.Wait()
}

// stop ends what start started, waits for the controllers' work in flight
// and closes the etcd client. Without start it only closes the client.
func (r *controllerRunner) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		r.cancel()
		<-r.done
	}
	if r.client != nil {
		_ = r.client.Close()
		r.client = nil
	}
}
