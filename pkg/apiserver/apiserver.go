// Package apiserver assembles the events API server: one events store
// installed under the legacy core group (/api/v1) and under events.k8s.io
// v1beta1 and v1, on a generic API server from k8s.io/apiserver.
package apiserver

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/admission/eventseries"
	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	"github.com/kube-events/events-apiserver/pkg/apis/events"
	eventsv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	eventsv1beta1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1beta1"
	"github.com/kube-events/events-apiserver/pkg/etcdmaint"
	"github.com/kube-events/events-apiserver/pkg/mirror"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	"github.com/kube-events/events-apiserver/pkg/registry/event/series"
)

// DefaultEventTTL is how long an event lives after its last write unless
// configured otherwise; kube-apiserver's --event-ttl default.
const DefaultEventTTL = time.Hour

// DefaultWatchTerminationGracePeriod is how long a stopping server takes
// to end its watches. The generic server's default, 0, leaves them open,
// so its HTTP shutdown waits out the whole request timeout (60s) whenever
// a client watches: a rolling update then keeps every watcher on a
// replica that is going away. With a grace period, the watches are ended
// (at 200 a second or faster) and the clients resume on another replica.
const DefaultWatchTerminationGracePeriod = 5 * time.Second

// eventsGroupPriority is kube-apiserver's group priority for events.k8s.io.
const eventsGroupPriority = 17750

// foldFlushTimeout bounds the final write of folded counts at shutdown.
const foldFlushTimeout = 10 * time.Second

// ExtraConfig is the configuration specific to the events server.
type ExtraConfig struct {
	// EventTTL is the lease every create and update puts an event under.
	EventTTL time.Duration
	// SeriesSweeper, when set, runs the series controllers
	// (pkg/registry/event/series: the state controller and the sweeper)
	// with these thresholds (those of the EventSeries admission plugin).
	// Nil when the plugin is disabled: no plugin, no series states to keep.
	SeriesSweeper *eventseries.Thresholds
	// Fold, when set, makes the store fold isomorphic creates of hot series
	// (pkg/registry/event Folder); the folded counts still in memory are
	// written before the server stops. Nil: every create is stored.
	Fold *eventregistry.FoldConfig
	// Mirror, when set, copies the events of the kube-apiserver it names
	// into the store (see pkg/mirror): a controller, run on the elected
	// replica only.
	Mirror *mirror.Config
	// LeaderElection tunes the election that picks the one replica running
	// the server's controllers (the series sweeper, the mirror, ...).
	LeaderElection LeaderElectionConfig
	// Archive, when set, keeps the history of events: the archiver runs
	// on the elected replica, lists with history.since read the archive
	// as well as the store, and the server compacts etcd itself, never
	// past the archive's checkpoint (see ArchiveConfig).
	Archive *ArchiveConfig
	// EtcdMaintenance, when set, runs the etcd housekeeping of
	// pkg/etcdmaint on every replica (see installEtcdMaintenance for why
	// not under the election). Nil turns it off, for an etcd that someone
	// else maintains.
	EtcdMaintenance *etcdmaint.Config
}

// Config is the generic server configuration plus ExtraConfig. Its
// GenericConfig.RESTOptionsGetter must come from a storage factory made by
// NewStorageFactory, so that every API version shares one etcd key space.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	ExtraConfig   ExtraConfig
}

// EventsServer is the running events API server.
type EventsServer struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
	// Events is the one store behind every served version.
	Events *eventregistry.REST
}

type completedConfig struct {
	GenericConfig genericapiserver.CompletedConfig
	ExtraConfig   *ExtraConfig
}

// CompletedConfig is a Config on which Complete has been called.
type CompletedConfig struct {
	*completedConfig
}

// Complete fills in defaults that can be derived from the rest of the
// configuration. It mutates the receiver.
func (cfg *Config) Complete() CompletedConfig {
	if cfg.ExtraConfig.EventTTL == 0 {
		cfg.ExtraConfig.EventTTL = DefaultEventTTL
	}
	cfg.GenericConfig.LivezChecks = withoutEtcdChecks(cfg.GenericConfig.LivezChecks)
	if cfg.GenericConfig.ShutdownWatchTerminationGracePeriod == 0 {
		cfg.GenericConfig.ShutdownWatchTerminationGracePeriod = DefaultWatchTerminationGracePeriod
	}
	return CompletedConfig{&completedConfig{
		GenericConfig: cfg.GenericConfig.Complete(),
		ExtraConfig:   &cfg.ExtraConfig,
	}}
}

