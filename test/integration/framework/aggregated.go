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

package framework

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-events/events-apiserver/cmd/events-apiserver/app"
	"github.com/kube-events/events-apiserver/pkg/embedded/pki"
	"github.com/kube-events/events-apiserver/test/harness"
)

// The names the aggregated install uses; they match artifacts/.
const (
	// AggregatedNamespace holds the server's ServiceAccount and Service.
	AggregatedNamespace = "events-apiserver"
	// AggregatedServiceName is the Service the APIService points at.
	AggregatedServiceName = "events-apiserver"
	// AggregatedServiceAccount is the server's identity towards kube-apiserver.
	AggregatedServiceAccount = "events-apiserver"
	// AggregatedAPIServiceName is the APIService our server registers.
	AggregatedAPIServiceName = "v1beta1.events.k8s.io"
	// SummariesAPIServiceName is the APIService of the event summaries,
	// a group only our server serves.
	SummariesAPIServiceName = "v1alpha1.summaries.kube-events.io"
	// AggregatedFrontProxyUser is the common name of the client certificate
	// kube-apiserver presents when it proxies to aggregated servers.
	AggregatedFrontProxyUser = "front-proxy-client"
)

var (
	aggregatedAPIServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	aggregatedIdentityKinds = map[string]bool{
		"Namespace": true, "ServiceAccount": true,
		"ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
	}
)

// AggregatedCluster is an envtest kube-apiserver with the aggregator set up
// (front-proxy CA, proxy client certificate, audit log of delegated
// authentication and authorization) and events-apiserver running in this
// process as the aggregated API server for v1beta1.events.k8s.io: delegated
// authentication, authorization and admission through kube-apiserver, with
// its own embedded etcd.
type AggregatedCluster struct {
	// Env is the envtest control plane.
	Env *envtest.Environment
	// AdminConfig reaches kube-apiserver as a system:masters user.
	AdminConfig *rest.Config
	// Kubeconfig is a kubeconfig file with AdminConfig's credentials, for kubectl.
	Kubeconfig string
	// KubectlPath is the kubectl of the envtest assets.
	KubectlPath string
	// Server holds the options our server runs with.
	Server *app.Options
	// ServerConfig reaches our server directly (not through
	// kube-apiserver) as a system:masters user with a client certificate
	// of envtest's client CA, which our server trusts through the
	// extension-apiserver-authentication ConfigMap.
	ServerConfig *rest.Config
	// ServerPort is our server's secure port on 127.0.0.1.
	ServerPort int
	// ServingCA is the PEM CA of our serving certificate; it is the
	// APIService's caBundle.
	ServingCA []byte
	// AuditLog is kube-apiserver's audit log of TokenReviews and
	// SubjectAccessReviews.
	AuditLog string
	// Dir holds every generated file; Stop removes it.
	Dir string
	// EventsEtcd is, in offload mode, the etcd that kube-apiserver keeps its
	// events in (--etcd-servers-overrides=/events#...) and our server
	// serves them from (--etcd-servers); nil otherwise.
	EventsEtcd *Etcd
	// KubeAPIServerLink, with LinkToKubeAPIServer, is what our server
	// reaches kube-apiserver through, to be cut; nil otherwise.
	KubeAPIServerLink *Link

	frontProxy  pki.KeyPair
	serverFlags []string
	run         *run // our server; nil while stopped
}

// AggregatedClusterOptions tune StartAggregatedCluster.
type AggregatedClusterOptions struct {
	// RepoRoot is the module root, for artifacts/; found from the working
	// directory when empty.
	RepoRoot string
	// ExtraServerFlags are appended to our server's command line.
	ExtraServerFlags []string
	// MirrorFromAdmin adds --mirror-kubeconfig with the admin kubeconfig
	// of the envtest kube-apiserver (known only once it runs), so that our
	// server mirrors kube-apiserver's core/v1 events.
	MirrorFromAdmin bool
	// Offload runs offload mode: an events etcd (the envtest etcd binary)
	// is started first, kube-apiserver keeps its events in it with
	// --etcd-servers-overrides=/events#<its URL>, and our server stores
	// events in it (--etcd-servers) instead of the embedded etcd, so that
	// both serve the same keys.
	Offload bool
	// KubeAPIServerFlags are set on kube-apiserver's command line, e.g.
	// runtime-config.
	KubeAPIServerFlags map[string]string
	// LinkToKubeAPIServer has our server reach kube-apiserver through a
	// Link the test can cut (KubeAPIServerLink), as in an outage of
	// kube-apiserver. Requests to our server with ServerConfig (whose
	// group, system:masters, our server lets in without asking
	// kube-apiserver) are served meanwhile.
	LinkToKubeAPIServer bool
	// Timeout bounds the whole start; 3 minutes when zero.
	Timeout time.Duration
}

