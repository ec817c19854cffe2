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
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"

	"k8s.io/apiserver/pkg/admission"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apiserver"
	"github.com/kube-events/events-apiserver/pkg/apiserver/standalone"
	"github.com/kube-events/events-apiserver/pkg/authn/certcache"
	"github.com/kube-events/events-apiserver/pkg/controller"
	"github.com/kube-events/events-apiserver/pkg/embedded/pki"
)

// Config builds the server configuration. With the embedded etcd, Run
// must have started it first (Config is then called by Run); with
// --etcd-servers, Config can be called alone.
func (o CompletedOptions) Config() (*apiserver.Config, error) {
	r := o.Recommended
	if len(r.Etcd.StorageConfig.Transport.ServerList) == 0 {
		return nil, errors.New("no etcd servers: set --etcd-servers, or use Run, which starts the embedded etcd")
	}
	creds, err := o.servingCredentials()
	if err != nil {
		return nil, err
	}

	cfg := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	cfg.EffectiveVersion = servedVersion{o.ComponentGlobals.EffectiveVersionFor(basecompatibility.DefaultKubeComponent)}
	cfg.FeatureGate = o.ComponentGlobals.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	// OpenAPI first: authentication adds its security definitions to it.
	apiserver.ApplyOpenAPIConfig(cfg)
	archiveConfig, err := o.applyStorage(cfg)
	if err != nil {
		return nil, err
	}
	if err := o.applyGeneric(cfg, creds); err != nil {
		return nil, err
	}
	var elected []controller.Controller
	if o.certificates != nil {
		if o.certificates.serving != nil {
			cfg.SecureServing.Cert = o.certificates.serving
		}
		elected = append(elected, o.certificates.issuer)
	}
	kubeClient, dynamicClient, err := clients(cfg)
	if err != nil {
		return nil, err
	}
	policy, err := o.eventPolicy()
	if err != nil {
		return nil, err
	}
	if err := o.applyAdmission(cfg, kubeClient, dynamicClient); err != nil {
		return nil, err
	}
	mirrorConfig, err := o.Mirror.config(r.CoreAPI.CoreAPIKubeconfigPath)
	if err != nil {
		return nil, err
	}
	chains, err := o.Ancestry.resolver(cfg.ClientConfig)
	if err != nil {
		return nil, err
	}
	storeCache, err := o.storeCache()
	if err != nil {
		return nil, err
	}

	return &apiserver.Config{
		GenericConfig: cfg,
		ExtraConfig: apiserver.ExtraConfig{
			EventTTL:                   o.EventTTL,
			StoreCache:                 storeCache,
			SeriesSweeper:              o.seriesThresholds(policy),
			EtcdMaintenance:            o.EtcdMaintenance.config(),
			Fold:                       o.folding(policy),
			Mirror:                     mirrorConfig,
			LeaderElection:             o.LeaderElection.config(),
			Archive:                    archiveConfig,
			ControllerProgressDeadline: o.ControllerProgressDeadline,
			Chains:                     chains,
			SharedWithKubeAPIServer:    o.Mirror.SharedWithKubeAPIServer,
			Elected:                    elected,
		},
	}, nil
}

// storeCache is what serves the events' reads from memory: --store-cache's
// kind, or none with --watch-cache=false or a --watch-cache-sizes of 0 for
// events, as the generic storage factory reads those flags.
func (o CompletedOptions) storeCache() (eventstorage.StoreCache, error) {
	etcd := o.Recommended.Etcd
	if !etcd.EnableWatchCache {
		return eventstorage.NoStoreCache, nil
	}
	sizes, err := genericoptions.ParseWatchCacheSizes(etcd.WatchCacheSizes)
	if err != nil {
		return "", err
	}
	if size, ok := sizes[core.Resource("events")]; ok && size <= 0 {
		return eventstorage.NoStoreCache, nil
	}
	return eventstorage.StoreCache(o.StoreCache), nil
}