// New builds the server: one events store, installed as /api/v1 events and
// as events.k8s.io/v1beta1 and v1 events.
func (c CompletedConfig) New() (*EventsServer, error) {
	genericServer, err := c.GenericConfig.New("events-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}

	store, err := eventregistry.NewREST(Scheme, c.GenericConfig.RESTOptionsGetter, c.ExtraConfig.EventTTL)
	if err != nil {
		return nil, fmt.Errorf("creating the events store: %w", err)
	}

	if c.ExtraConfig.Fold != nil {
		folder, err := store.EnableFolding(*c.ExtraConfig.Fold, clock.RealClock{})
		if err != nil {
			return nil, err
		}
		err = genericServer.AddPreShutdownHook("events-fold-flush", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), foldFlushTimeout)
			defer cancel()
			folder.Flush(ctx)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}

	var served rest.Storage = store
	if c.ExtraConfig.Archive != nil {
		if served, err = c.withHistory(store, *c.ExtraConfig.Archive); err != nil {
			return nil, err
		}
		if c.ExtraConfig.Archive.CompactionInterval > 0 {
			if err := c.installCompactor(genericServer, *c.ExtraConfig.Archive); err != nil {
				return nil, err
			}
		}
	}

	controllers, err := c.controllers(store)
	if err != nil {
		return nil, err
	}
	if len(controllers) > 0 {
		if err := c.installControllers(genericServer, controllers); err != nil {
			return nil, err
		}
	}

	if c.ExtraConfig.EtcdMaintenance != nil {
		if err := c.installEtcdMaintenance(genericServer, *c.ExtraConfig.EtcdMaintenance); err != nil {
			return nil, fmt.Errorf("installing the etcd maintenance: %w", err)
		}
	}

	legacy := genericapiserver.NewDefaultAPIGroupInfo(core.GroupName, Scheme, ParameterCodec, Codecs)
	legacy.VersionedResourcesStorageMap[corev1.SchemeGroupVersion.Version] = map[string]rest.Storage{"events": served}
	if err := genericServer.InstallLegacyAPIGroup(genericapiserver.DefaultLegacyAPIPrefix, &legacy); err != nil {
		return nil, fmt.Errorf("installing /api/v1 events: %w", err)
	}

	group := genericapiserver.NewDefaultAPIGroupInfo(events.GroupName, Scheme, ParameterCodec, Codecs)
	group.VersionedResourcesStorageMap[eventsv1beta1.SchemeGroupVersion.Version] = map[string]rest.Storage{"events": served}
	group.VersionedResourcesStorageMap[eventsv1.SchemeGroupVersion.Version] = map[string]rest.Storage{"events": served}
	if err := genericServer.InstallAPIGroup(&group); err != nil {
		return nil, fmt.Errorf("installing events.k8s.io events: %w", err)
	}
	// Aggregated discovery orders versions by their own priorities, not by
	// the scheme's; give it the scheme's order, so that both discovery
	// formats name the same preferred version.
	if manager := genericServer.AggregatedDiscoveryGroupManager; manager != nil {
		for i, gv := range group.PrioritizedVersions {
			manager.SetGroupVersionPriority(metav1.GroupVersion{Group: gv.Group, Version: gv.Version},
				eventsGroupPriority, len(group.PrioritizedVersions)-i)
		}
	}

	return &EventsServer{GenericAPIServer: genericServer, Events: store}, nil
}

var _ Controller = &mirror.Mirror{}

// controllers builds the loops the server runs on the elected replica.
func (c CompletedConfig) controllers(store *eventregistry.REST) ([]Controller, error) {
	var controllers []Controller
	if c.ExtraConfig.SeriesSweeper != nil {
		sweeper, err := series.NewSweeper(store, *c.ExtraConfig.SeriesSweeper)
		if err != nil {
			return nil, fmt.Errorf("event series sweeper: %w", err)
		}
		state := series.NewStateController(store, *c.ExtraConfig.SeriesSweeper, clock.RealClock{})
		controllers = append(controllers, state, sweeper)
	}
	if c.ExtraConfig.Mirror != nil {
		m, err := mirror.NewForConfig(*c.ExtraConfig.Mirror, store, Codecs.UniversalDecoder())
		if err != nil {
			return nil, fmt.Errorf("events mirror: %w", err)
		}
		controllers = append(controllers, m)
	}
	if c.ExtraConfig.Archive != nil {
		a, err := c.newArchiver(*c.ExtraConfig.Archive)
		if err != nil {
			return nil, fmt.Errorf("archiver: %w", err)
		}
		controllers = append(controllers, a)
	}
	return controllers, nil
}

// installControllers runs controllers under the election "controllers",
// through an etcd client of the events storage, from the server's start to
// its shutdown.
func (c CompletedConfig) installControllers(server *genericapiserver.GenericAPIServer, controllers []Controller) error {
	options, err := c.GenericConfig.RESTOptionsGetter.GetRESTOptions(core.Resource("events"), &core.Event{})
	if err != nil {
		return fmt.Errorf("events storage options: %w", err)
	}
	runner, err := newControllerRunner(options.StorageConfig.Config, c.ExtraConfig.LeaderElection, controllers)
	if err != nil {
		return err
	}
	return runner.install(server)
}
