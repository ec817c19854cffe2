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
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kube-events/events-apiserver/pkg/embedded/pki"
	"github.com/kube-events/events-apiserver/pkg/selfcert"
)

// The modes of --self-managed-etcd-certificates.
const (
	// etcdCertificatesBundled: every certificate of the bundled etcd
	// (components/bundled-etcd) from a CA of the install's own.
	etcdCertificatesBundled = "bundled"
	// etcdCertificatesOffload: the bundled etcd of overlays/offload, whose
	// members serve kube-apiserver with a certificate of the cluster's etcd
	// CA (hack/gen-offload-etcd-cert.sh, Secret events-etcd-member); the
	// server makes the rest (peers, its client certificate, the members'
	// trust bundle, which adds the cluster's etcd CA from Secret
	// events-etcd-kube-ca).
	etcdCertificatesOffload = "offload"
)

// The Secrets of the self-managed certificates, in the server's namespace:
// names, not credentials.
//
//nolint:gosec // G101: Secret names
const (
	servingCASecret    = "events-apiserver-ca"
	servingSecret      = "events-apiserver-serving-cert"
	etcdCASecret       = "events-etcd-ca"
	etcdMemberSecret   = "events-etcd-member"
	etcdPeerSecret     = "events-etcd-peer"
	etcdClientSecret   = "events-apiserver-etcd-client"
	etcdClientCASecret = "events-etcd-client-ca"
	etcdKubeCASecret   = "events-etcd-kube-ca"
	archiveCASecret    = "events-victorialogs-ca"
	archiveTLSSecret   = "events-victorialogs-tls"
	archiveAuthSecret  = "events-victorialogs-auth"
	// archiveAuthKey is the password's key in archiveAuthSecret, the one
	// components/victorialogs mounts.
	archiveAuthKey      = "tls.key"
	certificatesTimeout = 2 * time.Minute
)

// CertificateOptions are the flags of the certificates the server keeps
// itself (pkg/selfcert) instead of reading them from files that
// cert-manager or an operator writes.
type CertificateOptions struct {
	// Serving makes the serving certificate and sets the APIServices'
	// caBundle.
	Serving bool
	// Etcd is "", etcdCertificatesBundled or etcdCertificatesOffload.
	Etcd string
	// Archive makes the bundled archive's (VictoriaLogs') serving
	// certificate and the password the server and it share.
	Archive bool
	// Namespace holds the Secrets; empty means the pod's namespace
	// (POD_NAMESPACE) or events-apiserver.
	Namespace string
	// Service is the name of the Service in front of the server, which the
	// aggregator dials and checks.
	Service string
	// APIServices get the serving CA as their caBundle.
	APIServices []string
	// Lifetime of a certificate, renewed after two thirds of it.
	Lifetime time.Duration
	// CALifetime of a CA, renewed likewise.
	CALifetime time.Duration
}

func newCertificateOptions() CertificateOptions {
	return CertificateOptions{
		Service:     "events-apiserver",
		APIServices: []string{"v1beta1.events.k8s.io", "v1alpha1.summaries.kube-events.io"},
		Lifetime:    90 * 24 * time.Hour,
		CALifetime:  10 * 365 * 24 * time.Hour,
	}
}