// servingCredentials sets the serving certificate: when standalone, the
// generated one (unless one is given) and returns the generated
// credentials; delegated, a self-signed one unless one is given.
func (o CompletedOptions) servingCredentials() (*standaloneCredentials, error) {
	r := o.Recommended
	if !o.standalone {
		if o.Certificates.Serving {
			// startCertificates made it; Config serves it.
			return nil, nil
		}
		if err := r.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.IPv4(127, 0, 0, 1)}); err != nil {
			return nil, fmt.Errorf("creating self-signed serving certificates: %w", err)
		}
		return nil, nil
	}
	creds, err := ensureStandaloneCredentials(filepath.Join(o.DataDir, "pki"), o.servingHosts(), time.Now())
	if err != nil {
		return nil, fmt.Errorf("standalone certificates in %s: %w", o.DataDir, err)
	}
	if r.SecureServing.ServerCert.CertKey.CertFile == "" && r.SecureServing.ServerCert.CertKey.KeyFile == "" {
		r.SecureServing.ServerCert.CertKey.CertFile = creds.serving.CertFile
		r.SecureServing.ServerCert.CertKey.KeyFile = creds.serving.KeyFile
	}
	return creds, nil
}

// applyStorage applies etcd with the events storage factory, in which the
// events of every version share one key space (the generic one would store
// each group's events apart), and returns the archive's configuration: with
// an archive the server compacts etcd itself, never past the archiver's
// checkpoint, instead of the generic storage.
func (o CompletedOptions) applyStorage(cfg *genericapiserver.RecommendedConfig) (*apiserver.ArchiveConfig, error) {
	r := o.Recommended
	storageConfig := r.Etcd.StorageConfig
	archiveConfig := o.archive.config(storageConfig.CompactionInterval)
	if archiveConfig != nil {
		storageConfig.CompactionInterval = 0
		archiveConfig.Export = o.Export.config(o.exportSelection)
	}
	if storageConfig.StorageObjectCountTracker == nil {
		storageConfig.StorageObjectCountTracker = cfg.StorageObjectCountTracker
	}
	factory := apiserver.NewStorageFactory(storageConfig, r.Etcd.DefaultStorageMediaType, cfg.EffectiveVersion)
	if err := r.Etcd.ApplyWithStorageFactoryTo(factory, &cfg.Config); err != nil {
		return nil, err
	}
	return archiveConfig, nil
}

// applyGeneric applies everything else as the generic
// RecommendedOptions.ApplyTo does it, but admission, which applyAdmission
// sets in both modes, and, when standalone, authentication, authorization
// and the core API: there is no kube-apiserver to delegate to
// (applyStandaloneAuth, with creds).
func (o CompletedOptions) applyGeneric(cfg *genericapiserver.RecommendedConfig, creds *standaloneCredentials) error {
	r := o.Recommended
	generic := *r
	generic.Etcd, generic.Admission = nil, nil
	generic.ExtraAdmissionInitializers = func(*genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) { return nil, nil }
	if o.standalone {
		generic.Authentication, generic.Authorization, generic.CoreAPI = nil, nil, nil
	}
	if err := generic.ApplyTo(cfg); err != nil {
		return err
	}
	if o.standalone {
		return applyStandaloneAuth(cfg, creds, r.Authentication.ClientCert.ClientCA)
	}
	keepFrontProxyVerifications(&cfg.Authentication)
	return nil
}

// clients are the clients of kube-apiserver admission reads through; nil
// without one (standalone).
func clients(cfg *genericapiserver.RecommendedConfig) (kubernetes.Interface, dynamic.Interface, error) {
	if cfg.ClientConfig == nil {
		return nil, nil, nil
	}
	kubeClient, err := kubernetes.NewForConfig(cfg.ClientConfig)
	if err != nil {
		return nil, nil, err
	}
	dynamicClient, err := dynamic.NewForConfig(cfg.ClientConfig)
	if err != nil {
		return nil, nil, err
	}
	return kubeClient, dynamicClient, nil
}

