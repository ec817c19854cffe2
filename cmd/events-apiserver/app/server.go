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

// Package app is the events-apiserver command: options, configuration and
// the run loop, in the shape of kube-apiserver's and sample-apiserver's.
package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"

	"github.com/kube-events/events-apiserver/pkg/apiserver"
	"github.com/kube-events/events-apiserver/pkg/embedded/etcd"
	"github.com/kube-events/events-apiserver/pkg/embedded/pki"
)

func init() {
	if err := logsapi.AddFeatureGates(utilfeature.DefaultMutableFeatureGate); err != nil {
		panic(err)
	}
	overrideFeatureGateDefaults()
}

// NewCommand returns the events-apiserver command, running until ctx ends
// within memory, the process's memory limit (SetMemoryLimit).
func NewCommand(ctx context.Context, memory *MemoryLimit) *cobra.Command {
	o := NewOptions()
	*o.memory = *memory
	cmd := &cobra.Command{
		Use:   "events-apiserver",
		Short: "Serve Kubernetes Events through core/v1, events.k8s.io/v1beta1 and events.k8s.io/v1 from one TTL'd etcd store",
		Long: `events-apiserver serves Kubernetes Events through /api/v1, events.k8s.io/v1beta1
and events.k8s.io/v1, all backed by one etcd store in which every event expires
--event-ttl after its last write.

Started with only --data-dir and --secure-port, it runs an embedded etcd,
generates its certificates, authenticates client certificates, and writes an
admin kubeconfig to <data-dir>/kubeconfig once it is ready. In a cluster it is
an aggregated API server delegating authentication and authorization to the
kube-apiserver.

"events-apiserver ` + KubeEventRateLimitCommandName + `" prints the configuration of
kube-apiserver's EventRateLimit admission plugin for the event policy's limits.`,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if printVersionIfRequested(cmd) {
				return nil
			}
			if err := logsapi.ValidateAndApply(o.Logs, utilfeature.DefaultFeatureGate); err != nil {
				return err
			}
			// Refused before the flags are printed: they would log it.
			if errs := o.Archive.refuseUserInfo(); len(errs) > 0 {
				return errors.Join(errs...)
			}
			cliflag.PrintFlags(cmd.Flags())
			return Run(cmd.Context(), o)
		},
		Args: func(cmd *cobra.Command, args []string) error {
			for _, arg := range args {
				if len(arg) > 0 {
					return fmt.Errorf("%q does not take any arguments, got %q", cmd.CommandPath(), args)
				}
			}
			return nil
		},
	}
	cmd.SetContext(ctx)

	fss := o.Flags()
	verflag.AddFlags(fss.FlagSet("global"))
	globalflag.AddGlobalFlags(fss.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	for _, f := range fss.FlagSets {
		cmd.Flags().AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)
	cmd.AddCommand(newKubeEventRateLimitCommand(cols))
	return cmd
}

