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

package app

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/features"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"

	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apiserver"
	"github.com/kube-events/events-apiserver/pkg/controller"
)

// DefaultSecurePort is where the server listens unless told otherwise; an
// unprivileged port, so that it runs as any user.
const DefaultSecurePort = 8443

// DefaultDataDir is where a server started without --data-dir keeps its
// embedded etcd, certificates and kubeconfig.
const DefaultDataDir = "events-apiserver-data"

// Options are everything the events-apiserver command line sets.
//
// Two independent choices are made from them in Complete:
//
//   - Storage: with --etcd-servers the server uses that etcd; without, it
//     runs an embedded etcd in <data-dir>/etcd (see pkg/embedded/etcd).
//   - Authentication and authorization: --standalone, if given, decides.
//     Otherwise the server is standalone exactly when it has no
//     kube-apiserver to delegate to: none of --authentication-kubeconfig,
//     --authorization-kubeconfig and --kubeconfig is set and it does not run
//     in a cluster (KUBERNETES_SERVICE_HOST is unset). Standalone, it
//     authenticates client certificates against its own client CA and
//     authorizes with the fixed rule of pkg/apiserver/standalone; it serves
//     on 127.0.0.1 unless --bind-address says otherwise, and writes an
//     admin kubeconfig to <data-dir>/kubeconfig once ready. Delegated, it
//     is an aggregated API server: authentication through TokenReview and
//     the front proxy's request headers, authorization through
//     SubjectAccessReview, admission through the cluster's webhooks.
//   - Admission: --enable-admission-plugins, --disable-admission-plugins and
//     --admission-control-config-file work the same in both modes. Delegated,
//     the chain is the generic recommended one with EventSeries and
//     EventRateLimit added (NamespaceLifecycle, MutatingAdmissionPolicy,
//     MutatingAdmissionWebhook, EventSeries, ValidatingAdmissionPolicy,
//     EventRateLimit, ValidatingAdmissionWebhook); the generic plugins read
//     namespaces, webhook and policy configurations from the kube-apiserver.
//     Standalone there is none, so the chain holds only the enabled plugins
//     that need no kube-apiserver (EventSeries, EventRateLimit); the others
//     are left out, and naming one in --enable-admission-plugins is an
//     error. EventSeries is on by default; while it is enabled, the server
//     also runs its sweeper. The plugins, the store's folding and the series
//     controllers share one event policy (--event-policy-config, see
//     eventPolicy).
type Options struct {
	// Recommended are the generic API server options: etcd, serving,
	// authentication, authorization, audit, features, admission...
	Recommended *genericoptions.RecommendedOptions
	// Logs configures logging (component-base logs).
	Logs *logsapi.LoggingConfiguration
	// ComponentGlobals holds the effective version and the feature gates.
	ComponentGlobals basecompatibility.ComponentGlobalsRegistry

	// DataDir holds the embedded etcd, the generated certificates and the
	// admin kubeconfig.
	DataDir string
	// EventTTL is how long an event lives after its last write.
	EventTTL time.Duration
	// StoreCache is what serves the store's reads from memory (with
	// --watch-cache): the compact live store or k8s.io/apiserver's watch
	// cache.
	StoreCache string
	// EventPolicyConfig is the file of the event policy (see eventPolicy).
	EventPolicyConfig string
	// Standalone, when provided, forces the authentication mode; unset
	// means decide as described on Options.
	Standalone cliflag.Tristate
	// EmbeddedEtcdLogLevel is the embedded etcd's log level.
	EmbeddedEtcdLogLevel string
	// Mirror configures the copy of kube-apiserver's events into our store.
	Mirror MirrorOptions
	// EtcdMaintenance configures the server's etcd housekeeping.
	EtcdMaintenance EtcdMaintenanceOptions
	// LeaderElection configures the election of the replica that runs the
	// controllers.
	LeaderElection LeaderElectionOptions
	// Archive configures the history of events.
	Archive ArchiveOptions
	// Export configures the OTLP export of the archive.
	Export ExportOptions
	// Ancestry configures the resolution of events' chains of controller
	// owners.
	Ancestry AncestryOptions
	// Certificates configures the certificates the server keeps itself.
	Certificates CertificateOptions
	// ControllerProgressDeadline is how long a background loop may have
	// work without progress, while its dependencies answer, before its
	// /livez check fails.
	ControllerProgressDeadline time.Duration

	flags *cliflag.NamedFlagSets
	// standalone is the authentication mode Complete chose, which the
	// admission methods read; CompletedOptions.StandaloneMode reports it.
	standalone bool
	// memory is the process's memory limit, which EventMemoryPressure
	// reads; NewCommand sets it, and without it the Go heap's soft limit
	// is the limit.
	memory *MemoryLimit
	// policy is the event policy once decoded, policyErr why it was not;
	// convertedPolicyKinds the former plugin kinds it was converted from.
	// The admission plugins' factories read it, so it lives here.
	policy               *eventpolicy.EventPolicy
	policyErr            error
	convertedPolicyKinds []string
	// exportPolicy is the export's selection, reloaded (exportSelection).
	exportPolicy     *exportPolicy
	exportPolicyOnce sync.Once
}

