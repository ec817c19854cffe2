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

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kube-events/events-apiserver/pkg/embedded/pki"
	"github.com/kube-events/events-apiserver/test/freeport"
)

// nodeName is the one node's name.
const nodeName = "e2e-node"

// Cluster is a one-node cluster from binaries, inside the sandbox: etcd,
// kube-apiserver with the aggregator, kube-controller-manager,
// kube-scheduler, containerd with runc and the bridge CNI, the kubelet,
// kube-proxy (iptables) and CoreDNS, each a process of this suite's.
type Cluster struct {
	// Dir holds every file the cluster writes; Stop removes it.
	Dir string
	// Assets holds the binaries (hack/cluster-assets.sh).
	Assets string
	// Kubeconfig is a system:masters kubeconfig, for kubectl.
	Kubeconfig string
	// Admin reaches kube-apiserver as system:masters.
	Admin *rest.Config
	// Client is Admin's clientset.
	Client kubernetes.Interface
	// EtcdEndpoint is the main etcd's client URL.
	EtcdEndpoint string
	// ContainerdSocket is containerd's address, for ctr.
	ContainerdSocket string
	// Timings are how long each component took to be ready.
	Timings []Timing

	ca          *pki.CA
	frontProxy  *pki.CA
	tokens      map[string]string
	apiPort     int
	cgroupName  string
	procs       []*process
	apiserver   *process
	extraAPIArg []string
	// kubeProxyHealthz is kube-proxy's health URL.
	kubeProxyHealthz string
}

// Timing is one component's start-up time.
type Timing struct {
	Component string
	Took      time.Duration
}

// process is a component the suite runs, logging to Dir/logs/<name>.log.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// ClusterOptions tune StartCluster.
type ClusterOptions struct {
	// APIServerFlags are added to kube-apiserver's command line
	// (--name=value), e.g. --etcd-servers-overrides.
	APIServerFlags []string
}

// StartCluster brings the cluster up in the sandbox, component by
// component, each waited on before the next; on error it stops what it
// started.
func StartCluster(ctx context.Context, assets string, o ClusterOptions) (c *Cluster, err error) {
	dir, err := os.MkdirTemp("", "events-e2e-")
	if err != nil {
		return nil, err
	}
	c = &Cluster{Dir: dir, Assets: assets, extraAPIArg: o.APIServerFlags, cgroupName: filepath.Base(dir)}
	defer func() {
		if err != nil {
			if stopErr := c.Stop(context.Background()); stopErr != nil {
				err = errors.Join(err, stopErr)
			}
			c = nil
		}
	}()
	for _, d := range []string{"logs", "pki", "etcd", "containerd", "kubelet", "pod-logs", "cni/net.d", "cni/ipam"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return c, err
		}
	}
	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"certificates", c.writeCredentials},
		{"etcd", c.startEtcd},
		{"kube-apiserver", c.startAPIServer},
		{"kube-controller-manager", c.startControllerManager},
		{"kube-scheduler", c.startScheduler},
		{"kube-proxy", c.startKubeProxy},
		{"coredns", c.startCoreDNS},
		{"containerd", c.startContainerd},
		{"kubelet", c.startKubelet},
		{"kube-proxy rules", c.waitKubeProxy},
	}
	for _, s := range steps {
		start := time.Now()
		if err := s.run(ctx); err != nil {
			return c, fmt.Errorf("starting %s: %w", s.name, err)
		}
		c.Timings = append(c.Timings, Timing{Component: s.name, Took: time.Since(start)})
	}
	return c, nil
}

// path is a file in the cluster's directory.
func (c *Cluster) path(elem ...string) string {
	return filepath.Join(append([]string{c.Dir}, elem...)...)
}