func (c *CertificateOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&c.Serving, "self-managed-certificates", c.Serving, "Make the serving certificate and its CA, keep them in the Secrets "+
		servingSecret+" and "+servingCASecret+" of --self-managed-certificates-namespace, renew them after two thirds of their lifetime, "+
		"and keep the caBundle of --self-managed-certificates-apiservices current. Every replica serves the certificate of the Secret and follows its renewals; "+
		"the elected replica renews. Not with --tls-cert-file, nor standalone.")
	fs.StringVar(&c.Etcd, "self-managed-etcd-certificates", c.Etcd, fmt.Sprintf("Make the bundled etcd's certificates too: %q, every one of them "+
		"(the members' serving and peer certificates, the trust bundle of their clients, this server's client certificate) from a CA of the install's own; "+
		"%q, all but the members' serving certificate, which the cluster's etcd CA signs (hack/gen-offload-etcd-cert.sh). "+
		"The server then connects to etcd with its own client certificate; not with --etcd-certfile or --etcd-keyfile.", etcdCertificatesBundled, etcdCertificatesOffload))
	fs.BoolVar(&c.Archive, "self-managed-archive-certificates", c.Archive, "Make the bundled archive's certificates too "+
		"(components/victorialogs and components/victorialogs-cluster): its CA, the serving certificate of VictoriaLogs' nodes in the Secret "+archiveTLSSecret+
		", and the password the server and VictoriaLogs share in the Secret "+archiveAuthSecret+" (made once, never changed).")
	fs.StringVar(&c.Namespace, "self-managed-certificates-namespace", c.Namespace, "Namespace of the self-managed certificates' Secrets; "+
		"defaults to $POD_NAMESPACE, then events-apiserver.")
	fs.StringVar(&c.Service, "self-managed-certificates-service", c.Service, "Service in front of the server: the serving certificate is for <service>.<namespace>.svc, "+
		"the name kube-apiserver's aggregator dials.")
	fs.StringSliceVar(&c.APIServices, "self-managed-certificates-apiservices", c.APIServices, "APIServices whose spec.caBundle is set to the serving CA.")
	fs.DurationVar(&c.Lifetime, "self-managed-certificates-lifetime", c.Lifetime, "How long a self-managed certificate is valid; it is renewed after two thirds of it. At least 1m.")
	fs.DurationVar(&c.CALifetime, "self-managed-certificates-ca-lifetime", c.CALifetime, "How long a self-managed CA is valid; renewed after two thirds of it, "+
		"the old one trusted until it expires. At least three times --self-managed-certificates-lifetime.")
}

func (c *CertificateOptions) enabled() bool { return c.Serving || c.Etcd != "" || c.Archive }

func (c *CertificateOptions) complete() {
	if c.Namespace == "" {
		c.Namespace = os.Getenv("POD_NAMESPACE")
	}
	if c.Namespace == "" {
		c.Namespace = "events-apiserver"
	}
}

// validate checks the flags; standalone and the other certificate flags
// are checked by CompletedOptions.validateCertificates.
func (c *CertificateOptions) validate() []error {
	var errs []error
	if !slices.Contains([]string{"", etcdCertificatesBundled, etcdCertificatesOffload}, c.Etcd) {
		errs = append(errs, fmt.Errorf("--self-managed-etcd-certificates must be %q, %q or empty, got %q", etcdCertificatesBundled, etcdCertificatesOffload, c.Etcd))
	}
	if !c.enabled() {
		return errs
	}
	if c.Lifetime < time.Minute {
		errs = append(errs, fmt.Errorf("--self-managed-certificates-lifetime must be at least 1m, got %v", c.Lifetime))
	}
	if c.CALifetime < 3*c.Lifetime {
		errs = append(errs, fmt.Errorf("--self-managed-certificates-ca-lifetime must be at least three times --self-managed-certificates-lifetime (%v), got %v", 3*c.Lifetime, c.CALifetime))
	}
	if c.Serving && c.Service == "" {
		errs = append(errs, errors.New("--self-managed-certificates-service must not be empty"))
	}
	return errs
}

// validateCertificates checks the self-managed certificates against the
// flags that name certificate files.
func (o CompletedOptions) validateCertificates() []error {
	c := o.Certificates
	errs := c.validate()
	if c.enabled() && o.standalone {
		errs = append(errs, errors.New("--self-managed-certificates, --self-managed-etcd-certificates and --self-managed-archive-certificates need a kube-apiserver to keep the Secrets in; not standalone"))
	}
	cert := o.Recommended.SecureServing.ServerCert.CertKey
	if c.Serving && (cert.CertFile != "" || cert.KeyFile != "") {
		errs = append(errs, errors.New("--self-managed-certificates cannot be combined with --tls-cert-file or --tls-private-key-file"))
	}
	transport := o.Recommended.Etcd.StorageConfig.Transport
	if c.Etcd != "" && (transport.CertFile != "" || transport.KeyFile != "" || transport.TrustedCAFile != "") {
		errs = append(errs, errors.New("--self-managed-etcd-certificates cannot be combined with --etcd-certfile, --etcd-keyfile or --etcd-cafile"))
	}
	if c.Archive && (o.archive.TLS.CAFile == "" || o.archive.Auth.PasswordFile == "") {
		errs = append(errs, errors.New("--self-managed-archive-certificates writes the files --archive-ca-file and --archive-password-file name: set both"))
	}
	if c.Etcd != "" && o.embeddedEtcd {
		errs = append(errs, errors.New("--self-managed-etcd-certificates is for the bundled etcd, not the embedded one: set --etcd-servers"))
	}
	return errs
}

