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

// Package apiserver assembles the events API server: one events store
// installed under the legacy core group (/api/v1) and under events.k8s.io
// v1beta1 and v1, and the summaries of its events
// (summaries.kube-events.io/v1alpha1), on a generic API server from
// k8s.io/apiserver.
package apiserver

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/kube-events/events-apiserver/pkg/ancestry"
	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apis/events"
	eventsv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	eventsv1beta1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1beta1"
	"github.com/kube-events/events-apiserver/pkg/apis/summaries"
	summariesv1alpha1 "github.com/kube-events/events-apiserver/pkg/apis/summaries/v1alpha1"
	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/continuetoken"
	"github.com/kube-events/events-apiserver/pkg/controller"
	"github.com/kube-events/events-apiserver/pkg/etcdmaint"
	"github.com/kube-events/events-apiserver/pkg/mirror"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
	"github.com/kube-events/events-apiserver/pkg/registry/eventsummary"
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

// ExtraConfig is the configuration specific to the events server.
type ExtraConfig struct {
	// EventTTL is the lease every create and update puts an event under.
	EventTTL time.Duration
	// StoreCache is what serves the store's reads from memory; "" is the
	// compact live store, eventstorage.NoStoreCache none (every read from
	// etcd, as with --watch-cache=false).
	StoreCache eventstorage.StoreCache
	// SeriesSweeper, when set, runs the series controllers
	// (pkg/registry/event/series: the state controller and the sweeper)
	// with these thresholds of the event policy, which the EventSeries
	// admission plugin applies too. Nil when the plugin is disabled: no
	// plugin, no series states to keep.
	SeriesSweeper *eventpolicy.Series
	// Fold, when set, makes the store fold isomorphic creates of hot series
	// (pkg/registry/event/storage Folder); the folded counts still in
	// memory are written before the server stops. Nil: every create is
	// stored.
	Fold *eventpolicy.Folding
	// Mirror, when set, copies the events of the kube-apiserver it names
	// into the store (see pkg/mirror): a controller, run on the elected
	// replica only.
	Mirror *mirror.Config
	// LeaderElection tunes the election that picks the one replica running
	// the server's controllers (the series sweeper, the mirror, ...).
	LeaderElection LeaderElectionConfig
	// Archive, when set, keeps the history of events: the archiver runs
	// on the elected replica, lists with history.since read the archive
	// as well as the store, and, with a CompactionInterval, the server
	// compacts etcd itself, never past the archive's checkpoint (see
	// ArchiveConfig).
	Archive *ArchiveConfig
	// ControllerProgressDeadline is how long a loop may have work without
	// progress, while its dependencies answer, before its /livez check
	// fails; controller.DefaultProgressDeadline if zero.
	ControllerProgressDeadline time.Duration
	// EtcdMaintenance, when set, runs the etcd housekeeping of
	// pkg/etcdmaint on every replica (see newControllers for why not
	// under the election). Nil turns it off, for an etcd that someone
	// else maintains.
	EtcdMaintenance *etcdmaint.Config
	// Chains, when set, resolves the chain of controller owners of each
	// new event's regarding object, which the event keeps in the
	// ownerchain.Annotation; an elected controller
	// resolves again the chains cut short (pkg/registry/event/chains), and
	// the archiver completes from its cache those of the states it
	// archives. Nil without a kube-apiserver to read it from
	// (standalone): events carry no chain.
	Chains *ancestry.Resolver
	// SharedWithKubeAPIServer says kube-apiserver writes the cluster's
	// events straight into the store's etcd (offload mode), past the
	// strategy: with Chains, the elected controller gives those events
	// their chains too.
	SharedWithKubeAPIServer bool
	// Elected are further loops the elected replica runs, next to the
	// server's own (the renewal of self-managed certificates).
	Elected []controller.Controller
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
	Events *eventstorage.REST
	// Controllers runs every loop of the server, from the generic server's
	// post-start hook to its pre-shutdown hook; each loop has a health
	// check on /livez.
	Controllers *controller.Manager
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
	if cfg.ExtraConfig.StoreCache == "" {
		cfg.ExtraConfig.StoreCache = eventstorage.CompactStore
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
// as events.k8s.io/v1beta1 and v1 events, the event summaries of what it
// serves, and the controllers. ctx carries the logger of what New opens.
func (c CompletedConfig) New(ctx context.Context) (_ *EventsServer, err error) {
	genericServer, err := c.GenericConfig.New("events-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}

	// With an archive, the store's cache orders the live events by their
	// last observation too: history pages read theirs alone.
	var timeline *eventstorage.Timeline
	if c.ExtraConfig.Archive != nil {
		timeline = eventstorage.NewTimeline()
	}
	store, err := c.newStore(timeline)
	if err != nil {
		return nil, err
	}

	// The history pages and the summaries sign their continue tokens.
	tokens, err := c.continueTokens()
	if err != nil {
		return nil, err
	}

	// The history: lists with history.since read the archive as well as
	// the store; every other request is the store's.
	var served rest.StandardStorage = store
	var arch archive.Archive
	if c.ExtraConfig.Archive != nil {
		var closeArchive func()
		if arch, closeArchive, err = c.openArchive(ctx); err != nil {
			return nil, err
		}
		// Destroy runs once the server has stopped serving and its
		// controllers (the archiver) have stopped.
		genericServer.RegisterDestroyFunc(closeArchive)
		defer func() {
			if err != nil {
				closeArchive()
			}
		}()
		if served, err = c.withHistory(store, arch, timeline, tokens); err != nil {
			return nil, err
		}
	}

	controllers, err := c.newControllers(store, arch)
	if err != nil {
		return nil, err
	}
	if err := controllers.Install(genericServer); err != nil {
		_ = controllers.Stop()
		return nil, err
	}

	if err := installAPIs(genericServer, served, c.GenericConfig.Authorization.Authorizer, tokens); err != nil {
		return nil, err
	}
	return &EventsServer{GenericAPIServer: genericServer, Events: store, Controllers: controllers}, nil
}

// newStore is the events store, its strategy and its storage as the
// configuration asks, feeding timeline when it is not nil.
func (c CompletedConfig) newStore(timeline *eventstorage.Timeline) (*eventstorage.REST, error) {
	// In a cluster, every write (the in-process ones of the mirror and the
	// series controllers included) resolves new events' chains.
	strategy := eventregistry.NewStrategy(Scheme)
	if c.ExtraConfig.Chains != nil {
		strategy = strategy.WithChainResolver(c.ExtraConfig.Chains)
	}
	// Where kube-apiserver writes events past the strategy, the chains
	// the server sets are sealed, and others' resolved again.
	seals, err := c.chainSealer()
	if err != nil {
		return nil, err
	}
	strategy = strategy.WithChainSealer(seals)
	options := eventstorage.Options{
		RESTOptions: c.GenericConfig.RESTOptionsGetter,
		TTL:         c.ExtraConfig.EventTTL,
		Folding:     c.ExtraConfig.Fold,
		Cache:       c.ExtraConfig.StoreCache,
		Timeline:    timeline,
		// Writes refused by an etcd out of space answer 503 with a
		// Retry-After.
		Unavailable: unavailableErrors,
	}
	// Under an election, the elected loops' writes are fenced.
	if !c.ExtraConfig.LeaderElection.Disabled {
		options.FencedWrites = fencedWrites
	}
	store, err := eventstorage.NewREST(strategy, options)
	if err != nil {
		return nil, fmt.Errorf("creating the events store: %w", err)
	}
	return store, nil
}

// installAPIs installs served as /api/v1 events and as events.k8s.io/v1beta1
// and v1 events, and the event summaries that count what it lists, for
// the users authz lets list it, with continue tokens signed by tokens.
func installAPIs(genericServer *genericapiserver.GenericAPIServer, served rest.StandardStorage, authz authorizer.Authorizer, tokens *continuetoken.Codec) error {
	legacy := genericapiserver.NewDefaultAPIGroupInfo(core.GroupName, Scheme, ParameterCodec, Codecs)
	legacy.VersionedResourcesStorageMap[corev1.SchemeGroupVersion.Version] = map[string]rest.Storage{"events": served}
	if err := genericServer.InstallLegacyAPIGroup(genericapiserver.DefaultLegacyAPIPrefix, &legacy); err != nil {
		return fmt.Errorf("installing /api/v1 events: %w", err)
	}

	group := genericapiserver.NewDefaultAPIGroupInfo(events.GroupName, Scheme, ParameterCodec, Codecs)
	group.VersionedResourcesStorageMap[eventsv1beta1.SchemeGroupVersion.Version] = map[string]rest.Storage{"events": served}
	group.VersionedResourcesStorageMap[eventsv1.SchemeGroupVersion.Version] = map[string]rest.Storage{"events": served}
	if err := genericServer.InstallAPIGroup(&group); err != nil {
		return fmt.Errorf("installing events.k8s.io events: %w", err)
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

	// The summaries count what the served events list: the history's
	// with history.since, under its rules, for users who may list them.
	summaryGroup := genericapiserver.NewDefaultAPIGroupInfo(summaries.GroupName, Scheme, ParameterCodec, Codecs)
	summaryGroup.VersionedResourcesStorageMap[summariesv1alpha1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"eventsummaries": eventsummary.NewREST(served, authz, tokens),
	}
	if err := genericServer.InstallAPIGroup(&summaryGroup); err != nil {
		return fmt.Errorf("installing %s event summaries: %w", summaries.GroupName, err)
	}

	return nil
}