// writeCredentials makes the cluster CA (kube-apiserver's serving
// certificate, the service account key), the front-proxy CA and client
// certificate of the aggregator, the static tokens of every component and
// the admin, and their kubeconfigs.
func (c *Cluster) writeCredentials(context.Context) error {
	now := time.Now()
	pkiDir := c.path("pki")
	var err error
	if c.ca, err = pki.EnsureCA(pkiDir, "ca", "events-e2e-ca", now); err != nil {
		return err
	}
	if _, err := c.ca.EnsureCert(pkiDir, "apiserver", pki.Spec{
		CommonName: "kube-apiserver",
		DNSNames:   []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"},
		IPs:        []net.IP{net.ParseIP(nodeIP), net.ParseIP(kubernetesServiceIP), net.IPv4(127, 0, 0, 1)},
		Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, now); err != nil {
		return err
	}
	// Only its key is used: it signs and checks service account tokens.
	if _, err := c.ca.EnsureCert(pkiDir, "service-account", pki.Spec{
		CommonName: "service-accounts",
		Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, now); err != nil {
		return err
	}
	if c.frontProxy, err = pki.EnsureCA(pkiDir, "front-proxy-ca", "front-proxy-ca", now); err != nil {
		return err
	}
	if _, err := c.frontProxy.EnsureCert(pkiDir, "front-proxy-client", pki.Spec{
		CommonName: "front-proxy-client",
		Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, now); err != nil {
		return err
	}
	ports, err := freeport.Ports(1)
	if err != nil {
		return err
	}
	c.apiPort = ports[0]
	// user, groups: the identities the bootstrap RBAC roles name.
	identities := []struct{ name, user, groups string }{
		{"admin", "e2e-admin", "system:masters"},
		{"kubelet", "system:node:" + nodeName, "system:nodes"},
		{"kube-controller-manager", "system:kube-controller-manager", ""},
		{"kube-scheduler", "system:kube-scheduler", ""},
		{"kube-proxy", "system:kube-proxy", ""},
		{"coredns", "system:coredns", "system:masters"},
	}
	c.tokens = map[string]string{}
	var tokenFile strings.Builder
	for i, id := range identities {
		token := fmt.Sprintf("e2e-%s-%d-%d", id.name, i, now.UnixNano())
		c.tokens[id.name] = token
		fmt.Fprintf(&tokenFile, "%s,%s,%s,%q\n", token, id.user, id.user, id.groups)
		if err := c.writeKubeconfig(id.name, token); err != nil {
			return err
		}
	}
	if err := os.WriteFile(c.path("pki", "tokens.csv"), []byte(tokenFile.String()), 0o600); err != nil {
		return err
	}
	c.Kubeconfig = c.path("admin.kubeconfig")
	if c.Admin, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return err
	}
	c.Admin.QPS, c.Admin.Burst = 100, 200
	c.Client, err = kubernetes.NewForConfig(c.Admin)
	return err
}

// APIServerURL is kube-apiserver's address on the node IP.
func (c *Cluster) APIServerURL() string {
	return "https://" + net.JoinHostPort(nodeIP, strconv.Itoa(c.apiPort))
}

// writeKubeconfig writes <name>.kubeconfig with a bearer token.
func (c *Cluster) writeKubeconfig(name, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.APIServerURL(), CertificateAuthorityData: c.ca.CertPEM()}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: name}
	cfg.CurrentContext = "e2e"
	return clientcmd.WriteToFile(*cfg, c.path(name+".kubeconfig"))
}

// UserKubeconfig writes a kubeconfig for a user authenticated by a client
// certificate of the cluster CA (kube-apiserver's --client-ca-file).
func (c *Cluster) UserKubeconfig(user string, groups ...string) (string, error) {
	pair, err := c.ca.EnsureCert(c.path("pki"), "user-"+user, pki.Spec{
		CommonName:   user,
		Organization: groups,
		Usages:       []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, time.Now())
	if err != nil {
		return "", err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.APIServerURL(), CertificateAuthorityData: c.ca.CertPEM()}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificate: pair.CertFile, ClientKey: pair.KeyFile}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: user}
	cfg.CurrentContext = "e2e"
	path := c.path("user-" + user + ".kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// start runs a component, logging to logs/<name>.log; the process dies
// with the suite (Pdeathsig) if Stop is never reached.
func (c *Cluster) start(name, binary string, args ...string) (*process, error) {
	logPath := c.path("logs", name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), "PATH="+c.Assets+":"+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	c.procs = append(c.procs, p)
	return p, nil
}

// stop sends SIGTERM and waits up to grace, then SIGKILL.
func (p *process) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.cmd.Process.Pid)
	}
}

