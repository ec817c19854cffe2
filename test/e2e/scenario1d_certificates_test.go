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
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	certutil "k8s.io/client-go/util/cert"
)

// rotationLifetime is the shortened --self-managed-certificates-lifetime:
// certificates are renewed after two thirds of it (4m), which leaves the
// kubelet two minutes to hand a renewed etcd or VictoriaLogs certificate to
// its pods.
const rotationLifetime = 6 * time.Minute

// TestCertificateRotation: the default install's self-managed certificates
// with a shortened lifetime (--self-managed-certificates-lifetime) are
// renewed twice (once because the lifetime shrank, once when two thirds of
// it passed), each replica serves every renewed certificate without a
// restart, and a client looping through kube-apiserver's aggregator all the
// while sees no failed request. The lifetime is restored afterwards.
func TestCertificateRotation(t *testing.T) {
	ctx := context.Background()
	c := suite.cluster
	if _, err := c.Client.AppsV1().Deployments(serverNamespace).Get(ctx, "events-apiserver", metav1.GetOptions{}); err != nil {
		t.Fatalf("the default overlay is not installed (TestDefaultOverlay runs first): %v", err)
	}
	lifetimeArg := "--self-managed-certificates-lifetime=" + rotationLifetime.String()
	patch := fmt.Sprintf(`[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":%q}]`, lifetimeArg)
	mustKubectl(t, ctx, "-n", serverNamespace, "patch", "deployment/events-apiserver", "--type=json", "-p", patch)
	t.Cleanup(func() {
		restore := fmt.Sprintf(`[{"op":"test","path":"/spec/template/spec/containers/0/args/%[1]d","value":%[2]q},{"op":"remove","path":"/spec/template/spec/containers/0/args/%[1]d"}]`,
			lastArg(t, ctx), lifetimeArg)
		mustKubectl(t, ctx, "-n", serverNamespace, "patch", "deployment/events-apiserver", "--type=json", "-p", restore)
		mustKubectl(t, ctx, "-n", serverNamespace, "rollout", "status", "deployment/events-apiserver", "--timeout=5m")
	})
	mustKubectl(t, ctx, "-n", serverNamespace, "rollout", "status", "deployment/events-apiserver", "--timeout=5m")
	mustKubectl(t, ctx, "wait", "--for=condition=Available", "apiservice/v1beta1.events.k8s.io", "--timeout=3m")
	pods := serverPods(t, ctx)

	// The client: lists through kube-apiserver's aggregator, back to back.
	loopCtx, stop := context.WithCancel(ctx)
	var requests, failures atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for loopCtx.Err() == nil {
			_, err := c.Client.EventsV1beta1().Events(workloadNamespace).List(loopCtx, metav1.ListOptions{Limit: 50})
			if loopCtx.Err() != nil {
				return
			}
			requests.Add(1)
			if err != nil {
				failures.Add(1)
				logf(t, "rotation: a request through the aggregator failed: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	start := time.Now()
	seen := []*x509.Certificate{servingCertificate(t, ctx)}
	const renewals = 2
	for len(seen) <= renewals {
		var next *x509.Certificate
		if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, rotationLifetime, true, func(ctx context.Context) (bool, error) {
			next = servingCertificate(t, ctx)
			return !next.Equal(seen[len(seen)-1]), nil
		}); err != nil {
			stop()
			wg.Wait()
			t.Fatalf("the serving certificate was not renewed (%d renewals so far, lifetime %s): %v", len(seen)-1, rotationLifetime, err)
		}
		seen = append(seen, next)
		logf(t, "rotation: renewal %d after %s: serial %s, valid %s to %s", len(seen)-1, time.Since(start).Round(time.Second),
			next.SerialNumber, next.NotBefore.Format(time.TimeOnly), next.NotAfter.Format(time.TimeOnly))
		// Every replica serves it, without a restart.
		for _, pod := range pods {
			waitServed(t, ctx, pod, next)
		}
	}
	// A while with the last certificate, then stop the client.
	time.Sleep(5 * time.Second)
	stop()
	wg.Wait()

	for _, pod := range serverPods(t, ctx) {
		for _, status := range pod.Status.ContainerStatuses {
			if status.RestartCount != 0 {
				t.Errorf("pod %s restarted %d times during the rotations", pod.Name, status.RestartCount)
			}
		}
	}
	logf(t, "rotation: %d renewals in %s; %d requests through the aggregator, %d failed", renewals, time.Since(start).Round(time.Second), requests.Load(), failures.Load())
	if requests.Load() == 0 {
		t.Error("the client made no request")
	}
	if failures.Load() != 0 {
		t.Errorf("%d of %d requests through the aggregator failed during the rotations, want 0", failures.Load(), requests.Load())
	}
	if got := seen[len(seen)-1].NotAfter.Sub(seen[len(seen)-1].NotBefore); got > rotationLifetime+10*time.Minute {
		t.Errorf("the renewed certificate is valid for %s, want about %s", got, rotationLifetime)
	}
}

// lastArg is the index of the server container's last argument.
func lastArg(t *testing.T, ctx context.Context) int {
	t.Helper()
	dep, err := suite.cluster.Client.AppsV1().Deployments(serverNamespace).Get(ctx, "events-apiserver", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(dep.Spec.Template.Spec.Containers[0].Args) - 1
}

// serverPods are the server's running pods.
func serverPods(t *testing.T, ctx context.Context) []corev1.Pod {
	t.Helper()
	list, err := suite.cluster.Client.CoreV1().Pods(serverNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=events-apiserver,app.kubernetes.io/component=apiserver", FieldSelector: "status.phase=Running"})
	if err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	for _, pod := range list.Items {
		if pod.DeletionTimestamp == nil {
			pods = append(pods, pod)
		}
	}
	if len(pods) == 0 {
		t.Fatal("no running server pod")
	}
	return pods
}

// servingCertificate is the certificate in the Secret the server keeps.
func servingCertificate(t *testing.T, ctx context.Context) *x509.Certificate {
	t.Helper()
	secret, err := suite.cluster.Client.CoreV1().Secrets(serverNamespace).Get(ctx, "events-apiserver-serving-cert", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	certs, err := certutil.ParseCertsPEM(secret.Data[corev1.TLSCertKey])
	if err != nil {
		t.Fatal(err)
	}
	return certs[0]
}

// waitServed waits until pod serves want on its port 8443.
func waitServed(t *testing.T, ctx context.Context, pod corev1.Pod, want *x509.Certificate) {
	t.Helper()
	var got *x509.Certificate
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second},
			Config: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}} //nolint:gosec // compared with the Secret's certificate below
		conn, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort(pod.Status.PodIP, "8443"))
		if err != nil {
			return false, nil
		}
		defer conn.Close()
		got = conn.(*tls.Conn).ConnectionState().PeerCertificates[0]
		return got.Equal(want), nil
	}); err != nil {
		t.Fatalf("pod %s does not serve the renewed certificate %s (serves %v): %v", pod.Name, want.SerialNumber, serial(got), err)
	}
}

func serial(c *x509.Certificate) any {
	if c == nil {
		return nil
	}
	return c.SerialNumber
}
