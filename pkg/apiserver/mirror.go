package apiserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/klog/v2"

	"github.com/kube-events/events-apiserver/pkg/leaderelection"
	"github.com/kube-events/events-apiserver/pkg/mirror"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
)

// mirrorHookName names the post-start hook that starts the mirror and the
// pre-shutdown hook that stops it; mirrorElection is the election that
// picks the one replica that mirrors.
const (
	mirrorHookName = "start-events-mirror"
	mirrorElection = "mirror"
)

// installMirror builds the mirror of config into events and runs it, on
// the replica elected through the server's etcd (storage), from the
// server's start until its shutdown: stopped, and waited for, in a
// pre-shutdown hook, before storage goes away.
//
// TODO(issue 10): run it as a Controller of the server's runner, under the
// shared election, once that lands.
func installMirror(server *genericapiserver.GenericAPIServer, events *eventregistry.REST, config mirror.Config, storage storagebackend.TransportConfig, electionTTL time.Duration) error {
	m, err := mirror.NewForConfig(config, events, Codecs.UniversalDecoder())
	if err != nil {
		return err
	}
	runner := &sweeperRunner{}
	if err := server.AddPostStartHook(mirrorHookName, func(hook genericapiserver.PostStartHookContext) error {
		runner.start(hook, func(ctx context.Context) {
			client, err := newEtcdClient(storage)
			if err != nil {
				klog.FromContext(ctx).Error(err, "Not mirroring: no etcd client for the leader election")
				return
			}
			defer client.Close()
			err = leaderelection.Run(ctx, leaderelection.Config{Client: client, Name: mirrorElection, TTL: electionTTL}, m.Run)
			if err != nil {
				klog.FromContext(ctx).Error(err, "Not mirroring: leader election failed")
			}
		})
		return nil
	}); err != nil {
		return err
	}
	return server.AddPreShutdownHook(mirrorHookName, func() error {
		runner.stop()
		return nil
	})
}

// newEtcdClient connects to the storage's etcd with its TLS files.
func newEtcdClient(storage storagebackend.TransportConfig) (*clientv3.Client, error) {
	var tlsConfig *tls.Config
	if storage.CertFile != "" || storage.KeyFile != "" || storage.TrustedCAFile != "" {
		var err error
		tlsInfo := transport.TLSInfo{CertFile: storage.CertFile, KeyFile: storage.KeyFile, TrustedCAFile: storage.TrustedCAFile}
		if tlsConfig, err = tlsInfo.ClientConfig(); err != nil {
			return nil, fmt.Errorf("etcd TLS: %w", err)
		}
	}
	return clientv3.New(clientv3.Config{Endpoints: storage.ServerList, TLS: tlsConfig, DialTimeout: 20 * time.Second, Logger: zap.NewNop()})
}