// exited reports whether p ended, with its error.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Tail is the last n lines of a component's log.
func (c *Cluster) Tail(name string, n int) string {
	data, _ := os.ReadFile(c.path("logs", name+".log"))
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitHTTP waits until url answers 200 (TLS not verified: the components'
// self-signed health endpoints), while p runs.
func waitHTTP(ctx context.Context, p *process, url string, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // local health endpoints
	return waitRunning(ctx, p, timeout, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// waitRunning polls cond every 200ms until it holds, p exits or timeout.
func waitRunning(ctx context.Context, p *process, timeout time.Duration, cond wait.ConditionWithContextFunc) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if done, err := p.exited(); done {
			// The cluster's directory goes at teardown: the log's end
			// goes with the error.
			tail, _ := os.ReadFile(p.log)
			lines := strings.Split(strings.TrimSpace(string(tail)), "\n")
			return false, fmt.Errorf("%s exited: %v; the end of its log:\n%s", p.name, err, strings.Join(lines[max(len(lines)-15, 0):], "\n"))
		}
		return cond(ctx)
	})
	if err != nil {
		return fmt.Errorf("%s: %w (log %s)", p.name, err, p.log)
	}
	return nil
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	ports, err := freeport.Ports(2)
	if err != nil {
		return err
	}
	c.EtcdEndpoint = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	p, err := c.start("etcd", filepath.Join(c.Assets, "etcd"),
		"--data-dir", c.path("etcd"),
		"--listen-client-urls", c.EtcdEndpoint, "--advertise-client-urls", c.EtcdEndpoint,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		"--initial-cluster", fmt.Sprintf("default=http://127.0.0.1:%d", ports[1]),
		"--unsafe-no-fsync", "--log-level", "warn")
	if err != nil {
		return err
	}
	return waitHTTP(ctx, p, c.EtcdEndpoint+"/health", time.Minute)
}

// apiServerArgs is kube-apiserver's command line.
func (c *Cluster) apiServerArgs() []string {
	args := []string{
		"--etcd-servers=" + c.EtcdEndpoint,
		"--bind-address=0.0.0.0",
		"--advertise-address=" + nodeIP,
		"--secure-port=" + strconv.Itoa(c.apiPort),
		"--tls-cert-file=" + c.path("pki", "apiserver.crt"),
		"--tls-private-key-file=" + c.path("pki", "apiserver.key"),
		"--client-ca-file=" + c.ca.CertFile,
		"--token-auth-file=" + c.path("pki", "tokens.csv"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.path("pki", "service-account.key"),
		"--service-account-signing-key-file=" + c.path("pki", "service-account.key"),
		"--service-cluster-ip-range=" + serviceSubnet,
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--requestheader-client-ca-file=" + c.frontProxy.CertFile,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-username-headers=X-Remote-User",
		"--proxy-client-cert-file=" + c.path("pki", "front-proxy-client.crt"),
		"--proxy-client-key-file=" + c.path("pki", "front-proxy-client.key"),
		"--kubelet-preferred-address-types=InternalIP",
		"--v=1",
	}
	return append(args, c.extraAPIArg...)
}

func (c *Cluster) startAPIServer(ctx context.Context) error {
	p, err := c.start("kube-apiserver", filepath.Join(c.Assets, "kube-apiserver"), c.apiServerArgs()...)
	if err != nil {
		return err
	}
	c.apiserver = p
	return c.waitAPIServer(ctx, p)
}

func (c *Cluster) waitAPIServer(ctx context.Context, p *process) error {
	return waitRunning(ctx, p, 2*time.Minute, func(ctx context.Context) (bool, error) {
		body, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
}

// RestartAPIServer stops kube-apiserver and starts it again with extra
// flags in place of the previous ones (offload mode's
// --etcd-servers-overrides).
//
// kube-apiserver stops listening and drains its requests as soon as it is
// sent SIGTERM, and then takes 30 s to exit; it is killed after 5 s, so
// that it is down for as long as its start takes.
func (c *Cluster) RestartAPIServer(ctx context.Context, flags ...string) error {
	if err := c.apiserver.stop(5 * time.Second); err != nil {
		return err
	}
	c.extraAPIArg = flags
	p, err := c.start("kube-apiserver", filepath.Join(c.Assets, "kube-apiserver"), c.apiServerArgs()...)
	if err != nil {
		return err
	}
	c.apiserver = p
	return c.waitAPIServer(ctx, p)
}

func (c *Cluster) startControllerManager(ctx context.Context) error {
	port, err := freeport.Ports(1)
	if err != nil {
		return err
	}
	p, err := c.start("kube-controller-manager", filepath.Join(c.Assets, "kube-controller-manager"),
		"--kubeconfig="+c.path("kube-controller-manager.kubeconfig"),
		"--authentication-kubeconfig="+c.path("kube-controller-manager.kubeconfig"),
		"--authorization-kubeconfig="+c.path("kube-controller-manager.kubeconfig"),
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port[0]),
		"--service-account-private-key-file="+c.path("pki", "service-account.key"),
		"--root-ca-file="+c.ca.CertFile,
		"--use-service-account-credentials=true",
		"--service-cluster-ip-range="+serviceSubnet,
		"--leader-elect=false",
		"--v=1")
	if err != nil {
		return err
	}
	return waitHTTP(ctx, p, fmt.Sprintf("https://127.0.0.1:%d/healthz", port[0]), 2*time.Minute)
}

func (c *Cluster) startScheduler(ctx context.Context) error {
	port, err := freeport.Ports(1)
	if err != nil {
		return err
	}
	p, err := c.start("kube-scheduler", filepath.Join(c.Assets, "kube-scheduler"),
		"--kubeconfig="+c.path("kube-scheduler.kubeconfig"),
		"--authentication-kubeconfig="+c.path("kube-scheduler.kubeconfig"),
		"--authorization-kubeconfig="+c.path("kube-scheduler.kubeconfig"),
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port[0]),
		"--leader-elect=false",
		// A pod no node can take is tried again after this (the default
		// is five minutes; the queue looks every 30 s), so that its
		// FailedScheduling repeats, and becomes a series, within the
		// suite's time.
		"--pod-max-in-unschedulable-pods-duration=5s",
		"--v=1")
	if err != nil {
		return err
	}
	return waitHTTP(ctx, p, fmt.Sprintf("https://127.0.0.1:%d/healthz", port[0]), 2*time.Minute)
}

// startKubeProxy runs kube-proxy in iptables mode. The conntrack sysctls
// it would set are the machine's, not the sandbox's: left alone.
func (c *Cluster) startKubeProxy(ctx context.Context) error {
	ports, err := freeport.Ports(2)
	if err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
mode: iptables
clusterCIDR: %s
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
nodePortAddresses: [%s/32]
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, c.path("kube-proxy.kubeconfig"), nodeName, podSubnet, ports[0], ports[1], nodeIP)
	if err := os.WriteFile(c.path("kube-proxy.yaml"), []byte(config), 0o644); err != nil {
		return err
	}
	_, err = c.start("kube-proxy", filepath.Join(c.Assets, "kube-proxy"), "--config="+c.path("kube-proxy.yaml"), "--v=1")
	if err != nil {
		return err
	}
	// Healthy once it synced its rules, which waits for its Node: checked
	// after the kubelet registered it (waitKubeProxy).
	c.kubeProxyHealthz = fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[0])
	return nil
}

