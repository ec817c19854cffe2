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
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-events/events-apiserver/test/freeport"
)

// started runs the server in-process until the test ends and returns the
// path of its admin kubeconfig once it is ready: a standalone server writes
// it then. dataDir is absolute. The options are Run's from then on.
func started(t *testing.T, dataDir string, port int) (string, context.CancelFunc, <-chan error) {
	t.Helper()
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	o := parse(t, "--data-dir="+dataDir, "--secure-port="+strconv.Itoa(port), "--embedded-etcd-log-level=error")
	kubeconfig := o.KubeconfigPath()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("Run returned before ready: %v", err)
		default:
		}
		_, err := os.Stat(kubeconfig)
		return err == nil, nil
	})
	if err != nil {
		cancel()
		t.Fatalf("server not ready: %v", err)
	}
	return kubeconfig, cancel, done
}

// adminClient reads the kubeconfig the server wrote and returns its server
// URL and an HTTP client with its credentials.
func adminClient(t *testing.T, path string) (string, *http.Client, *http.Client) {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	current := kc.Contexts[kc.CurrentContext]
	if current == nil || kc.Clusters[current.Cluster] == nil || kc.AuthInfos[current.AuthInfo] == nil {
		t.Fatalf("kubeconfig %s has no complete current context", path)
	}
	cluster, user := kc.Clusters[current.Cluster], kc.AuthInfos[current.AuthInfo]
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cluster.CertificateAuthorityData) {
		t.Fatal("no CA in kubeconfig")
	}
	pair, err := tls.X509KeyPair(user.ClientCertificateData, user.ClientKeyData)
	if err != nil {
		t.Fatal(err)
	}
	admin := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}}}
	anonymous := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return cluster.Server, admin, anonymous
}

func do(t *testing.T, c *http.Client, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

func stop(t *testing.T, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("server did not stop")
	}
}

func TestRunStandaloneWithEmbeddedEtcdKeepsDataAcrossRestarts(t *testing.T) {
	dataDir := t.TempDir()
	port := freeport.Port(t)
	kubeconfig, cancel, done := started(t, dataDir, port)

	server, admin, anonymous := adminClient(t, kubeconfig)
	if want := fmt.Sprintf("https://127.0.0.1:%d", port); server != want {
		t.Errorf("kubeconfig server %s, want %s", server, want)
	}
	event := `{"apiVersion":"v1","kind":"Event","metadata":{"name":"e1","namespace":"default"},
		"involvedObject":{"kind":"Pod","name":"p","namespace":"default"},"reason":"R","message":"m","type":"Normal","source":{"component":"c"}}`
	if code, body := do(t, admin, http.MethodPost, server+"/api/v1/namespaces/default/events", event); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	if code, body := do(t, admin, http.MethodGet, server+"/apis/events.k8s.io/v1/namespaces/default/events/e1", ""); code != http.StatusOK || !strings.Contains(body, `"note":"m"`) {
		t.Fatalf("read through events.k8s.io/v1: %d %s", code, body)
	}
	if code, _ := do(t, anonymous, http.MethodGet, server+"/readyz", ""); code != http.StatusOK {
		t.Errorf("anonymous /readyz: %d, want 200", code)
	}
	if code, _ := do(t, anonymous, http.MethodGet, server+"/api/v1/events", ""); code != http.StatusUnauthorized {
		t.Errorf("anonymous list: %d, want 401", code)
	}
	caBefore, err := os.ReadFile(filepath.Join(dataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}

	stop(t, cancel, done)
	if _, err := os.Stat(kubeconfig); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("kubeconfig still there after shutdown: %v", err)
	}

	kubeconfig, cancel, done = started(t, dataDir, port)
	defer stop(t, cancel, done)
	caAfter, err := os.ReadFile(filepath.Join(dataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(caBefore) != string(caAfter) {
		t.Error("restart generated a new CA")
	}
	server, admin, _ = adminClient(t, kubeconfig)
	if code, body := do(t, admin, http.MethodGet, server+"/api/v1/namespaces/default/events/e1", ""); code != http.StatusOK {
		t.Fatalf("event lost across restart: %d %s", code, body)
	}
}