// applyStandaloneAuth authenticates client certificates signed by the
// generated client CA (and by --client-ca-file, if given) and authorizes
// with the standalone rule.
func applyStandaloneAuth(cfg *genericapiserver.RecommendedConfig, creds *standaloneCredentials, extraClientCAFile string) error {
	clientCA, err := dynamiccertificates.NewDynamicCAContentFromFile("standalone-client-ca", creds.clientCA.CertFile)
	if err != nil {
		return err
	}
	var provider dynamiccertificates.CAContentProvider = clientCA
	if extraClientCAFile != "" {
		extra, err := dynamiccertificates.NewDynamicCAContentFromFile("client-ca-file", extraClientCAFile)
		if err != nil {
			return err
		}
		provider = dynamiccertificates.NewUnionCAContentProvider(clientCA, extra)
	}
	if err := cfg.Authentication.ApplyClientCert(provider, cfg.SecureServing); err != nil {
		return err
	}
	if cfg.Authentication.Authenticator, err = standalone.NewAuthenticator(provider); err != nil {
		return err
	}
	cfg.Authorization.Authorizer, err = standalone.NewAuthorizer()
	return err
}

// keepFrontProxyVerifications keeps the verifications of the front proxy's
// certificate, which every request kube-apiserver's aggregator proxies
// presents and the delegated authenticator otherwise verifies again each
// time. Client certificates presented directly, rare on an aggregated
// server, are still verified on every request:
// DelegatingAuthenticationOptions.ApplyTo gives the client CA it reads to
// no one but the authenticator it builds.
func keepFrontProxyVerifications(authn *genericapiserver.AuthenticationInfo) {
	if authn.Authenticator == nil || authn.RequestHeaderConfig == nil {
		return
	}
	authn.Authenticator = certcache.New(authn.Authenticator, certcache.Sources{FrontProxy: authn.RequestHeaderConfig}, certcache.DefaultSize, clock.RealClock{})
}

// servingHosts are the names the standalone serving certificate is for:
// loopback, this host's name, and the bind address if it is a specific one.
func (o *Options) servingHosts() []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if name, err := os.Hostname(); err == nil && name != "" {
		hosts = append(hosts, name)
	}
	if ip := o.Recommended.SecureServing.BindAddress; ip != nil && !ip.IsUnspecified() && !ip.IsLoopback() {
		hosts = append(hosts, ip.String())
	}
	return hosts
}

// standaloneCredentials are the files a standalone server generates once
// in <data-dir>/pki and reuses: the serving CA and certificate, the client
// CA and the admin's client certificate.
type standaloneCredentials struct {
	servingCA *pki.CA
	serving   pki.KeyPair
	clientCA  *pki.CA
	admin     pki.KeyPair
}

// AdminUser and AdminGroup are the identity in the generated kubeconfig.
const (
	AdminUser  = "events-admin"
	AdminGroup = standalone.AdminGroup
)

func ensureStandaloneCredentials(dir string, hosts []string, now time.Time) (*standaloneCredentials, error) {
	servingCA, err := pki.EnsureCA(dir, "ca", "events-apiserver-ca", now)
	if err != nil {
		return nil, err
	}
	spec := pki.Spec{CommonName: "events-apiserver", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			spec.IPs = append(spec.IPs, ip)
		} else {
			spec.DNSNames = append(spec.DNSNames, h)
		}
	}
	serving, err := servingCA.EnsureCert(dir, "serving", spec, now)
	if err != nil {
		return nil, err
	}
	clientCA, err := pki.EnsureCA(dir, "client-ca", "events-apiserver-client-ca", now)
	if err != nil {
		return nil, err
	}
	admin, err := clientCA.EnsureCert(dir, "admin", pki.Spec{
		CommonName:   AdminUser,
		Organization: []string{AdminGroup},
		Usages:       []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, now)
	if err != nil {
		return nil, err
	}
	return &standaloneCredentials{servingCA: servingCA, serving: serving, clientCA: clientCA, admin: admin}, nil
}
