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

package apiserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiserver/pkg/registry/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/archive/archiver"
	"github.com/kube-events/events-apiserver/pkg/etcdmaint"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	"github.com/kube-events/events-apiserver/pkg/registry/event/history"
)

// ArchiveConfig configures the history of events (see pkg/archive).
type ArchiveConfig struct {
	// Archive is the engine; the caller opens and closes it.
	Archive archive.Archive
	// CompactionInterval is how often the server compacts its etcd itself
	// (etcdmaint.Compactor), never past the archive's checkpoint; the
	// caller turns the generic storage's compaction off. 0: the server
	// does not compact (someone else does: see the offload note in
	// docs).
	CompactionInterval time.Duration
	// MaxCompactionHold is how old the checkpoint may be and still hold
	// compaction back; archiver.DefaultMaxHold when zero.
	MaxCompactionHold time.Duration
}

// compactorHookName names the hooks that start and stop the compactor.
const compactorHookName = "start-etcd-compactor"

// eventsStorageOptions are the events store's storage options: its etcd,
// prefix, codec and transformer.
func (c CompletedConfig) eventsStorageOptions() (generic.RESTOptions, error) {
	options, err := c.GenericConfig.RESTOptionsGetter.GetRESTOptions(core.Resource("events"), &core.Event{})
	if err != nil {
		return options, fmt.Errorf("events storage options: %w", err)
	}
	return options, nil
}

// withHistory returns the store that lists with history.since read the
// archive through.
func (c CompletedConfig) withHistory(store *eventregistry.REST, cfg ArchiveConfig) (*history.REST, error) {
	options, err := c.eventsStorageOptions()
	if err != nil {
		return nil, err
	}
	return history.New(store, cfg.Archive, options.StorageConfig.Codec), nil
}

// newArchiver returns the controller that archives every state the store
// writes, reading etcd as the store does.
func (c CompletedConfig) newArchiver(cfg ArchiveConfig) (*archiver.Archiver, error) {
	options, err := c.eventsStorageOptions()
	if err != nil {
		return nil, err
	}
	storage := options.StorageConfig.Config
	return archiver.New(archiver.Config{
		Archive:        cfg.Archive,
		NewClient:      func() (*clientv3.Client, error) { return NewEtcdClient(storage) },
		StoragePrefix:  storage.Prefix,
		ResourcePrefix: options.ResourcePrefix,
		Codec:          storage.Codec,
		Transformer:    storage.Transformer,
	})
}

// installCompactor runs the etcd compaction, held back by the archive's
// checkpoint, on this replica from the server's start to its shutdown.
// Every replica runs it, as every kube-apiserver runs the generic one:
// they take turns through etcd.
func (c CompletedConfig) installCompactor(server *genericapiserver.GenericAPIServer, cfg ArchiveConfig) error {
	options, err := c.eventsStorageOptions()
	if err != nil {
		return err
	}
	client, err := NewEtcdClient(options.StorageConfig.Config)
	if err != nil {
		return fmt.Errorf("connecting to etcd for its compaction: %w", err)
	}
	maxHold := cfg.MaxCompactionHold
	if maxHold == 0 {
		maxHold = archiver.DefaultMaxHold
	}
	compactor := etcdmaint.NewCompactor(etcdmaint.CompactorConfig{
		Client:   client,
		Interval: cfg.CompactionInterval,
		Hold:     archiver.CompactionHold(client, maxHold, time.Now),
	})
	var (
		mu     sync.Mutex
		cancel context.CancelFunc
		done   chan struct{}
	)
	if err := server.AddPostStartHook(compactorHookName, func(hook genericapiserver.PostStartHookContext) error {
		mu.Lock()
		defer mu.Unlock()
		var ctx context.Context
		ctx, cancel = context.WithCancel(hook) //nolint:gosec // cancel is called by the pre-shutdown hook below
		done = make(chan struct{})
		go func(done chan struct{}) {
			defer close(done)
			compactor.Run(ctx)
		}(done)
		return nil
	}); err != nil {
		return err
	}
	return server.AddPreShutdownHook(compactorHookName, func() error {
		mu.Lock()
		defer mu.Unlock()
		if cancel != nil {
			cancel()
			<-done
		}
		return client.Close()
	})
}