// waitKubeProxy waits until kube-proxy synced its rules.
func (c *Cluster) waitKubeProxy(ctx context.Context) error {
	return waitHTTP(ctx, c.Process("kube-proxy"), c.kubeProxyHealthz, time.Minute)
}

// startCoreDNS serves cluster.local (and reverse lookups of pods and
// Services, which etcd checks its peers' certificates against) on the
// node IP, from the API; it forwards nothing, so no query leaves.
func (c *Cluster) startCoreDNS(ctx context.Context) error {
	port, err := freeport.Ports(1)
	if err != nil {
		return err
	}
	corefile := fmt.Sprintf(`.:53 {
    bind %s
    errors
    ready 127.0.0.1:%d
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    cache 5
}
`, nodeIP, port[0], c.path("coredns.kubeconfig"))
	if err := os.WriteFile(c.path("Corefile"), []byte(corefile), 0o644); err != nil {
		return err
	}
	p, err := c.start("coredns", filepath.Join(c.Assets, "coredns"), "-conf", c.path("Corefile"))
	if err != nil {
		return err
	}
	return waitHTTP(ctx, p, fmt.Sprintf("http://127.0.0.1:%d/ready", port[0]), time.Minute)
}

// sandboxImage is the pod sandbox image (test/e2e/pause), named on a
// loopback registry so that a pull, were it ever missing, goes nowhere.
const sandboxImage = "localhost/events-e2e/pause:1"

