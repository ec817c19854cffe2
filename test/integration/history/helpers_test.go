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

// Package history runs the real events-apiserver with its archive (the
// embedded VictoriaLogs engine, and a victoria-logs service when
// VICTORIALOGS_ASSETS names one) and checks the history through the API
// users have: events expired from the live store are found with
// history.since, every field selector of every version and content type
// answers from the archive as from the live store, pages cross the
// live/archive boundary without gaps or duplicates, and bad requests get
// clear 400s.
//
// Run with the envtest assets of hack/envtest-assets.sh:
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test ./test/integration/history/
package history

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-events/events-apiserver/pkg/embedded/pki"
	"github.com/kube-events/events-apiserver/test/freeport"
	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// engines are the archives the tests run on: the embedded engine, a
// single-node service over plain http and a cluster of two storage nodes
// behind one node that inserts and selects, secured as the manifests
// secure it (TLS and basic authentication on every hop), both run from the
// victoria-logs in VICTORIALOGS_ASSETS (hack/victorialogs-assets.sh).
var engines = []string{"embedded", "service", "cluster"}

// archiveArgs are the server flags of engine; a service is started for
// the test.
func archiveArgs(t *testing.T, engine string) []string {
	t.Helper()
	switch engine {
	case "embedded":
		return []string{"--archive=embedded"}
	case "service":
		url := startVictoriaLogs(t, "-storageDataPath="+t.TempDir(), "-retentionPeriod=30d", "-inmemoryDataFlushInterval=1s")
		return []string{"--archive=url", "--archive-url=" + url, "--archive-service-flush-interval=1s"}
	default:
		sec := newArchiveSecurity(t)
		var nodes []string
		for range 2 {
			url := startSecuredVictoriaLogs(t, sec, "-storageDataPath="+t.TempDir(), "-retentionPeriod=30d", "-inmemoryDataFlushInterval=1s")
			nodes = append(nodes, strings.TrimPrefix(url, "https://"))
		}
		url := startSecuredVictoriaLogs(t, sec, "-storageNode="+strings.Join(nodes, ","),
			"-storageNode.tls", "-storageNode.tlsCAFile="+sec.caFile,
			"-storageNode.username="+archiveUser, "-storageNode.passwordFile="+sec.passwordFile)
		return []string{"--archive=url", "--archive-url=" + url, "--archive-service-flush-interval=1s",
			"--archive-ca-file=" + sec.caFile, "--archive-username=" + archiveUser, "--archive-password-file=" + sec.passwordFile}
	}
}

// archiveUser is the basic authentication user, as in the manifests.
const archiveUser = "events-apiserver"

// archiveSecurity is a CA, a serving certificate it signed for 127.0.0.1,
// and a password, in files.
type archiveSecurity struct {
	roots                     *x509.CertPool
	caFile, certFile, keyFile string
	passwordFile              string
}

func newArchiveSecurity(t *testing.T) archiveSecurity {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	ca, err := pki.EnsureCA(dir, "ca", "archive-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.EnsureCert(dir, "tls", pki.Spec{
		CommonName: "events-victorialogs", IPs: []net.IP{net.IPv4(127, 0, 0, 1)},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	sec := archiveSecurity{roots: x509.NewCertPool(), caFile: ca.CertFile, certFile: serving.CertFile, keyFile: serving.KeyFile,
		passwordFile: filepath.Join(dir, "password")}
	sec.roots.AddCert(ca.Cert)
	if err := os.WriteFile(sec.passwordFile, []byte(rand.Text()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return sec
}

// startSecuredVictoriaLogs runs victoria-logs with args, serving https
// with sec's certificate and asking for sec's password, and returns its
// URL once it is healthy.
func startSecuredVictoriaLogs(t *testing.T, sec archiveSecurity, args ...string) string {
	t.Helper()
	url, _ := runVictoriaLogsWithRoots(t, sec.roots, append([]string{
		"-tls", "-tlsCertFile=" + sec.certFile, "-tlsKeyFile=" + sec.keyFile,
		"-httpAuth.username=" + archiveUser, "-httpAuth.password=file://" + sec.passwordFile,
	}, args...)...)
	return url
}

// startVictoriaLogs runs victoria-logs with args until the test ends and
// returns its URL once it is healthy.
func startVictoriaLogs(t *testing.T, args ...string) string {
	t.Helper()
	url, _ := runVictoriaLogs(t, args...)
	return url
}

// runVictoriaLogs is startVictoriaLogs that also returns a function that
// kills the process (SIGKILL) before the test ends.
func runVictoriaLogs(t *testing.T, args ...string) (string, func()) {
	t.Helper()
	return runVictoriaLogsWithRoots(t, nil, args...)
}

// runVictoriaLogsWithRoots is runVictoriaLogs for a node that serves https
// (args hold -tls) with a certificate roots verify, when roots is set.
func runVictoriaLogsWithRoots(t *testing.T, roots *x509.CertPool, args ...string) (string, func()) {
	t.Helper()
	dir := os.Getenv("VICTORIALOGS_ASSETS")
	if dir == "" {
		t.Fatal("VICTORIALOGS_ASSETS is not set: export VICTORIALOGS_ASSETS=$(hack/victorialogs-assets.sh), or run make test-integration")
	}
	// On a free port, unless args name one (a restart on the same address).
	addr := ""
	for _, arg := range args {
		if a, ok := strings.CutPrefix(arg, "-httpListenAddr="); ok {
			addr = a
		}
	}
	if addr == "" {
		addr = fmt.Sprintf("127.0.0.1:%d", freeport.Port(t))
		args = append([]string{"-httpListenAddr=" + addr}, args...)
	}
	logPath := filepath.Join(t.TempDir(), "victoria-logs.log")
	out, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "victoria-logs"), append([]string{"-loggerLevel=WARN"}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = out.Close()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("victoria-logs %v:\n%s", args, data)
		}
	})
	url, client := "http://"+addr, http.DefaultClient
	if roots != nil {
		// /health asks for no credentials.
		url = "https://" + addr
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
		defer client.CloseIdleConnections()
	}
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := client.Get(url + "/health")
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("victoria-logs on %s not healthy: %v", addr, err)
	}
	return url, func() { _ = cmd.Process.Kill() }
}