// completedOptions are Options with what Complete derived from them.
type completedOptions struct {
	*Options
	// embeddedEtcd says the server runs its own etcd (no --etcd-servers).
	embeddedEtcd bool
	// archive is the Archive options with the mode and directory resolved.
	archive ArchiveOptions
	// certificates are the self-managed certificates, once Run started
	// them.
	certificates *selfManaged
}

// CompletedOptions are Options on which Complete has been called: the only
// options that validate and make a Config, as kube-apiserver's.
type CompletedOptions struct {
	*completedOptions
}

// NewOptions returns the default options.
func NewOptions() *Options {
	o := &Options{
		Recommended: genericoptions.NewRecommendedOptions(apiserver.DefaultEtcdPathPrefix,
			apiserver.Codecs.LegacyCodec(corev1.SchemeGroupVersion)),
		Logs:                       logsapi.NewLoggingConfiguration(),
		ComponentGlobals:           compatibility.DefaultComponentGlobalsRegistry,
		DataDir:                    DefaultDataDir,
		EventTTL:                   apiserver.DefaultEventTTL,
		StoreCache:                 string(eventstorage.CompactStore),
		EmbeddedEtcdLogLevel:       "warn",
		Mirror:                     newMirrorOptions(),
		EtcdMaintenance:            newEtcdMaintenanceOptions(),
		LeaderElection:             newLeaderElectionOptions(),
		Archive:                    newArchiveOptions(),
		Export:                     newExportOptions(),
		Ancestry:                   newAncestryOptions(),
		Certificates:               newCertificateOptions(),
		ControllerProgressDeadline: controller.DefaultProgressDeadline,
		memory:                     &MemoryLimit{},
	}
	o.Recommended.Etcd.DefaultStorageMediaType = apiserver.StorageMediaType
	// The loops' dependency checks are as open as the other health checks.
	o.Recommended.Authorization.WithAlwaysAllowPaths(controller.DependencyPath)
	o.registerAdmissionPlugins()
	o.Recommended.SecureServing.BindPort = DefaultSecurePort
	_, _ = o.ComponentGlobals.ComponentGlobalsOrRegister(basecompatibility.DefaultKubeComponent,
		kubeEffectiveVersion(), utilfeature.DefaultMutableFeatureGate)
	return o
}

// overrideFeatureGateDefaults turns off by default, in the gates'
// registered defaults (so --help shows them, and --feature-gates turns them
// back on), the library features that cost events more than they give:
//
//   - ListFromCacheSnapshot keeps a copy-on-write clone of the watch cache
//     for every write in the history window (75 s, up to 100,000 writes):
//     about 1 KiB per event at event write rates, a third of the cache.
//     Without it, lists with a continue token or an exact resourceVersion
//     are served by etcd, as before Kubernetes 1.34; the first page of a
//     list and every list by an indexed field still come from the cache.
//   - SizeBasedListCostEstimate keeps every cached key a second time, with
//     its size, for API Priority and Fairness to charge a list by the bytes
//     it returns (about 90 bytes per event). Events are all about the same
//     size, so the object count it falls back to estimates them as well.
//
// It runs once, from init: defaults can only be overridden before the
// gates are added to a flag set.
func overrideFeatureGateDefaults() {
	for _, gate := range []featuregate.Feature{features.ListFromCacheSnapshot, features.SizeBasedListCostEstimate} {
		if err := utilfeature.DefaultMutableFeatureGate.OverrideDefault(gate, false); err != nil {
			panic(err)
		}
	}
}