// StartAggregatedCluster starts kube-apiserver (envtest, with
// KUBEBUILDER_ASSETS) configured as an aggregator, applies the Namespace,
// ServiceAccount and RBAC of artifacts/overlays/default, starts our server
// in-process in delegated mode as that ServiceAccount (with a token from the
// TokenRequest API), points an ExternalName Service at it and registers the
// APIService of artifacts/ with our caBundle and port, and returns once the
// APIService is Available and kube-apiserver's discovery lists
// events.k8s.io/v1beta1. On error everything started is stopped.
func StartAggregatedCluster(o AggregatedClusterOptions) (c *AggregatedCluster, err error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, errors.New(`KUBEBUILDER_ASSETS is not set: run with KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"`)
	}
	if o.Timeout == 0 {
		o.Timeout = 3 * time.Minute
	}
	if o.RepoRoot == "" {
		if o.RepoRoot, err = harness.ModuleRoot(); err != nil {
			return nil, err
		}
	}
	ctx, cancelStart := context.WithTimeout(context.Background(), o.Timeout)
	defer cancelStart()

	dir, err := os.MkdirTemp("", "events-aggregated-")
	if err != nil {
		return nil, err
	}
	c = &AggregatedCluster{Dir: dir, KubectlPath: filepath.Join(assets, "kubectl"), AuditLog: filepath.Join(dir, "audit.log")}
	defer func() {
		if err != nil {
			if stopErr := c.Stop(); stopErr != nil {
				err = fmt.Errorf("%w (and stopping: %v)", err, stopErr)
			}
			c = nil
		}
	}()

	certs, err := c.generateCertificates()
	if err != nil {
		return c, err
	}
	kubeAPIServerFlags := map[string]string{}
	for flag, value := range o.KubeAPIServerFlags {
		kubeAPIServerFlags[flag] = value
	}
	serverFlags := o.ExtraServerFlags
	if o.Offload {
		if c.EventsEtcd, err = RunEtcd(filepath.Join(assets, "etcd"), filepath.Join(dir, "events-etcd")); err != nil {
			return c, fmt.Errorf("starting the events etcd: %w", err)
		}
		kubeAPIServerFlags["etcd-servers-overrides"] = "/events#" + strings.Join(c.EventsEtcd.Endpoints, ";")
		serverFlags = append([]string{"--etcd-servers=" + strings.Join(c.EventsEtcd.Endpoints, ",")}, serverFlags...)
	}
	if err := c.startKubeAPIServer(assets, certs, kubeAPIServerFlags); err != nil {
		return c, err
	}
	objects, err := c.renderArtifacts(ctx, filepath.Join(o.RepoRoot, "artifacts", "overlays", "default"))
	if err != nil {
		return c, err
	}
	if err := c.applyServerIdentity(ctx, objects); err != nil {
		return c, err
	}
	if o.LinkToKubeAPIServer {
		host, err := url.Parse(c.AdminConfig.Host)
		if err != nil {
			return c, err
		}
		if c.KubeAPIServerLink, err = StartLink(host.Host); err != nil {
			return c, err
		}
	}
	serverKubeconfig, err := c.writeServiceAccountKubeconfig(ctx)
	if err != nil {
		return c, err
	}
	if o.MirrorFromAdmin {
		serverFlags = append(append([]string{}, serverFlags...), "--mirror-kubeconfig="+c.Kubeconfig)
	}
	if err := c.startServer(ctx, certs, serverKubeconfig, serverFlags); err != nil {
		return c, err
	}
	if err := c.register(ctx, objects); err != nil {
		return c, err
	}
	return c, nil
}

// aggregatedCertificates are the files StartAggregatedCluster generates.
type aggregatedCertificates struct {
	frontProxyCA *pki.CA
	frontProxy   pki.KeyPair
	servingCA    *pki.CA
	serving      pki.KeyPair
}