func (c *Cluster) startContainerd(ctx context.Context) error {
	c.ContainerdSocket = c.path("containerd", "containerd.sock")
	config := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = %[3]q
[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  # Root here lacks CAP_SYS_RESOURCE: without this every sandbox fails
  # (runc: "can't get final child's PID from pipe: EOF").
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[6]q
`, c.path("containerd", "root"), c.path("containerd", "state"), c.ContainerdSocket, c.path("containerd", "opt"), sandboxImage, c.path("cni", "net.d"))
	if err := os.WriteFile(c.path("containerd", "config.toml"), []byte(config), 0o644); err != nil {
		return err
	}
	cni := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "e2e",
  "plugins": [{
    "type": "bridge",
    "bridge": %q,
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "dataDir": %q,
      "ranges": [[{"subnet": %q, "gateway": %q}]],
      "routes": [{"dst": "0.0.0.0/0"}]
    }
  }]
}
`, bridgeName, c.path("cni", "ipam"), podSubnet, nodeIP)
	if err := os.WriteFile(c.path("cni", "net.d", "10-e2e.conflist"), []byte(cni), 0o644); err != nil {
		return err
	}
	p, err := c.start("containerd", "containerd", "--config", c.path("containerd", "config.toml"))
	if err != nil {
		return err
	}
	return waitRunning(ctx, p, time.Minute, func(ctx context.Context) (bool, error) {
		return exec.CommandContext(ctx, "ctr", "--address", c.ContainerdSocket, "version").Run() == nil, nil
	})
}

// ImportImage loads an image archive (docker or OCI) into the CRI's image
// namespace.
func (c *Cluster) ImportImage(ctx context.Context, archive string) error {
	out, err := exec.CommandContext(ctx, "ctr", "--address", c.ContainerdSocket, "-n", "k8s.io", "images", "import", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import %s: %w: %s", archive, err, out)
	}
	return nil
}

// TagImage gives the image ref another name, as docker tag does; alias
// may be name@sha256:…, the name a pull by digest leaves.
func (c *Cluster) TagImage(ctx context.Context, ref, alias string) error {
	out, err := exec.CommandContext(ctx, "ctr", "--address", c.ContainerdSocket, "-n", "k8s.io", "images", "tag", "--force", ref, alias).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images tag %s %s: %w: %s", ref, alias, err, out)
	}
	return nil
}

// cgroupHierarchies are the cgroup hierarchies' mount points.
func cgroupHierarchies() ([]string, error) {
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		// unified too: the kubelet makes its cgroups in the v2
		// hierarchy of a hybrid machine as well.
		if e.IsDir() {
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", e.Name()))
		}
	}
	return dirs, nil
}