// historyServer starts a server with engine's archive on an etcd of its
// own, its events living ttl.
func historyServer(t *testing.T, engine string, ttl time.Duration, args ...string) (*framework.Server, *framework.Etcd) {
	t.Helper()
	archive := archiveArgs(t, engine)
	etcd := framework.StartEtcd(t)
	s := framework.StartServer(t, framework.WithEtcd(etcd), framework.WithEventTTL(ttl),
		framework.WithServerArgs(append(archive, args...)...))
	return s, etcd
}

// contentTypes are the encodings every check runs in.
var contentTypes = []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf}

// clientset returns a clientset speaking contentType.
func clientset(t testing.TB, base *rest.Config, contentType string) *kubernetes.Clientset {
	t.Helper()
	config := rest.CopyConfig(base)
	config.ContentType = contentType
	config.AcceptContentTypes = contentType
	c, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// namespaceFor is a namespace of the test's own.
func namespaceFor(t testing.TB) string {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", " ", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	return strings.Trim(name, "-")
}

// base is when the fixtures' events were observed: a minute ago, so that
// they are inside every window the tests ask for.
var base = time.Now().Add(-time.Minute).Truncate(time.Second)

// fixture is one event of the fixtures, about a pod or a node.
type fixture struct {
	name, kind, object, reason, eventType, action, controller, instance, related, fieldPath string
	legacy                                                                                  bool
}

// fixtures are events whose fields differ along every selectable field,
// written through events.k8s.io/v1 and (legacy) core/v1.
var fixtures = []fixture{
	{name: "e0", kind: "Pod", object: "web-0", reason: "BackOff", eventType: "Warning", action: "Restarting", controller: "kubelet", instance: "node-1", related: "node-1", fieldPath: "spec.containers{app}"},
	{name: "e1", kind: "Pod", object: "web-0", reason: "Pulling", eventType: "Normal", action: "Pulling", controller: "kubelet", instance: "node-1", fieldPath: "spec.containers{app}"},
	{name: "e2", kind: "Pod", object: "web-1", reason: "BackOff", eventType: "Warning", action: "Restarting", controller: "kubelet", instance: "node-2", related: "node-2"},
	{name: "e3", kind: "Pod", object: "web-1", reason: "Scheduled", eventType: "Normal", action: "Binding", controller: "default-scheduler", instance: "scheduler-1", related: "node-2"},
	{name: "e4", kind: "Node", object: "node-1", reason: "NodeReady", eventType: "Normal", action: "Ready", controller: "kubelet", instance: "node-1"},
	{name: "e5", kind: "Node", object: "node-2", reason: "NodeNotReady", eventType: "Warning", action: "NotReady", controller: "node-controller", instance: "kcm-1"},
	{name: "l0", kind: "Pod", object: "web-0", reason: "BackOff", eventType: "Warning", controller: "kubelet", instance: "node-1", fieldPath: "spec.containers{app}", legacy: true},
	{name: "l1", kind: "Pod", object: "web-2", reason: "Killing", eventType: "Normal", controller: "kubelet", instance: "node-3", legacy: true},
}

// create writes the fixtures into namespace, each observed at base plus
// its index in seconds (plus offset), and returns the resourceVersion of
// the last.
func create(ctx context.Context, t testing.TB, c kubernetes.Interface, namespace string, events []fixture, offset time.Duration) int64 {
	t.Helper()
	var last int64
	for i, f := range events {
		at := base.Add(offset + time.Duration(i)*time.Second)
		// The nodes too: the validation of events about cluster-scoped
		// objects outside default and kube-system wants it.
		regarding := corev1.ObjectReference{Kind: f.kind, Namespace: namespace, Name: f.object, APIVersion: "v1",
			FieldPath: f.fieldPath, UID: types.UID("uid-" + f.object)}
		if f.legacy {
			e := &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Name: f.name, Namespace: namespace},
				InvolvedObject: regarding, Reason: f.reason, Type: f.eventType, Message: "legacy " + f.name,
				Source:         corev1.EventSource{Component: f.controller, Host: f.instance},
				FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at), Count: 1,
			}
			created, err := c.CoreV1().Events(namespace).Create(ctx, e, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating %s: %v", f.name, err)
			}
			last = max(last, revision(t, created.ResourceVersion))
			continue
		}
		e := &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: f.name, Namespace: namespace},
			EventTime:  metav1.NewMicroTime(at), Regarding: regarding, Reason: f.reason, Type: f.eventType,
			Action: f.action, ReportingController: f.controller, ReportingInstance: f.instance, Note: "note " + f.name,
		}
		if f.related != "" {
			e.Related = &corev1.ObjectReference{Kind: "Node", Name: f.related, APIVersion: "v1", UID: types.UID("uid-" + f.related)}
		}
		created, err := c.EventsV1().Events(namespace).Create(ctx, e, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating %s: %v", f.name, err)
		}
		last = max(last, revision(t, created.ResourceVersion))
	}
	return last
}