// Flags returns the command line flags, in named sections for --help.
// Calling it again returns the same flag sets.
func (o *Options) Flags() cliflag.NamedFlagSets {
	if o.flags != nil {
		return *o.flags
	}
	fss := cliflag.NamedFlagSets{}

	fs := fss.FlagSet("events")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory for the embedded etcd's data, the generated certificates and the admin kubeconfig. Reused on restart.")
	fs.DurationVar(&o.EventTTL, "event-ttl", o.EventTTL, "How long an event is kept after its last create or update; whole seconds, at least 1s. "+
		"Keep it at least the series heartbeat interval (the event policy's series.heartbeatInterval, 30m by default): a shorter TTL expires Ongoing series between heartbeats, and the server warns at start.")
	fs.StringVar(&o.StoreCache, "store-cache", o.StoreCache, fmt.Sprintf("What serves the store's lists, gets and watches from memory (with --watch-cache): %q, the compact live store, which holds every event as its stored bytes outside the Go heap, "+
		"or %q, k8s.io/apiserver's watch cache, which holds every event decoded, in several times the memory (docs/performance.md#memory).", eventstorage.CompactStore, eventstorage.WatchCache))
	fs.StringVar(&o.EventPolicyConfig, "event-policy-config", o.EventPolicyConfig, "File with the event policy (apiVersion eventpolicy.config.events.k8s.io/v1alpha1, kind EventPolicy): "+
		"rate limits, folding, series thresholds and sweeping. Unset: the defaults, or the former EventRateLimitConfiguration and EventSeriesConfiguration "+
		"in the plugins' entries of --admission-control-config-file, which it cannot be combined with.")
	fs.Var(&o.Standalone, "standalone", "Authenticate with the server's own client CA and authorize with its fixed rule instead of delegating to a kube-apiserver. "+
		"Defaults to true when none of --authentication-kubeconfig, --authorization-kubeconfig and --kubeconfig is set and the server does not run in a cluster.")
	fs.Lookup("standalone").NoOptDefVal = "true"
	fs.StringVar(&o.EmbeddedEtcdLogLevel, "embedded-etcd-log-level", o.EmbeddedEtcdLogLevel, "Log level of the embedded etcd (debug, info, warn, error); used without --etcd-servers.")
	fs.DurationVar(&o.ControllerProgressDeadline, "controller-progress-deadline", o.ControllerProgressDeadline, "How long a background loop (archiver, etcd compactor, mirror) "+
		"may have work without making progress, while the archive, etcd or kube-apiserver it works against answers, before its /livez/controller/<name> check fails "+
		"and the kubelet restarts the replica. A dependency that does not answer fails /dependencyz/controller/<name> instead, never /livez.")

	o.Mirror.addFlags(fss.FlagSet("mirror"))
	o.LeaderElection.addFlags(fss.FlagSet("leader election"))
	o.Archive.addFlags(fss.FlagSet("archive"))
	o.Export.addFlags(fss.FlagSet("export"))
	o.Ancestry.addFlags(fss.FlagSet("ancestry"))
	o.Certificates.addFlags(fss.FlagSet("self-managed certificates"))

	r := o.Recommended
	r.Etcd.AddFlags(fss.FlagSet("etcd"))
	o.EtcdMaintenance.addFlags(fss.FlagSet("etcd"))
	r.SecureServing.AddFlags(fss.FlagSet("secure serving"))
	r.Authentication.AddFlags(fss.FlagSet("authentication"))
	r.Authorization.AddFlags(fss.FlagSet("authorization"))
	r.Audit.AddFlags(fss.FlagSet("auditing"))
	r.Features.AddFlags(fss.FlagSet("features"))
	r.CoreAPI.AddFlags(fss.FlagSet("core api"))
	r.Admission.AddFlags(fss.FlagSet("admission"))
	r.EgressSelector.AddFlags(fss.FlagSet("egress selector"))
	r.Traces.AddFlags(fss.FlagSet("traces"))
	o.ComponentGlobals.AddFlags(fss.FlagSet("generic"))
	logsapi.AddFlags(o.Logs, fss.FlagSet("logs"))

	o.flags = &fss
	return fss
}

// AddFlags adds every flag to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	for _, f := range o.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
}

// changed tells whether the flag was set on the command line.
func (o *Options) changed(name string) bool {
	if o.flags == nil {
		return false
	}
	for _, fs := range o.flags.FlagSets {
		if f := fs.Lookup(name); f != nil {
			return f.Changed
		}
	}
	return false
}