// authorities are what the Issuer keeps.
func (c *CertificateOptions) authorities() []selfcert.AuthoritySpec {
	var specs []selfcert.AuthoritySpec
	serverAuth := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	clientAuth := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if c.Serving {
		svc := c.Service + "." + c.Namespace + ".svc"
		specs = append(specs, selfcert.AuthoritySpec{
			Secret:     servingCASecret,
			CommonName: c.Service + "-ca",
			Certificates: []selfcert.CertificateSpec{{
				Secret: servingSecret, CommonName: svc, DNSNames: []string{svc, svc + ".cluster.local"}, Usages: serverAuth,
			}},
			APIServices: c.APIServices,
		})
	}
	if c.Archive {
		var names []string
		for _, host := range []string{"events-victorialogs", "*.events-victorialogs", "*.events-vlstorage"} {
			svc := host + "." + c.Namespace + ".svc"
			names = append(names, svc, svc+".cluster.local")
		}
		specs = append(specs, selfcert.AuthoritySpec{
			Secret: archiveCASecret, CommonName: "events-victorialogs-ca",
			Certificates: []selfcert.CertificateSpec{{
				Secret: archiveTLSSecret, CommonName: "events-victorialogs." + c.Namespace + ".svc", DNSNames: names, Usages: serverAuth,
			}},
		})
	}
	if c.Etcd == "" {
		return specs
	}
	peers := "events-etcd-peer." + c.Namespace + ".svc"
	etcd := selfcert.AuthoritySpec{Secret: etcdCASecret, CommonName: "events-etcd-ca"}
	if c.Etcd == etcdCertificatesBundled {
		client := "events-etcd." + c.Namespace + ".svc"
		etcd.Certificates = append(etcd.Certificates, selfcert.CertificateSpec{
			Secret: etcdMemberSecret, CommonName: "events-etcd",
			DNSNames:    []string{"*." + peers, "*." + peers + ".cluster.local", client, client + ".cluster.local", "localhost"},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1).To4()},
			Usages:      serverAuth,
		})
	}
	etcd.Certificates = append(etcd.Certificates,
		// A member dials its peers with the certificate it serves them:
		// etcd's peer certificates authenticate both ways.
		selfcert.CertificateSpec{
			Secret: etcdPeerSecret, CommonName: "events-etcd-peer",
			DNSNames: []string{"*." + peers, "*." + peers + ".cluster.local"},
			Usages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		},
		selfcert.CertificateSpec{Secret: etcdClientSecret, CommonName: "events-apiserver", Usages: clientAuth},
	)
	trust := selfcert.TrustSpec{Secret: etcdClientCASecret}
	if c.Etcd == etcdCertificatesOffload {
		trust.Include = []string{etcdKubeCASecret}
	}
	etcd.Trust = []selfcert.TrustSpec{trust}
	return append(specs, etcd)
}

// selfManaged is what the self-managed certificates give the server's
// configuration.
type selfManaged struct {
	issuer  *selfcert.Issuer
	serving *selfcert.SecretContent
}