// makeCgroupRoot creates the kubelet's cgroup root in every hierarchy
// (cpuset needs its CPUs and memory nodes copied from the parent).
func (c *Cluster) makeCgroupRoot() error {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hierarchies {
		dir := filepath.Join(h, c.cgroupName)
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			return err
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// removeCgroupRoot removes the kubelet's cgroups, the deepest first.
func (c *Cluster) removeCgroupRoot() error {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hierarchies {
		root := filepath.Join(h, c.cgroupName)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil && !os.IsNotExist(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func (c *Cluster) startKubelet(ctx context.Context) error {
	if err := c.makeCgroupRoot(); err != nil {
		return fmt.Errorf("cgroup root: %w", err)
	}
	ports, err := freeport.Ports(2)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.path("kubelet", "resolv.conf"), []byte("nameserver "+nodeIP+"\n"), 0o644); err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine kind runs cgroup v1, which kubelet v1.37 refuses unless told.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /%s
containerRuntimeEndpoint: unix://%s
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
authorization:
  mode: Webhook
clusterDomain: cluster.local
clusterDNS: [%s]
resolvConf: %s
podLogsDir: %s
failSwapOn: false
rotateCertificates: false
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
nodeStatusUpdateFrequency: 5s
syncFrequency: 10s
`, c.cgroupName, c.ContainerdSocket, nodeIP, ports[0], ports[1], nodeIP, c.path("kubelet", "resolv.conf"), c.path("pod-logs"))
	if err := os.WriteFile(c.path("kubelet", "config.yaml"), []byte(config), 0o644); err != nil {
		return err
	}
	p, err := c.start("kubelet", filepath.Join(c.Assets, "kubelet"),
		"--config="+c.path("kubelet", "config.yaml"),
		"--kubeconfig="+c.path("kubelet.kubeconfig"),
		"--root-dir="+c.path("kubelet", "root"),
		"--hostname-override="+nodeName,
		"--node-ip="+nodeIP,
		"--v=1")
	if err != nil {
		return err
	}
	return waitRunning(ctx, p, 2*time.Minute, func(ctx context.Context) (bool, error) {
		node, err := c.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, nil
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
}

// Process returns the running component called name.
func (c *Cluster) Process(name string) *process {
	for i := len(c.procs) - 1; i >= 0; i-- {
		if c.procs[i].name == name {
			return c.procs[i]
		}
	}
	return nil
}

// Stop tears the cluster down: the workload's pods first (deleted through
// the API, so that the kubelet stops them and the CNI plugin releases
// their addresses and veths), then the kubelet, every container left
// (killed through containerd), containerd, the control plane; then every
// process left in the sandbox's PID namespace by pid, the mounts under
// Dir and privateDirs, the pods' network namespaces, the kubelet's
// cgroups, and Dir. It returns what it could not remove.
func (c *Cluster) Stop(ctx context.Context) error {
	var errs []error
	stopNamed := func(name string, grace time.Duration) {
		for _, p := range c.procs {
			if p.name == name {
				if err := p.stop(grace); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	// No controller makes new pods while the kubelet stops the old ones.
	stopNamed("kube-controller-manager", 20*time.Second)
	stopNamed("kube-scheduler", 20*time.Second)
	if c.Client != nil && c.Process("kubelet") != nil {
		if err := c.deleteAllPods(ctx); err != nil {
			errs = append(errs, fmt.Errorf("deleting pods: %w", err))
		}
	}
	stopNamed("kubelet", 20*time.Second)
	if c.ContainerdSocket != "" && c.Process("containerd") != nil {
		if err := c.killContainers(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	stopNamed("containerd", 20*time.Second)
	for _, name := range []string{"coredns", "kube-proxy", "kube-apiserver", "etcd"} {
		stopNamed(name, 20*time.Second)
	}
	if err := killLeftProcesses(); err != nil {
		errs = append(errs, err)
	}
	left, err := unmountAll(append([]string{c.Dir}, privateDirs...)...)
	if err != nil {
		errs = append(errs, err)
	}
	if len(left) > 0 {
		errs = append(errs, fmt.Errorf("still mounted: %s", strings.Join(left, " ")))
	}
	if links, err := podLinks(); err != nil || len(links) > 0 {
		errs = append(errs, fmt.Errorf("pod interfaces left: %v %v", links, err))
	}
	if err := c.removeCgroupRoot(); err != nil {
		errs = append(errs, fmt.Errorf("removing cgroups: %w", err))
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// deleteAllPods deletes every namespace's pods and waits (bounded) until
// the kubelet stopped them.
func (c *Cluster) deleteAllPods(ctx context.Context) error {
	pods, err := c.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	zero := int64(0)
	for _, p := range pods.Items {
		// Controllers would only make new ones: remove them with their pods.
		_ = c.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		out, err := exec.CommandContext(ctx, "ctr", "--address", c.ContainerdSocket, "-n", "k8s.io", "tasks", "ls", "-q").Output()
		if err != nil {
			return false, nil
		}
		return strings.TrimSpace(string(out)) == "", nil
	})
}

// killContainers kills and deletes every task and container containerd
// still holds.
func (c *Cluster) killContainers(ctx context.Context) error {
	ctr := func(args ...string) ([]byte, error) {
		return exec.CommandContext(ctx, "ctr", append([]string{"--address", c.ContainerdSocket, "-n", "k8s.io"}, args...)...).CombinedOutput()
	}
	out, err := ctr("tasks", "ls", "-q")
	if err != nil {
		return fmt.Errorf("ctr tasks ls: %w: %s", err, out)
	}
	for _, id := range strings.Fields(string(out)) {
		_, _ = ctr("tasks", "kill", "-s", "SIGKILL", id)
		_, _ = ctr("tasks", "delete", "-f", id)
	}
	out, _ = ctr("containers", "ls", "-q")
	for _, id := range strings.Fields(string(out)) {
		_, _ = ctr("containers", "delete", id)
	}
	return nil
}

// killLeftProcesses kills, by pid, every process in the sandbox's PID
// namespace but this one (containerd's shims and anything they left).
func killLeftProcesses() error {
	self := os.Getpid()
	var left []string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		left = left[:0]
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return false, err
		}
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self || pid == 1 {
				continue
			}
			if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(stat), ") Z ") {
				// A zombie this process must reap.
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
				continue
			}
			comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
			left = append(left, fmt.Sprintf("%d(%s)", pid, strings.TrimSpace(string(comm))))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("processes left: %s: %w", strings.Join(left, " "), err)
	}
	return nil
}

// podLinks lists the sandbox's veths (the pods' ends in this namespace).
func podLinks() ([]string, error) {
	out, err := exec.Command("ip", "-o", "link", "show", "type", "veth").Output()
	if err != nil {
		return nil, err
	}
	var links []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			links = append(links, l)
		}
	}
	return links, nil
}

// logf prints what a scenario saw, in -v and in the failure output.
func logf(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf(format, args...)
}