// generateCertificates makes the front-proxy CA with kube-apiserver's proxy
// client certificate, and our serving CA with a certificate for the name
// the aggregator checks (<service>.<namespace>.svc) and for loopback.
func (c *AggregatedCluster) generateCertificates() (*aggregatedCertificates, error) {
	pkiDir := filepath.Join(c.Dir, "pki")
	now := time.Now()
	var certs aggregatedCertificates
	var err error
	if certs.frontProxyCA, err = pki.EnsureCA(pkiDir, "front-proxy-ca", "front-proxy-ca", now); err != nil {
		return nil, err
	}
	if certs.frontProxy, err = certs.frontProxyCA.EnsureCert(pkiDir, "front-proxy-client", pki.Spec{
		CommonName: AggregatedFrontProxyUser,
		Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, now); err != nil {
		return nil, err
	}
	if certs.servingCA, err = pki.EnsureCA(pkiDir, "serving-ca", "events-apiserver-ca", now); err != nil {
		return nil, err
	}
	if certs.serving, err = certs.servingCA.EnsureCert(pkiDir, "serving", pki.Spec{
		CommonName: AggregatedServiceName + "." + AggregatedNamespace + ".svc",
		DNSNames:   []string{AggregatedServiceName + "." + AggregatedNamespace + ".svc", "localhost"},
		IPs:        []net.IP{net.IPv4(127, 0, 0, 1)},
		Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, now); err != nil {
		return nil, err
	}
	c.frontProxy = certs.frontProxy
	c.ServingCA = certs.servingCA.CertPEM()
	return &certs, nil
}

// aggregatedAuditPolicy records the TokenReviews and SubjectAccessReviews a
// delegating server sends, with their answers.
const aggregatedAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: RequestResponse
  resources:
  - group: authorization.k8s.io
    resources: [subjectaccessreviews]
  - group: authentication.k8s.io
    resources: [tokenreviews]
- level: None
`

// startKubeAPIServer starts envtest with the aggregator's flags and extra.
func (c *AggregatedCluster) startKubeAPIServer(assets string, certs *aggregatedCertificates, extra map[string]string) error {
	policy := filepath.Join(c.Dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(aggregatedAuditPolicy), 0o600); err != nil {
		return err
	}
	c.Env = &envtest.Environment{BinaryAssetsDirectory: assets}
	apiServer := c.Env.ControlPlane.GetAPIServer()
	// A directory of ours, not a temporary one envtest removes on stop,
	// keeps kube-apiserver's serving, client and ServiceAccount keys
	// across RestartKubeAPIServer.
	apiServer.CertDir = filepath.Join(c.Dir, "kube-apiserver")
	if err := os.MkdirAll(apiServer.CertDir, 0o700); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(c.Dir, "kube-apiserver.log"))
	if err != nil {
		return err
	}
	apiServer.Out, apiServer.Err = log, log
	args := apiServer.Configure()
	for flag, value := range map[string]string{
		"requestheader-client-ca-file":       certs.frontProxyCA.CertFile,
		"requestheader-allowed-names":        AggregatedFrontProxyUser,
		"requestheader-extra-headers-prefix": "X-Remote-Extra-",
		"requestheader-group-headers":        "X-Remote-Group",
		"requestheader-username-headers":     "X-Remote-User",
		"proxy-client-cert-file":             certs.frontProxy.CertFile,
		"proxy-client-key-file":              certs.frontProxy.KeyFile,
		// kube-apiserver advertises 127.0.0.1, which the endpoints of the
		// kubernetes Service may not hold.
		"endpoint-reconciler-type": "none",
		"audit-policy-file":        policy,
		"audit-log-path":           c.AuditLog,
	} {
		args.Set(flag, value)
	}
	for flag, value := range extra {
		args.Set(flag, value)
	}
	cfg, err := c.Env.Start()
	if err != nil {
		return fmt.Errorf("starting envtest: %w", err)
	}
	c.AdminConfig = cfg
	c.Kubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	return os.WriteFile(c.Kubeconfig, c.Env.KubeConfig, 0o600)
}

// RestartKubeAPIServer stops kube-apiserver and starts it again on the same
// port, etcd and keys (clients, tokens and our server's credentials stay
// valid), with flags set on its command line; an empty value removes the
// flag. It returns once kube-apiserver answers /healthz. Start kube-apiserver
// with --shutdown-send-retry-after=true: without it, its watches hold its
// stop for up to --request-timeout, longer than envtest waits.
func (c *AggregatedCluster) RestartKubeAPIServer(flags map[string]string) error {
	apiServer := c.Env.ControlPlane.APIServer
	if err := apiServer.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	args := apiServer.Configure()
	for flag, value := range flags {
		if value == "" {
			args.Disable(flag)
			continue
		}
		args.Set(flag, value)
	}
	if err := apiServer.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return nil
}

// renderArtifacts builds a kustomize overlay with kubectl.
func (c *AggregatedCluster) renderArtifacts(ctx context.Context, overlay string) ([]*unstructured.Unstructured, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, c.KubectlPath, "kustomize", overlay)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w: %s", overlay, err, stderr.String())
	}
	var objects []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	for {
		var u unstructured.Unstructured
		if err := decoder.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objects, nil
			}
			return nil, fmt.Errorf("decoding %s: %w", overlay, err)
		}
		if len(u.Object) > 0 {
			objects = append(objects, &u)
		}
	}
}

// applyServerIdentity creates the Namespace, the ServiceAccount and all the
// RBAC of the artifacts: the server's own permissions, delegation
// (system:auth-delegator, extension-apiserver-authentication-reader) and
// the events-apiserver:view/edit ClusterRoles aggregated into view/edit/admin.
func (c *AggregatedCluster) applyServerIdentity(ctx context.Context, objects []*unstructured.Unstructured) error {
	client, err := dynamic.NewForConfig(c.AdminConfig)
	if err != nil {
		return err
	}
	for _, obj := range objects {
		if !aggregatedIdentityKinds[obj.GetKind()] {
			continue
		}
		gvk := obj.GroupVersionKind()
		gvr := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: aggregatedResource(gvk.Kind)}
		var ri dynamic.ResourceInterface = client.Resource(gvr)
		if ns := obj.GetNamespace(); ns != "" {
			ri = client.Resource(gvr).Namespace(ns)
		}
		if _, err := ri.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

// aggregatedResource is the resource of the kinds applyServerIdentity creates.
func aggregatedResource(kind string) string {
	return map[string]string{
		"Namespace": "namespaces", "ServiceAccount": "serviceaccounts",
		"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
		"Role": "roles", "RoleBinding": "rolebindings",
	}[kind]
}

// writeServiceAccountKubeconfig requests a token for the server's
// ServiceAccount and writes a kubeconfig with it, as a pod would have.
func (c *AggregatedCluster) writeServiceAccountKubeconfig(ctx context.Context) (string, error) {
	client, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		return "", err
	}
	token, err := client.CoreV1().ServiceAccounts(AggregatedNamespace).CreateToken(ctx, AggregatedServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}},
		metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for the server's ServiceAccount: %w", err)
	}
	config := clientcmdapi.NewConfig()
	server := c.AdminConfig.Host
	if c.KubeAPIServerLink != nil {
		server = "https://" + c.KubeAPIServerLink.Addr()
	}
	config.Clusters["kube"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: c.AdminConfig.CAData}
	config.AuthInfos["events-apiserver"] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	config.Contexts["events-apiserver"] = &clientcmdapi.Context{Cluster: "kube", AuthInfo: "events-apiserver"}
	config.CurrentContext = "events-apiserver"
	path := filepath.Join(c.Dir, "server.kubeconfig")
	return path, clientcmd.WriteToFile(*config, path)
}

// startServer runs our server in this process, delegating to
// kube-apiserver with the ServiceAccount's kubeconfig, and waits until it
// is ready.
func (c *AggregatedCluster) startServer(ctx context.Context, certs *aggregatedCertificates, kubeconfig string, extraFlags []string) error {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	c.ServerPort = listener.Addr().(*net.TCPAddr).Port
	c.serverFlags = append([]string{
		"--data-dir=" + filepath.Join(c.Dir, "server"),
		"--secure-port=" + strconv.Itoa(c.ServerPort),
		"--tls-cert-file=" + certs.serving.CertFile,
		"--tls-private-key-file=" + certs.serving.KeyFile,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--kubeconfig=" + kubeconfig,
		"--embedded-etcd-log-level=error",
	}, extraFlags...)
	if err := c.runServer(ctx, listener); err != nil {
		return err
	}

	direct, err := c.Env.AddUser(envtest.User{Name: "events-direct-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	c.ServerConfig = rest.CopyConfig(direct.Config())
	c.ServerConfig.Host = "https://127.0.0.1:" + strconv.Itoa(c.ServerPort)
	c.ServerConfig.CAData = c.ServingCA
	return nil
}

// runServer runs our server in this process with c.serverFlags on
// listener and waits until it is ready.
func (c *AggregatedCluster) runServer(ctx context.Context, listener net.Listener) error {
	o := app.NewOptions()
	fs := aggregatedFlagSet(o)
	if err := fs.Parse(c.serverFlags); err != nil {
		listener.Close()
		return err
	}
	o.Recommended.SecureServing.Listener = listener
	c.Server = o

	r, err := startRun(ctx, o, false)
	if err != nil {
		listener.Close()
		return err
	}
	c.run = r
	return nil
}

// StopServer stops our server only; kube-apiserver keeps running (and
// its APIService turns unavailable) until StartServerAgain.
func (c *AggregatedCluster) StopServer() error {
	if c.run == nil {
		return errors.New("events-apiserver is not running")
	}
	err := c.run.stop()
	c.run = nil
	return err
}

// StartServerAgain starts our server after StopServer with the same flags,
// port and data directory (so the same embedded etcd data), and waits
// until kube-apiserver's aggregator serves events.k8s.io/v1beta1 again.
func (c *AggregatedCluster) StartServerAgain(ctx context.Context) error {
	if c.run != nil {
		return errors.New("events-apiserver is running")
	}
	listener, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(c.ServerPort))
	if err != nil {
		return err
	}
	if err := c.runServer(ctx, listener); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(c.AdminConfig)
	if err != nil {
		return err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(c.AdminConfig)
	if err != nil {
		return err
	}
	return c.waitServed(ctx, dyn, disco, "again")
}

// waitServed waits, as long as ctx allows, until the APIService is
// Available and served (registrationState says nothing is missing).
func (c *AggregatedCluster) waitServed(ctx context.Context, dyn dynamic.Interface, disco discovery.DiscoveryInterface, what string) error {
	var last string
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = c.registrationState(ctx, dyn, disco)
		return last == "", nil
	})
	if err != nil {
		return fmt.Errorf("APIService %s not served %s: %s", AggregatedAPIServiceName, what, last)
	}
	return nil
}

// register creates the ExternalName Service and the APIService of the
// artifacts with our port and caBundle, then waits until the APIService is
// Available and kube-apiserver's discovery serves events.k8s.io/v1beta1.
func (c *AggregatedCluster) register(ctx context.Context, objects []*unstructured.Unstructured) error {
	client, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		return err
	}
	// The aggregator dials <externalName>:<APIService port> and checks the
	// certificate for <service>.<namespace>.svc.
	service := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: AggregatedServiceName, Namespace: AggregatedNamespace},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: "localhost",
			Ports:        []corev1.ServicePort{{Name: "https", Port: int32(c.ServerPort)}},
		},
	}
	if _, err := client.CoreV1().Services(AggregatedNamespace).Create(ctx, service, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the ExternalName Service: %w", err)
	}

	apiService, err := c.apiServiceFrom(objects, AggregatedAPIServiceName)
	if err != nil {
		return fmt.Errorf("artifacts/overlays/default: %w", err)
	}
	dyn, err := dynamic.NewForConfig(c.AdminConfig)
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(aggregatedAPIServiceGVR).Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the APIService: %w", err)
	}
	summaries, err := c.apiServiceFrom(objects, SummariesAPIServiceName)
	if err != nil {
		return fmt.Errorf("artifacts/overlays/default: %w", err)
	}
	if _, err := dyn.Resource(aggregatedAPIServiceGVR).Create(ctx, summaries, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the APIService %s: %w", SummariesAPIServiceName, err)
	}

	disco, err := discovery.NewDiscoveryClientForConfig(c.AdminConfig)
	if err != nil {
		return err
	}
	if err := c.waitServed(ctx, dyn, disco, "after registration"); err != nil {
		return err
	}
	var last error
	if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, last = disco.ServerResourcesForGroupVersion("summaries.kube-events.io/v1alpha1")
		return last == nil, nil
	}); err != nil {
		return fmt.Errorf("APIService %s not served after registration: %v", SummariesAPIServiceName, last)
	}
	return nil
}

// OverlayAPIService is the APIService name of the kustomize overlay
// artifacts/overlays/<overlay>, as this cluster registers it: pointing at
// our port, with our caBundle instead of cert-manager's injection.
func (c *AggregatedCluster) OverlayAPIService(ctx context.Context, repoRoot, overlay, name string) (*unstructured.Unstructured, error) {
	objects, err := c.renderArtifacts(ctx, filepath.Join(repoRoot, "artifacts", "overlays", overlay))
	if err != nil {
		return nil, err
	}
	apiService, err := c.apiServiceFrom(objects, name)
	if err != nil {
		return nil, fmt.Errorf("artifacts/overlays/%s: %w", overlay, err)
	}
	return apiService, nil
}

// apiServiceFrom is the APIService name of objects, pointing at our port,
// with our caBundle.
func (c *AggregatedCluster) apiServiceFrom(objects []*unstructured.Unstructured, name string) (*unstructured.Unstructured, error) {
	var apiService *unstructured.Unstructured
	for _, obj := range objects {
		if obj.GetKind() == "APIService" && obj.GetName() == name {
			apiService = obj.DeepCopy()
		}
	}
	if apiService == nil {
		return nil, fmt.Errorf("no APIService %s", name)
	}
	apiService.SetAnnotations(nil) // cert-manager's CA injection; we set caBundle ourselves.
	if err := unstructured.SetNestedField(apiService.Object, int64(c.ServerPort), "spec", "service", "port"); err != nil {
		return nil, err
	}
	if err := unstructured.SetNestedField(apiService.Object, base64.StdEncoding.EncodeToString(c.ServingCA), "spec", "caBundle"); err != nil {
		return nil, err
	}
	return apiService, nil
}

// registrationState is "" once the APIService is Available and discovery
// lists v1beta1 in events.k8s.io, else what is still missing.
func (c *AggregatedCluster) registrationState(ctx context.Context, dyn dynamic.Interface, disco discovery.DiscoveryInterface) string {
	u, err := dyn.Resource(aggregatedAPIServiceGVR).Get(ctx, AggregatedAPIServiceName, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	available := false
	var message string
	for _, cond := range conditions {
		m, _ := cond.(map[string]any)
		if m["type"] == "Available" {
			available = m["status"] == "True"
			message = fmt.Sprintf("Available=%v: %v: %v", m["status"], m["reason"], m["message"])
		}
	}
	if !available {
		if message == "" {
			return "no Available condition yet"
		}
		return message
	}
	groups, err := disco.ServerGroups()
	if err != nil {
		return "discovery: " + err.Error()
	}
	for _, g := range groups.Groups {
		if g.Name != "events.k8s.io" {
			continue
		}
		for _, v := range g.Versions {
			if v.Version == "v1beta1" {
				return ""
			}
		}
	}
	return "discovery does not list events.k8s.io/v1beta1 yet"
}

// FrontProxyConfig reaches our server directly the way kube-apiserver's
// proxy does: with the front-proxy client certificate and the user in
// X-Remote-User / X-Remote-Group headers, so that our server
// authenticates the user from the headers and authorizes it with a
// SubjectAccessReview.
func (c *AggregatedCluster) FrontProxyConfig(user string, groups ...string) *rest.Config {
	cfg := &rest.Config{
		Host: "https://127.0.0.1:" + strconv.Itoa(c.ServerPort),
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   c.ServingCA,
			CertFile: c.frontProxy.CertFile,
			KeyFile:  c.frontProxy.KeyFile,
		},
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return aggregatedRequestHeaders{next: rt, user: user, groups: groups}
	})
	return cfg
}

type aggregatedRequestHeaders struct {
	next   http.RoundTripper
	user   string
	groups []string
}

func (h aggregatedRequestHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("X-Remote-User", h.user)
	req.Header.Del("X-Remote-Group")
	for _, g := range h.groups {
		req.Header.Add("X-Remote-Group", g)
	}
	return h.next.RoundTrip(req)
}

// AuditedReview is a TokenReview or SubjectAccessReview kube-apiserver
// answered, from its audit log.
type AuditedReview struct {
	// Requester is who sent the review (our server's ServiceAccount).
	Requester string
	// SubjectAccessReview is set for SubjectAccessReviews, with the answer
	// in its Status.
	SubjectAccessReview *authorizationv1.SubjectAccessReview
	// TokenReview is set for TokenReviews, with the answer in its Status.
	TokenReview *authenticationv1.TokenReview
}

// AuditedReviews reads every TokenReview and SubjectAccessReview
// kube-apiserver has answered so far.
func (c *AggregatedCluster) AuditedReviews() ([]AuditedReview, error) {
	f, err := os.Open(c.AuditLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var reviews []AuditedReview
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for scanner.Scan() {
		var event auditv1.Event
		if err := json.Unmarshal(scanner.Bytes(), &event); err != nil {
			return nil, fmt.Errorf("audit log line: %w", err)
		}
		if event.Stage != auditv1.StageResponseComplete || event.ObjectRef == nil || event.ResponseObject == nil {
			continue
		}
		review := AuditedReview{Requester: event.User.Username}
		switch event.ObjectRef.Resource {
		case "subjectaccessreviews":
			review.SubjectAccessReview = &authorizationv1.SubjectAccessReview{}
			err = json.Unmarshal(event.ResponseObject.Raw, review.SubjectAccessReview)
		case "tokenreviews":
			review.TokenReview = &authenticationv1.TokenReview{}
			err = json.Unmarshal(event.ResponseObject.Raw, review.TokenReview)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("audited %s: %w", event.ObjectRef.Resource, err)
		}
		reviews = append(reviews, review)
	}
	return reviews, scanner.Err()
}

// AggregatedServerUser is the user name of our server's ServiceAccount.
func AggregatedServerUser() string {
	return "system:serviceaccount:" + AggregatedNamespace + ":" + AggregatedServiceAccount
}

// Stop stops our server, then kube-apiserver and its etcd, and removes Dir.
func (c *AggregatedCluster) Stop() error {
	var errs []error
	if c.run != nil {
		if err := c.run.stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.KubeAPIServerLink != nil {
		if err := c.KubeAPIServerLink.Close(); err != nil {
			errs = append(errs, fmt.Errorf("link to kube-apiserver: %w", err))
		}
	}
	if c.Env != nil {
		if err := c.Env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("envtest: %w", err))
		}
	}
	if c.EventsEtcd != nil {
		if err := c.EventsEtcd.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("events etcd: %w", err))
		}
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// MainEtcdEndpoint is the client URL of the cluster's main etcd, the one
// envtest started for kube-apiserver.
func (c *AggregatedCluster) MainEtcdEndpoint() string {
	return c.Env.ControlPlane.Etcd.URL.String()
}

// aggregatedFlagSet is the command line of our server, as the command has it.
func aggregatedFlagSet(o *app.Options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("events-apiserver", pflag.ContinueOnError)
	o.AddFlags(fs)
	return fs
}

// AggregateClusterRoles does once what kube-controller-manager's
// clusterrole-aggregation controller does continuously, which envtest does
// not run: every ClusterRole with an aggregationRule (view, edit, admin...)
// gets the rules of the ClusterRoles its selectors match, in name order.
// Call it after creating ClusterRoles that carry aggregate-to-* labels.
func (c *AggregatedCluster) AggregateClusterRoles(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		return err
	}
	roles, err := client.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, role := range roles.Items {
		if role.AggregationRule == nil {
			continue
		}
		var rules []rbacv1.PolicyRule
		seen := map[string]bool{}
		for _, selector := range role.AggregationRule.ClusterRoleSelectors {
			s, err := metav1.LabelSelectorAsSelector(&selector)
			if err != nil {
				return fmt.Errorf("ClusterRole %s: %w", role.Name, err)
			}
			matched, err := client.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{LabelSelector: s.String()})
			if err != nil {
				return err
			}
			sort.Slice(matched.Items, func(i, j int) bool { return matched.Items[i].Name < matched.Items[j].Name })
			for _, m := range matched.Items {
				if m.Name == role.Name {
					continue
				}
				for _, rule := range m.Rules {
					key := rule.String()
					if !seen[key] {
						seen[key] = true
						rules = append(rules, rule)
					}
				}
			}
		}
		if equality.Semantic.DeepEqual(rules, role.Rules) {
			continue
		}
		updated := role.DeepCopy()
		updated.Rules = rules
		if _, err := client.RbacV1().ClusterRoles().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("aggregating ClusterRole %s: %w", role.Name, err)
		}
	}
	return nil
}

// KubeClient is a clientset of cfg, failing t if it cannot be made.
func KubeClient(t testing.TB, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// NewNamespace creates a namespace for one test in kube-apiserver, its name
// generated from prefix.
func (c *AggregatedCluster) NewNamespace(ctx context.Context, t testing.TB, prefix string) string {
	t.Helper()
	ns, err := KubeClient(t, c.AdminConfig).CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}
