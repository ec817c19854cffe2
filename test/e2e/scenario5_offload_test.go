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
	"crypto"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/kube-events/events-apiserver/pkg/embedded/pki"
)

// offloadEtcdName is the name kube-apiserver dials for the events etcd
// (overlays/offload's default), resolved to the node in the sandbox's
// /etc/hosts.
const offloadEtcdName = "events-etcd.cluster.example"

// offload is what TestOffloadOverlay leaves the scenarios after it.
var offload struct {
	// apiServerFlags are kube-apiserver's flags of offload mode.
	apiServerFlags []string
	// install is the directory hack/gen-offload-etcd-cert.sh wrote the
	// install's kustomization to.
	install string
	// etcd are kube-apiserver's credentials for the events etcd.
	etcd transport.TLSInfo
}

// eventsEtcd is a client of the events etcd, through its NodePort, with
// kube-apiserver's credentials.
func eventsEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	if offload.install == "" {
		t.Fatal("the events etcd of offload mode is not installed: run TestOffloadOverlay first")
	}
	tlsConfig, err := offload.etcd.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{fmt.Sprintf("https://%s:32379", offloadEtcdName)},
		TLS:         tlsConfig,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = etcd.Close() })
	return etcd
}

// TestOffloadOverlay (the chart left the namespace empty):
// overlays/offload installed with hack/gen-offload-etcd-cert.sh (the
// cluster's etcd CA signs the members' certificate for clients, server auth
// only; the server makes the rest, and no Secret holds that CA's key),
// kube-apiserver restarted
// with --etcd-servers-overrides=/events#https://<the events etcd>: the
// events of a new workload never reach the main etcd, and our server serves
// them, with kube-apiserver's own v1 reading the same keys.
func TestOffloadOverlay(t *testing.T) {
	ctx := context.Background()
	c := suite.cluster
	// The previous install (the chart's) is gone with its namespace.
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().Namespaces().Get(ctx, serverNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("namespace %s still there: %v", serverNamespace, err)
	}

	// The cluster's etcd CA, and kube-apiserver's client certificate of it
	// (kube-apiserver uses one client certificate for all its etcd servers).
	now := time.Now()
	pkiDir := c.path("pki")
	etcdCA, err := pki.EnsureCA(pkiDir, "etcd-ca", "etcd-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	client, err := etcdCA.EnsureCert(pkiDir, "apiserver-etcd-client", pki.Spec{
		CommonName: "kube-apiserver-etcd-client",
		Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	// The name resolves, for kube-apiserver on the node, to the node: the
	// overlay's NodePort.
	hosts := c.path("hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"+nodeIP+" "+offloadEtcdName+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// It stays mounted for the scenarios after this one (kube-apiserver
	// resolves the name again at each restart); the sandbox's mount
	// namespace ends with the suite.
	if err := syscall.Mount(hosts, "/etc/hosts", "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind-mounting the sandbox's /etc/hosts: %v", err)
	}

	dir := c.path("my-offload-install")
	gen := exec.CommandContext(ctx, filepath.Join(suite.root, "hack", "gen-offload-etcd-cert.sh"), dir, filepath.Join(suite.root, "artifacts", "overlays", "offload"))
	gen.Dir = suite.root
	gen.Env = append(os.Environ(), "ETCD_CA_CERT="+etcdCA.CertFile, "ETCD_CA_KEY="+etcdCA.KeyFile, "OFFLOAD_ETCD_NAME="+offloadEtcdName)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("hack/gen-offload-etcd-cert.sh: %v: %s", err, out)
	}
	etcdVolumes(t, ctx, "offload-etcd")
	start := time.Now()
	mustKubectl(t, ctx, "apply", "-k", dir)
	mustKubectl(t, ctx, "-n", serverNamespace, "rollout", "status", "statefulset/events-etcd", "--timeout=6m")
	logf(t, "offload: events etcd Ready after %s", time.Since(start).Round(time.Second))

	restart := time.Now()
	flags := []string{
		fmt.Sprintf("--etcd-servers-overrides=/events#https://%s:32379", offloadEtcdName),
		"--etcd-cafile=" + etcdCA.CertFile, "--etcd-certfile=" + client.CertFile, "--etcd-keyfile=" + client.KeyFile,
	}
	if err := c.RestartAPIServer(ctx, flags...); err != nil {
		t.Fatalf("restarting kube-apiserver with the override: %v\n%s", err, c.Tail("kube-apiserver", 30))
	}
	logf(t, "offload: kube-apiserver ready with the override after %s", time.Since(restart).Round(time.Millisecond))
	offload.apiServerFlags = flags
	offload.install = dir
	offload.etcd = transport.TLSInfo{CertFile: client.CertFile, KeyFile: client.KeyFile, TrustedCAFile: etcdCA.CertFile}
	mustKubectl(t, ctx, "-n", serverNamespace, "rollout", "status", "deployment/events-apiserver", "--timeout=5m")
	mustKubectl(t, ctx, "wait", "--for=condition=Available", "apiservice/v1beta1.events.k8s.io", "--timeout=3m")
	logf(t, "offload: APIService Available after %s", time.Since(start).Round(time.Second))
	expectOffloadSecrets(t, ctx, etcdCA)

	const ns = "e2e-offload"
	ensureNamespace(t, ctx, ns)
	applyYAML(t, ctx, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: v1
kind: Pod
metadata:
  name: crashloop
  namespace: %[1]s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: crash
    image: %[2]s
    imagePullPolicy: IfNotPresent
    args: [--no-such-flag]
`, ns, serverImage))
	events := waitNamespaceReasons(t, ctx, ns, "crashloop", []string{"Scheduled", "Pulled", "Created", "Started", "BackOff"}, 4*time.Minute)
	logf(t, "offload crashloop: reasons %v; %s", reasons(events), summary(events))

	// kube-apiserver's own events.k8s.io/v1 reads the same keys.
	v1, err := c.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v1.Items) < len(events) {
		t.Errorf("kube-apiserver's v1 lists %d events in %s, our server %d", len(v1.Items), ns, len(events))
	}

	// The main etcd holds none of them.
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{c.EtcdEndpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	resp, err := etcd.Get(ctx, "/registry/events/"+ns+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	logf(t, "offload: main etcd holds %d event keys of %s; kube-apiserver's v1 lists %d, our server %d", resp.Count, ns, len(v1.Items), len(events))
	if resp.Count != 0 {
		t.Errorf("the main etcd holds %d event keys of %s; want none (offloaded)", resp.Count, ns)
	}

	t.Run("Events conformance", eventsConformance("offload"))
}

// expectOffloadSecrets: no Secret of the install holds the cluster etcd
// CA's key, and no certificate of the install carries client auth unless
// it is a client certificate; the one the cluster's CA signed (the members'
// for clients) is server auth only, as openssl reads it.
func expectOffloadSecrets(t *testing.T, ctx context.Context, etcdCA *pki.CA) {
	t.Helper()
	caCerts, err := certutil.CertsFromFile(etcdCA.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	caPublic, ok := caCerts[0].PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok {
		t.Fatalf("the CA's public key %T cannot be compared", caCerts[0].PublicKey)
	}
	secrets, err := suite.cluster.Client.CoreV1().Secrets(serverNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Client certificates by design: the server's, and the peers' (a member
	// dials its peers with it), which the install's own CA signs.
	clients := map[string]bool{"events-apiserver-etcd-client": true, "events-etcd-peer": true}
	dir := t.TempDir()
	var names []string
	for _, s := range secrets.Items {
		names = append(names, s.Name)
		for key, value := range s.Data {
			if private, err := keyutil.ParsePrivateKeyPEM(value); err == nil {
				if signer, ok := private.(crypto.Signer); ok && caPublic.Equal(signer.Public()) {
					t.Errorf("Secret %s holds the cluster etcd CA's key under %s", s.Name, key)
				}
			}
		}
		crt := s.Data["tls.crt"]
		if len(crt) == 0 {
			continue
		}
		f := filepath.Join(dir, s.Name+".crt")
		if err := os.WriteFile(f, crt, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(ctx, "openssl", "x509", "-in", f, "-noout", "-text").CombinedOutput()
		if err != nil {
			t.Fatalf("openssl x509 -text of Secret %s: %v: %s", s.Name, err, out)
		}
		text := string(out)
		clientAuth := strings.Contains(text, "TLS Web Client Authentication")
		issuedByCluster := exec.CommandContext(ctx, "openssl", "verify", "-CAfile", etcdCA.CertFile, f).Run() == nil
		logf(t, "offload: Secret %s: client auth %v, signed by the cluster's etcd CA %v", s.Name, clientAuth, issuedByCluster)
		if clientAuth && !clients[s.Name] {
			t.Errorf("Secret %s's certificate carries client auth:\n%s", s.Name, text)
		}
		if issuedByCluster && clientAuth {
			t.Errorf("Secret %s's certificate, signed by the cluster's etcd CA, carries client auth: a credential of the main etcd", s.Name)
		}
		if issuedByCluster != (s.Name == "events-etcd-member") {
			t.Errorf("Secret %s: signed by the cluster's etcd CA %v; want only events-etcd-member", s.Name, issuedByCluster)
		}
	}
	logf(t, "offload: Secrets of %s: %s", serverNamespace, strings.Join(names, " "))
}
