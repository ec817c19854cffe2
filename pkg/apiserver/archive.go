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
	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/klog/v2"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/archive/archiver"
	"github.com/kube-events/events-apiserver/pkg/archive/export"
	"github.com/kube-events/events-apiserver/pkg/continuetoken"
	"github.com/kube-events/events-apiserver/pkg/etcdmaint"
	"github.com/kube-events/events-apiserver/pkg/registry/event/history"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
)

// ArchiveConfig configures the history of events (see pkg/archive).
type ArchiveConfig struct {
	// Open opens the archive. New opens it once, and the server closes it
	// once it has stopped serving and its controllers have stopped (the
	// generic server's Destroy), or at once if New fails.
	Open func(ctx context.Context) (archive.Archive, error)
	// CompactionInterval is how often the server compacts its etcd itself
	// (etcdmaint.Compactor), never past the archive's checkpoint; the
	// generic storage's compaction must then be off (its
	// CompactionInterval 0). 0: the server does not compact (someone
	// else does: see the offload section of docs/history.md).
	CompactionInterval time.Duration
	// MaxCompactionHold is how old the checkpoint may be and still hold
	// compaction back; archiver.DefaultMaxHold when zero.
	MaxCompactionHold time.Duration
	// Export, when set, sends every archived state to an OTLP receiver
	// (see pkg/archive/export), from the elected replica.
	Export *ExportConfig
}

// ExportConfig configures the OTLP export of the archive.
type ExportConfig struct {
	OTLP export.OTLPConfig
	// BatchSize is the most states an export request carries.
	BatchSize int
	// Selection returns what is exported now (the event policy's); nil
	// exports every state.
	Selection func(ctx context.Context) *export.Selection
}

// openArchive opens the configured archive and returns it with the
// function that closes it (once, however often it is called).
func (c CompletedConfig) openArchive(ctx context.Context) (archive.Archive, func(), error) {
	a, err := c.ExtraConfig.Archive.Open(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the archive: %w", err)
	}
	logger := klog.FromContext(ctx)
	var once sync.Once
	return a, func() {
		once.Do(func() {
			if err := a.Close(); err != nil {
				logger.Error(err, "Closing the archive failed")
			}
		})
	}, nil
}

// eventsStorageOptions are the events store's storage options: its etcd,
// prefix, codec and transformer.
func (c CompletedConfig) eventsStorageOptions() (generic.RESTOptions, error) {
	options, err := c.GenericConfig.RESTOptionsGetter.GetRESTOptions(core.Resource("events"), &core.Event{})
	if err != nil {
		return options, fmt.Errorf("events storage options: %w", err)
	}
	return options, nil
}

// withHistory wraps the store storage.NewREST built (folding included) so
// that lists with history.since read the archive too; every other request
// is the store's.
func (c CompletedConfig) withHistory(store *eventstorage.REST, a archive.Archive, timeline *eventstorage.Timeline, tokens *continuetoken.Codec) (*history.REST, error) {
	options, err := c.eventsStorageOptions()
	if err != nil {
		return nil, err
	}
	return history.New(store, a, options.StorageConfig.Codec, timeline, tokens), nil
}

// newArchiver returns the controller that archives every state the store
// writes, reading etcd as the store does, through a client of its own
// (its watch follows etcd for as long as this replica leads).
func (c CompletedConfig) newArchiver(a archive.Archive) (*archiver.Archiver, error) {
	options, err := c.eventsStorageOptions()
	if err != nil {
		return nil, err
	}
	storage := options.StorageConfig.Config
	cfg := archiver.Config{
		Archive:        a,
		NewClient:      func() (*clientv3.Client, error) { return NewEtcdClient(storage) },
		StoragePrefix:  storage.Prefix,
		ResourcePrefix: options.ResourcePrefix,
		Codec:          storage.Codec,
		Transformer:    storage.Transformer,
	}
	if c.ExtraConfig.Chains != nil {
		cfg.Chains = c.ExtraConfig.Chains
	}
	if cfg.Seals, err = c.chainSealer(); err != nil {
		return nil, err
	}
	return archiver.New(cfg)
}

// newExporter returns the controller that exports what the archiver
// archived, through a client of its own whose cursor writes are fenced.
func (c CompletedConfig) newExporter(a archive.Archive, cfg ExportConfig) (*export.Exporter, error) {
	scanner, ok := a.(archive.Scanner)
	if !ok {
		return nil, fmt.Errorf("the archive %T cannot be read in order for the export", a)
	}
	options, err := c.eventsStorageOptions()
	if err != nil {
		return nil, err
	}
	storage := options.StorageConfig.Config
	return export.New(export.Config{
		Archive:     scanner,
		NewClient:   func() (*clientv3.Client, error) { return NewEtcdClient(storage) },
		Decoder:     storage.Codec,
		NewExporter: func(ctx context.Context) (sdklog.Exporter, error) { return export.NewOTLPExporter(ctx, cfg.OTLP) },
		Resource:    resource.NewSchemaless(attribute.String("service.name", "events-apiserver")),
		Selection:   cfg.Selection,
		BatchSize:   cfg.BatchSize,
	})
}

// newCompactor returns the periodic etcd compaction, through client, under
// compactionPolicy.
func newCompactor(client *clientv3.Client, cfg ArchiveConfig) *etcdmaint.Compactor {
	return etcdmaint.NewCompactor(etcdmaint.CompactorConfig{
		Client:   client,
		Interval: cfg.CompactionInterval,
		Policy:   compactionPolicy(client, cfg),
	})
}

// compactionPolicy is the one policy of every compaction the server runs
// with an archive (the periodic one and the etcd maintenance's under
// NOSPACE): never past the revision after the archive's checkpoint, read
// through client (under the storage prefix, where the checkpoint is),
// while the checkpoint is younger than cfg's bound.
func compactionPolicy(client *clientv3.Client, cfg ArchiveConfig) etcdmaint.Policy {
	maxHold := cfg.MaxCompactionHold
	if maxHold == 0 {
		maxHold = archiver.DefaultMaxHold
	}
	return etcdmaint.Policy{Hold: archiver.CompactionHold(client, maxHold, time.Now)}
}