// startCertificates makes the self-managed certificates that are missing,
// waits until the server's own can be read, starts following them until
// ctx ends, and points the etcd client at files kept from its Secrets.
func (o CompletedOptions) startCertificates(ctx context.Context) (*selfManaged, error) {
	c := o.Certificates
	config, err := o.kubeClientConfig()
	if err != nil {
		return nil, fmt.Errorf("self-managed certificates: %w", err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	var randoms []selfcert.RandomSpec
	if c.Archive {
		randoms = append(randoms, selfcert.RandomSpec{Secret: archiveAuthSecret, Key: archiveAuthKey})
	}
	issuer, err := selfcert.New(selfcert.Config{
		Client: client, Dynamic: dyn, Namespace: c.Namespace, Authorities: c.authorities(), Randoms: randoms,
		Lifetime: c.Lifetime, AuthorityLifetime: c.CALifetime,
	})
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	startCtx, cancel := context.WithTimeout(ctx, certificatesTimeout)
	defer cancel()
	// At start only what is missing is made: the elected replica renews.
	if err := wait.PollUntilContextCancel(startCtx, time.Second, true, func(ctx context.Context) (bool, error) {
		if err := issuer.Ensure(ctx); err != nil {
			logger.Info("Making the self-managed certificates failed; trying again", "err", err)
			return false, nil
		}
		return true, nil
	}); err != nil {
		return nil, fmt.Errorf("self-managed certificates: %w", err)
	}
	s := &selfManaged{issuer: issuer}
	if c.Serving {
		// The generic server runs it (RunOnce, Run) with its TLS
		// configuration; read once here so that it starts with it.
		s.serving = selfcert.NewSecretContent(client, c.Namespace, servingSecret)
		if err := s.serving.WaitForContent(startCtx); err != nil {
			return nil, err
		}
	}
	if c.Etcd != "" {
		if err := o.followEtcdCertificates(ctx, startCtx, client); err != nil {
			return nil, err
		}
	}
	if c.Archive {
		if err := o.writeArchiveCredentials(ctx, startCtx, client); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// writeArchiveCredentials writes the archive's CA bundle and password to
// the files --archive-ca-file and --archive-password-file name, and keeps
// the bundle current until ctx ends. The password is made once and never
// changes.
func (o CompletedOptions) writeArchiveCredentials(ctx, startCtx context.Context, client kubernetes.Interface) error {
	ns := o.Certificates.Namespace
	auth, err := client.CoreV1().Secrets(ns).Get(startCtx, archiveAuthSecret, metav1.GetOptions{})
	if err != nil {
		return err
	}
	files := []string{o.archive.TLS.CAFile, o.archive.Auth.PasswordFile}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			return err
		}
	}
	if err := pki.WriteFileAtomic(o.archive.Auth.PasswordFile, auth.Data[archiveAuthKey], 0o600); err != nil {
		return err
	}
	tls := selfcert.NewSecretContent(client, ns, archiveTLSSecret)
	if err := tls.WaitForContent(startCtx); err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	tls.OnChange(func(_, _, ca []byte) {
		if err := pki.WriteFileAtomic(o.archive.TLS.CAFile, ca, 0o644); err != nil {
			logger.Error(err, "Writing the archive's CA bundle failed", "path", o.archive.TLS.CAFile)
		}
	})
	go tls.Run(ctx, 1)
	return nil
}

// followEtcdCertificates writes the server's etcd client certificate and
// the CAs it trusts (the trust bundle, which holds the members' serving
// CA in either mode) to files that etcd's client reads on every
// connection, and keeps them current until ctx ends.
func (o CompletedOptions) followEtcdCertificates(ctx, startCtx context.Context, client kubernetes.Interface) error {
	dir, err := os.MkdirTemp("", "etcd-client-")
	if err != nil {
		return err
	}
	context.AfterFunc(ctx, func() { _ = os.RemoveAll(dir) })
	transport := &o.Recommended.Etcd.StorageConfig.Transport
	transport.CertFile = filepath.Join(dir, "tls.crt")
	transport.KeyFile = filepath.Join(dir, "tls.key")
	transport.TrustedCAFile = filepath.Join(dir, "ca.crt")
	logger := klog.FromContext(ctx)
	write := func(path string, data []byte, perm os.FileMode) {
		if err := pki.WriteFileAtomic(path, data, perm); err != nil {
			logger.Error(err, "Writing the etcd client's certificate failed", "path", path)
		}
	}
	clientCert := selfcert.NewSecretContent(client, o.Certificates.Namespace, etcdClientSecret)
	trust := selfcert.NewSecretContent(client, o.Certificates.Namespace, etcdClientCASecret)
	for _, content := range []*selfcert.SecretContent{clientCert, trust} {
		if err := content.WaitForContent(startCtx); err != nil {
			return err
		}
	}
	clientCert.OnChange(func(cert, key, _ []byte) {
		write(transport.KeyFile, key, 0o600)
		write(transport.CertFile, cert, 0o644)
	})
	trust.OnChange(func(_, _, ca []byte) { write(transport.TrustedCAFile, ca, 0o644) })
	go clientCert.Run(ctx, 1)
	go trust.Run(ctx, 1)
	return nil
}

// kubeClientConfig is the kube-apiserver the Secrets are kept in: the one
// of --kubeconfig, or the cluster's the server runs in.
func (o CompletedOptions) kubeClientConfig() (*rest.Config, error) {
	if path := o.Recommended.CoreAPI.CoreAPIKubeconfigPath; path != "" {
		return clientcmd.BuildConfigFromFlags("", path)
	}
	return rest.InClusterConfig()
}