func revision(t testing.TB, resourceVersion string) int64 {
	t.Helper()
	rv, err := strconv.ParseInt(resourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

// waitExpired waits until namespace has no live event left.
func waitExpired(ctx context.Context, t testing.TB, c kubernetes.Interface, namespace string, within time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		list, err := c.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(list.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("events of %s not expired within %v: %v", namespace, within, err)
	}
}

// waitHistory waits until a history list of namespace holds n events.
func waitHistory(ctx context.Context, t testing.TB, c kubernetes.Interface, namespace string, n int, within time.Duration) {
	t.Helper()
	var got int
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		list, err := c.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "history.since=1h", Limit: 500})
		if err != nil {
			return false, err
		}
		got = len(list.Items)
		return got == n, nil
	})
	if err != nil {
		t.Fatalf("history of %s holds %d events, want %d within %v: %v", namespace, got, n, within, err)
	}
}

// names are the names of items, in their order.
func names[E any](items []E, name func(*E) string) []string {
	out := make([]string, len(items))
	for i := range items {
		out[i] = name(&items[i])
	}
	return out
}

// sortedBy sorts a copy of items by name.
func sortedBy[E any](items []E, name func(*E) string) []E {
	out := append([]E(nil), items...)
	sort.Slice(out, func(i, j int) bool { return name(&out[i]) < name(&out[j]) })
	return out
}

func withHistory(selector, since string) string {
	term := "history.since=" + since
	if selector == "" {
		return term
	}
	return fmt.Sprintf("%s,%s", selector, term)
}

func waitPoll(ctx context.Context, within time.Duration, cond func() bool) error {
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, within, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
}

// startReplicas starts two replicas of the server binary, "a" and "b", as
// processes of their own on one etcd and the archive service at url, with
// events living ttl and an election lease of lease; each is killed (and
// resumed first, if paused) when the test ends, and its log's tail
// printed if it failed. It returns their names, the processes and a
// protobuf client of each. extra is added to each one's flags.
func startReplicas(ctx context.Context, t *testing.T, binary string, etcdEndpoints []string, url string, ttl, lease time.Duration, extra ...string) ([]string, []*harness.Server, []kubernetes.Interface) {
	t.Helper()
	names := []string{"a", "b"}
	replicas := make([]*harness.Server, len(names))
	clients := make([]kubernetes.Interface, len(names))
	for i, name := range names {
		args := append([]string{"--etcd-servers=" + strings.Join(etcdEndpoints, ","),
			"--archive=url", "--archive-url=" + url, "--archive-service-flush-interval=1s",
			"--event-ttl=" + ttl.String(),
			"--leader-elect-identity=" + name, "--leader-elect-lease-duration=" + lease.String()}, extra...)
		p, err := harness.StartServer(ctx, binary, filepath.Join(t.TempDir(), name), args...)
		if err != nil {
			t.Fatalf("starting replica %s: %v", name, err)
		}
		t.Cleanup(func() {
			_ = p.Resume()
			_ = p.Kill()
			if t.Failed() {
				t.Logf("replica %s:\n%s", name, p.Tail())
			}
		})
		replicas[i], clients[i] = p, clientset(t, p.RestConfig, runtime.ContentTypeProtobuf)
	}
	return names, replicas, clients
}
