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
	"crypto/tls"
	"fmt"
	"path"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/namespace"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/archive/archiver"
	"github.com/kube-events/events-apiserver/pkg/archive/export"
	"github.com/kube-events/events-apiserver/pkg/controller"
	"github.com/kube-events/events-apiserver/pkg/etcdmaint"
	"github.com/kube-events/events-apiserver/pkg/leaderelection"
	"github.com/kube-events/events-apiserver/pkg/mirror"
	"github.com/kube-events/events-apiserver/pkg/registry/event/chains"
	"github.com/kube-events/events-apiserver/pkg/registry/event/series"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
)

// ControllersElection is the name of the election under which the
// server's elected controllers run.
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

var (
	_ controller.Controller = &mirror.Mirror{}
	_ controller.Controller = &series.Sweeper{}
	_ controller.Controller = &series.StateController{}
	_ controller.Controller = &etcdmaint.Maintainer{}
	_ controller.Controller = &eventstorage.Folder{}
	_ controller.Controller = &archiver.Archiver{}
	_ controller.Controller = &export.Exporter{}
	_ controller.Controller = &etcdmaint.Compactor{}
	_ controller.Controller = &chains.Annotator{}

	_ controller.Reporter = &archiver.Archiver{}
	_ controller.Reporter = &export.Exporter{}
	_ controller.Reporter = &etcdmaint.Compactor{}
	_ controller.Reporter = &etcdmaint.Maintainer{}
	_ controller.Reporter = &mirror.Mirror{}
)

// newControllers builds the one Manager of every loop the server runs:
// under the election "controllers", the series controllers, the mirror and
// the archiver (into a, when set); on every replica, the etcd maintenance,
// the etcd compaction held back by the archive, and the flush of folded
// counts. The election, the maintenance and the compaction share one etcd
// client of the events storage, closed once every loop has stopped.
func (c CompletedConfig) newControllers(store *eventstorage.REST, a archive.Archive) (*controller.Manager, error) {
	extra := c.ExtraConfig
	elected, err := c.electedControllers(store, a)
	if err != nil {
		return nil, err
	}
	cfg := controller.Config{Name: controllersHookName, ProgressDeadline: extra.ControllerProgressDeadline, Elected: elected}
	if folder := store.Folder(); folder != nil {
		cfg.EveryReplica = append(cfg.EveryReplica, folder)
	}

	compacting := a != nil && extra.Archive.CompactionInterval > 0
	elect := len(cfg.Elected) > 0 && !extra.LeaderElection.Disabled
	if elect || extra.EtcdMaintenance != nil || compacting {
		options, err := c.eventsStorageOptions()
		if err != nil {
			return nil, err
		}
		client, err := NewEtcdClient(options.StorageConfig.Config)
		if err != nil {
			return nil, fmt.Errorf("etcd client for the election and the etcd maintenance and compaction: %w", err)
		}
		cfg.Stopped = client.Close
		if elect {
			le := extra.LeaderElection
			cfg.Election = &leaderelection.Config{Client: client, Name: ControllersElection, Identity: le.Identity, TTL: le.TTL}
		}
		if extra.EtcdMaintenance != nil {
			// On every replica, not under the election: the loop exists to
			// bring etcd back from NOSPACE, and while etcd refuses writes no
			// replica can win a new election (a campaign is a write), so a
			// leader lost during the alarm would leave nobody to clear it.
			// Its steps are safe to repeat: defragmenting a member that
			// another replica just defragmented finds little to do, and
			// disarming a disarmed alarm is a no-op.
			maintenance := *extra.EtcdMaintenance
			maintenance.Client = client
			if a != nil {
				// Its compaction under NOSPACE, held as the periodic one.
				maintenance.Policy = compactionPolicy(client, *extra.Archive)
			}
			cfg.EveryReplica = append(cfg.EveryReplica, etcdmaint.New(maintenance))
		}
		if compacting {
			// On every replica, as the generic storage's compaction it
			// replaces: the replicas (and a kube-apiserver sharing the
			// etcd) take turns through etcd's compact_rev_key, so one of
			// them compacts each interval. Under the election, etcd would go
			// uncompacted, and grow towards NOSPACE, whenever no replica
			// leads, which is when a full etcd refuses the campaign's
			// write. Its hold reads the checkpoint from etcd, so it needs
			// no archiver on this replica. Not being elected, it has no
			// fence, and etcd's Compact could not take one: a replica
			// paused within a round compacts, if its turn still holds, to
			// a checkpoint it read before the pause, at or below the
			// current one, since only the leader's fenced writes move the
			// checkpoint, and never backwards: it compacts less, never
			// past what the archiver needs.
			cfg.EveryReplica = append(cfg.EveryReplica, newCompactor(client, *extra.Archive))
		}
	}
	manager, err := controller.NewManager(cfg)
	if err != nil && cfg.Stopped != nil {
		_ = cfg.Stopped()
	}
	return manager, err
}