// Run completes and validates options, starts the embedded etcd if o has no etcd
// servers, and serves until ctx ends or the server fails. Once the server
// is ready it writes the admin kubeconfig (standalone).
func Run(ctx context.Context, options *Options) error {
	o, err := options.Complete()
	if err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	logger := klog.FromContext(ctx)
	o.warnEventTTL(logger)

	if o.embeddedEtcd {
		server, err := etcd.Start(ctx, etcd.Config{Dir: filepath.Join(o.DataDir, "etcd"), LogLevel: o.EmbeddedEtcdLogLevel})
		if err != nil {
			return err
		}
		// Stops after the API server has stopped using it.
		defer server.Close()
		go func() {
			select {
			case err := <-server.Err():
				if err != nil {
					cancel(fmt.Errorf("embedded etcd failed: %w", err))
				}
			case <-ctx.Done():
			}
		}()
		transport := &o.Recommended.Etcd.StorageConfig.Transport
		transport.ServerList = []string{server.ClientURL}
		transport.TrustedCAFile = server.TrustedCAFile
		transport.CertFile = server.CertFile
		transport.KeyFile = server.KeyFile
		logger.Info("Embedded etcd serving", "url", server.ClientURL, "dir", filepath.Join(o.DataDir, "etcd"))
	}

	if o.standalone {
		// The kubeconfig appears only while the server is ready: it is
		// written once /readyz is ok and removed when the server stops.
		if err := os.Remove(o.KubeconfigPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if o.Certificates.enabled() {
		if o.certificates, err = o.startCertificates(ctx); err != nil {
			return err
		}
	}

	config, err := o.Config()
	if err != nil {
		return err
	}
	for _, kind := range o.convertedPolicyKinds {
		logger.Info("Converted a former admission plugin configuration into the event policy; give it as an EventPolicy with --event-policy-config instead",
			"kind", kind, "file", o.Recommended.Admission.ConfigFile)
	}
	server, err := config.Complete().New(ctx)
	if err != nil {
		return err
	}
	server.GenericAPIServer.AddPostStartHookOrDie("events-apiserver-announce-ready", func(hook genericapiserver.PostStartHookContext) error {
		go o.announceReady(hook, config)
		return nil
	})

	err = server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
	if o.standalone {
		// A kubeconfig left behind would point scripts at a server that is gone.
		if rmErr := os.Remove(o.KubeconfigPath()); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			logger.Error(rmErr, "Removing the admin kubeconfig failed", "path", o.KubeconfigPath())
		}
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// announceReady waits until the server's own /readyz says ok, then writes
// the admin kubeconfig (standalone).
func (o *Options) announceReady(hook genericapiserver.PostStartHookContext, config *apiserver.Config) {
	logger := klog.FromContext(hook)
	if err := waitReady(hook); err != nil {
		logger.Error(err, "Server never became ready")
		return
	}
	if o.standalone {
		if err := o.writeKubeconfig(config); err != nil {
			logger.Error(err, "Writing the admin kubeconfig failed", "path", o.KubeconfigPath())
			return
		}
		logger.Info("Ready; admin kubeconfig written", "path", o.KubeconfigPath())
	} else {
		logger.Info("Ready")
	}
}

// waitReady polls /readyz through the loopback client until it answers
// 200, or the server stops.
func waitReady(hook genericapiserver.PostStartHookContext) error {
	config := rest.CopyConfig(hook.LoopbackClientConfig)
	config.Timeout = 5 * time.Second
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	return wait.PollUntilContextCancel(hook, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var status int
		// Not listening yet, or not ready: poll again.
		_ = client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
		return status == http.StatusOK, nil
	})
}

// writeKubeconfig writes the admin kubeconfig for the port the server
// actually listens on.
func (o *Options) writeKubeconfig(config *apiserver.Config) error {
	creds, err := ensureStandaloneCredentials(filepath.Join(o.DataDir, "pki"), o.servingHosts(), time.Now())
	if err != nil {
		return err
	}
	_, port, err := net.SplitHostPort(config.GenericConfig.SecureServing.Listener.Addr().String())
	if err != nil {
		return err
	}
	host := "127.0.0.1"
	if ip := o.Recommended.SecureServing.BindAddress; ip != nil && !ip.IsUnspecified() && !ip.IsLoopback() {
		host = ip.String()
	}
	certPEM, err := creds.admin.CertPEM()
	if err != nil {
		return err
	}
	keyPEM, err := creds.admin.KeyPEM()
	if err != nil {
		return err
	}
	var caData []byte
	if o.Recommended.SecureServing.ServerCert.CertKey.CertFile == creds.serving.CertFile {
		caData = creds.servingCA.CertPEM()
	}
	const name = "events-apiserver"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: "https://" + net.JoinHostPort(host, port), CertificateAuthorityData: caData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	// It holds the admin's private key: owner only, and replaced at once.
	return pki.WriteFileAtomic(o.KubeconfigPath(), data, 0o600)
}

// printVersionIfRequested prints the version for --version ("events-apiserver
// <gitVersion>") and --version=raw (the whole version.Info) and says whether
// it did. component-base's verflag.PrintAndExitIfRequested would name the
// program "Kubernetes".
func printVersionIfRequested(cmd *cobra.Command) bool {
	flag := cmd.Flags().Lookup("version")
	if flag == nil {
		return false
	}
	switch flag.Value.String() {
	case "true":
		fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", cmd.Name(), version.Get())
		return true
	case "raw":
		fmt.Fprintf(cmd.OutOrStdout(), "%#v\n", version.Get())
		return true
	}
	return false
}