// Complete fills in what follows from the flags: the effective version and
// feature gates, whether the server is standalone, whether it embeds etcd,
// and the defaults those imply. Completing again gives the same result.
func (o *Options) Complete() (CompletedOptions, error) {
	if err := o.ComponentGlobals.Set(); err != nil {
		return CompletedOptions{}, err
	}
	if o.DataDir != "" {
		abs, err := filepath.Abs(o.DataDir)
		if err != nil {
			return CompletedOptions{}, err
		}
		o.DataDir = abs
	}

	r := o.Recommended
	c := &completedOptions{Options: o, embeddedEtcd: len(r.Etcd.StorageConfig.Transport.ServerList) == 0}
	if o.Standalone.Provided() {
		o.standalone = o.Standalone.Value()
	} else {
		o.standalone = r.Authentication.RemoteKubeConfigFile == "" &&
			r.Authorization.RemoteKubeConfigFile == "" &&
			r.CoreAPI.CoreAPIKubeconfigPath == "" &&
			os.Getenv("KUBERNETES_SERVICE_HOST") == ""
	}

	if o.standalone {
		// Nobody else is there: serve on loopback unless asked not to, and
		// use neither the core API (kube admission plugins, priority and
		// fairness) nor garbage collection, which needs kube's garbage
		// collector.
		if !o.changed("bind-address") {
			r.SecureServing.BindAddress = net.IPv4(127, 0, 0, 1)
		}
		r.Features.EnablePriorityAndFairness = false
		if !o.changed("enable-garbage-collector") {
			r.Etcd.EnableGarbageCollection = false
		}
	} else if !o.changed("cert-dir") && o.DataDir != "" {
		r.SecureServing.ServerCert.CertDirectory = filepath.Join(o.DataDir, "serving-certs")
	}
	c.archive = o.Archive.completed(c.embeddedEtcd, o.DataDir)
	o.Certificates.complete()
	return CompletedOptions{c}, nil
}

// Validate reports every invalid option at once.
func (o CompletedOptions) Validate() error {
	var errs []error
	r := o.Recommended

	etcd := r.Etcd
	if o.embeddedEtcd {
		// The embedded etcd will supply --etcd-servers; validate the rest.
		copied := *etcd
		copied.StorageConfig.Transport.ServerList = []string{"https://127.0.0.1:2379"}
		etcd = &copied
	}
	errs = append(errs, etcd.Validate()...)
	errs = append(errs, r.SecureServing.Validate()...)
	errs = append(errs, r.Authentication.Validate()...)
	errs = append(errs, r.Authorization.Validate()...)
	errs = append(errs, r.Audit.Validate()...)
	errs = append(errs, r.Features.Validate()...)
	errs = append(errs, r.CoreAPI.Validate()...)
	errs = append(errs, r.Admission.Validate()...)
	errs = append(errs, o.validateAdmission()...)
	errs = append(errs, r.EgressSelector.Validate()...)
	errs = append(errs, r.Traces.Validate()...)
	errs = append(errs, o.ComponentGlobals.Validate()...)
	errs = append(errs, o.Mirror.validate()...)
	errs = append(errs, o.EtcdMaintenance.validate()...)
	errs = append(errs, o.LeaderElection.validate()...)
	errs = append(errs, o.archive.validate()...)
	errs = append(errs, o.Export.validate(o.archive.Mode)...)
	errs = append(errs, o.Ancestry.validate()...)
	errs = append(errs, o.validateCertificates()...)

	if o.ControllerProgressDeadline <= 0 {
		errs = append(errs, fmt.Errorf("--controller-progress-deadline must be positive, got %v", o.ControllerProgressDeadline))
	}
	if !slices.Contains(eventstorage.StoreCaches, eventstorage.StoreCache(o.StoreCache)) {
		errs = append(errs, fmt.Errorf("--store-cache must be one of %q, got %q", eventstorage.StoreCaches, o.StoreCache))
	}
	if o.EventTTL < time.Second {
		errs = append(errs, fmt.Errorf("--event-ttl must be at least 1s, got %v", o.EventTTL))
	}
	if (o.embeddedEtcd || o.standalone) && o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir is required for the embedded etcd and for standalone mode"))
	}
	if r.SecureServing.BindPort <= 0 && r.SecureServing.Listener == nil {
		errs = append(errs, errors.New("--secure-port must be set: the server serves https only"))
	}
	return utilerrors.NewAggregate(errs)
}

// StandaloneMode tells whether Complete chose standalone authentication.
func (o CompletedOptions) StandaloneMode() bool { return o.standalone }

// EmbeddedEtcd tells whether Complete chose the embedded etcd.
func (o CompletedOptions) EmbeddedEtcd() bool { return o.embeddedEtcd }

// KubeconfigPath is where a standalone server writes its admin kubeconfig.
func (o *Options) KubeconfigPath() string { return filepath.Join(o.DataDir, "kubeconfig") }