// electedControllers are the loops that run on the elected replica alone:
// the series controllers, the mirror, the ancestry annotator and the
// archiver (into a, when set).
func (c CompletedConfig) electedControllers(store *eventstorage.REST, a archive.Archive) ([]controller.Controller, error) {
	extra := c.ExtraConfig
	elected := append([]controller.Controller(nil), extra.Elected...)
	if extra.SeriesSweeper != nil {
		sweeper, err := series.NewSweeper(store, *extra.SeriesSweeper)
		if err != nil {
			return nil, fmt.Errorf("event series sweeper: %w", err)
		}
		state := series.NewStateController(store, *extra.SeriesSweeper, clock.RealClock{})
		elected = append(elected, state, sweeper)
	}
	if extra.Mirror != nil {
		m, err := mirror.NewForConfig(*extra.Mirror, store, Codecs.UniversalDecoder())
		if err != nil {
			return nil, fmt.Errorf("events mirror: %w", err)
		}
		elected = append(elected, m)
	}
	if extra.Chains != nil {
		annotator, err := c.newChainAnnotator(store, extra.Chains, extra.SharedWithKubeAPIServer)
		if err != nil {
			return nil, fmt.Errorf("ancestry annotator: %w", err)
		}
		elected = append(elected, annotator)
	}
	if a != nil {
		// Elected: one replica follows etcd into the archive and moves the
		// one checkpoint; two would append every state twice (harmless,
		// Append is idempotent) and race on the checkpoint.
		archiving, err := c.newArchiver(a)
		if err != nil {
			return nil, fmt.Errorf("archiver: %w", err)
		}
		elected = append(elected, archiving)
		if extra.Archive.Export != nil {
			// Elected too: one replica moves the export's cursor.
			exporting, err := c.newExporter(a, *extra.Archive.Export)
			if err != nil {
				return nil, fmt.Errorf("export: %w", err)
			}
			elected = append(elected, exporting)
		}
	}
	return elected, nil
}

// NewEtcdClient returns a client of the etcd the storage configuration
// names, whose keys live under the storage prefix (so that the election
// key is <prefix>/events-apiserver/leader/<name>), and whose writes under
// an elected loop's context are fenced (leaderelection.NewKV): applied
// only while this replica leads.
func NewEtcdClient(storage storagebackend.Config) (*clientv3.Client, error) {
	cfg, err := etcdClientConfig(storage.Transport)
	if err != nil {
		return nil, err
	}
	client, err := clientv3.New(cfg)
	if err != nil {
		return nil, err
	}
	if prefix := storagePrefix(storage.Prefix); prefix != "" {
		client.KV = namespace.NewKV(client.KV, prefix)
		client.Watcher = namespace.NewWatcher(client.Watcher, prefix)
		client.Lease = namespace.NewLease(client.Lease, prefix)
	}
	client.KV = leaderelection.NewKV(client.KV, "")
	return client, nil
}

// etcdClientConfig is the client configuration of the etcd t names.
func etcdClientConfig(t storagebackend.TransportConfig) (clientv3.Config, error) {
	var tlsConfig *tls.Config
	if t.CertFile != "" || t.KeyFile != "" || t.TrustedCAFile != "" {
		var err error
		tlsConfig, err = transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.TrustedCAFile}.ClientConfig()
		if err != nil {
			return clientv3.Config{}, err
		}
	}
	return clientv3.Config{
		Endpoints:            t.ServerList,
		TLS:                  tlsConfig,
		DialTimeout:          20 * time.Second,
		DialKeepAliveTime:    30 * time.Second,
		DialKeepAliveTimeout: 10 * time.Second,
	}, nil
}

// storagePrefix is the namespace of the server's etcd clients under the
// storage prefix: "" for none.
func storagePrefix(prefix string) string {
	if prefix = path.Clean("/" + prefix); prefix == "/" {
		return ""
	}
	return prefix
}
