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

// Package certificates tests pkg/selfcert against envtest's kube-apiserver:
// the Secrets and the APIService's caBundle it writes, replicas starting
// together, renewals under a fake clock, and a TLS server that follows the
// renewals without a failed handshake.
package certificates

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kube-events/events-apiserver/pkg/selfcert"
)

var adminConfig *rest.Config

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		fmt.Fprintln(os.Stderr, `KUBEBUILDER_ASSETS is not set: run with KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)"`)
		return 1
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	var err error
	if adminConfig, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting kube-apiserver:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	adminConfig.QPS, adminConfig.Burst = -1, -1
	return m.Run()
}

const (
	lifetime   = 90 * 24 * time.Hour
	caLifetime = 10 * 365 * 24 * time.Hour
)

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// install is the shape of the server's own: a serving CA with one server
// certificate and an APIService, an etcd CA with a server-only member
// certificate, a peer certificate, a client-only certificate and a trust
// bundle that adds another Secret's CA.
func install(apiService string) []selfcert.AuthoritySpec {
	server := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	return []selfcert.AuthoritySpec{{
		Secret: "serving-ca", CommonName: "serving-ca",
		Certificates: []selfcert.CertificateSpec{{Secret: "serving", CommonName: "svc", DNSNames: []string{"svc.ns.svc", "localhost"},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1).To4()}, Usages: server}},
		APIServices: []string{apiService},
	}, {
		Secret: "etcd-ca", CommonName: "etcd-ca",
		Certificates: []selfcert.CertificateSpec{
			{Secret: "member", CommonName: "member", DNSNames: []string{"*.peer.ns.svc"}, Usages: server},
			{Secret: "peer", CommonName: "peer", DNSNames: []string{"*.peer.ns.svc"}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
			{Secret: "client", CommonName: "client", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		},
		Trust: []selfcert.TrustSpec{{Secret: "client-ca", Include: []string{"kube-ca"}}},
	}}
}

type fixture struct {
	ctx        context.Context
	client     kubernetes.Interface
	dyn        dynamic.Interface
	namespace  string
	apiService string
	clock      *clocktesting.FakeClock
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(adminConfig)
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "certs-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{ctx: ctx, client: client, dyn: dynamic.NewForConfigOrDie(adminConfig), namespace: ns.Name,
		apiService: "v1." + ns.Name + ".example.com", clock: clocktesting.NewFakeClock(time.Now())}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": f.apiService},
		"spec": map[string]any{"group": ns.Name + ".example.com", "version": "v1", "groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			"service": map[string]any{"name": "svc", "namespace": ns.Name, "port": int64(443)}},
	}}
	if _, err := f.dyn.Resource(apiServices).Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.dyn.Resource(apiServices).Delete(context.Background(), f.apiService, metav1.DeleteOptions{})
		_ = client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return f
}

func (f *fixture) issuer(t *testing.T) *selfcert.Issuer {
	t.Helper()
	i, err := selfcert.New(selfcert.Config{Client: f.client, Dynamic: f.dyn, Namespace: f.namespace, Authorities: install(f.apiService),
		Lifetime: lifetime, AuthorityLifetime: caLifetime, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func (f *fixture) secret(t *testing.T, name string) *corev1.Secret {
	t.Helper()
	s, err := f.client.CoreV1().Secrets(f.namespace).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func leaf(t *testing.T, s *corev1.Secret) *x509.Certificate {
	t.Helper()
	certs, err := certutil.ParseCertsPEM(s.Data[corev1.TLSCertKey])
	if err != nil {
		t.Fatalf("secret %s: %v", s.Name, err)
	}
	return certs[0]
}

func bundle(t *testing.T, pemBytes []byte) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatal("no certificate in the bundle")
	}
	return pool
}

// TestEnsureMakesTheInstallsCertificates: one pass makes every Secret, each
// certificate with only its usages and chaining to its CA's bundle, the
// trust bundle with the included CA, and sets the APIService's caBundle.
func TestEnsureMakesTheInstallsCertificates(t *testing.T) {
	f := newFixture(t)
	kubeCA := []byte("-----BEGIN CERTIFICATE-----\nkube\n-----END CERTIFICATE-----\n")
	if _, err := f.client.CoreV1().Secrets(f.namespace).Create(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kube-ca"},
		Data: map[string][]byte{selfcert.CAKey: kubeCA}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.issuer(t).Ensure(f.ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		secret, ca string
		usages     []x509.ExtKeyUsage
		dnsName    string
	}{
		{"serving", "serving-ca", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, "svc.ns.svc"},
		{"member", "etcd-ca", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, "events-etcd-0.peer.ns.svc"},
		{"peer", "etcd-ca", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, "events-etcd-1.peer.ns.svc"},
		{"client", "etcd-ca", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, ""},
	} {
		t.Run(tc.secret, func(t *testing.T) {
			s := f.secret(t, tc.secret)
			if s.Type != corev1.SecretTypeTLS {
				t.Errorf("type %q, want %q", s.Type, corev1.SecretTypeTLS)
			}
			ca := f.secret(t, tc.ca)
			if !bytes.Equal(s.Data[selfcert.CAKey], ca.Data[selfcert.CAKey]) {
				t.Errorf("ca.crt is not the bundle of %s", tc.ca)
			}
			cert := leaf(t, s)
			if diff := cmp.Diff(tc.usages, cert.ExtKeyUsage); diff != "" {
				t.Errorf("extended key usages (-want +got):\n%s", diff)
			}
			if cert.IsCA {
				t.Error("a leaf certificate is a CA")
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: bundle(t, s.Data[selfcert.CAKey]), DNSName: tc.dnsName, KeyUsages: tc.usages}); err != nil {
				t.Errorf("does not verify against its bundle: %v", err)
			}
			if _, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); err != nil {
				t.Errorf("certificate and key: %v", err)
			}
		})
	}
	t.Run("trust bundle", func(t *testing.T) {
		got := f.secret(t, "client-ca").Data[selfcert.CAKey]
		want := append(append([]byte{}, f.secret(t, "etcd-ca").Data[selfcert.CAKey]...), kubeCA...)
		if !bytes.Equal(got, want) {
			t.Errorf("client-ca's ca.crt:\n%s\nwant the etcd CA's bundle and the included CA:\n%s", got, want)
		}
	})
	t.Run("caBundle", func(t *testing.T) {
		obj, err := f.dyn.Resource(apiServices).Get(f.ctx, f.apiService, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, _, _ := unstructured.NestedString(obj.Object, "spec", "caBundle")
		if want := base64.StdEncoding.EncodeToString(f.secret(t, "serving-ca").Data[selfcert.CAKey]); got != want {
			t.Errorf("caBundle %q, want the serving CA's bundle %q", got, want)
		}
	})
}

// TestReplicasStartingTogetherAgreeOnOneCA: replicas that make the
// certificates at once end with one CA and certificates it signed: each
// write is a create or an update at the version read.
func TestReplicasStartingTogetherAgreeOnOneCA(t *testing.T) {
	f := newFixture(t)
	const replicas = 4
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for r := range replicas {
		issuer := f.issuer(t)
		wg.Go(func() { errs[r] = issuer.Ensure(f.ctx) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", r, err)
		}
	}
	// A pass after the race finds everything usable and writes nothing.
	before := f.secret(t, "serving").ResourceVersion
	if err := f.issuer(t).Ensure(f.ctx); err != nil {
		t.Fatal(err)
	}
	serving := f.secret(t, "serving")
	if serving.ResourceVersion != before {
		t.Errorf("a pass over usable certificates rewrote the serving Secret (resourceVersion %s, was %s)", serving.ResourceVersion, before)
	}
	if _, err := leaf(t, serving).Verify(x509.VerifyOptions{Roots: bundle(t, f.secret(t, "serving-ca").Data[corev1.TLSCertKey])}); err != nil {
		t.Errorf("the serving certificate is not signed by the CA in the Secret: %v", err)
	}
}

// TestRenewals: the controller renews a certificate after two thirds of its
// lifetime, and Ensure does not; a renewed CA joins the bundle next to the
// old one, which keeps the certificates it signed trusted.
func TestRenewals(t *testing.T) {
	f := newFixture(t)
	if err := f.issuer(t).Ensure(f.ctx); err != nil {
		t.Fatal(err)
	}
	first := leaf(t, f.secret(t, "serving"))
	firstCA := f.secret(t, "serving-ca")

	f.clock.Step(lifetime*2/3 + time.Minute)
	if err := f.issuer(t).Ensure(f.ctx); err != nil {
		t.Fatal(err)
	}
	if got := leaf(t, f.secret(t, "serving")); !got.Equal(first) {
		t.Fatal("Ensure renewed a certificate that is still valid: renewals are the elected controller's")
	}

	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); f.issuer(t).Run(ctx) }()
	renewed := waitForNewLeaf(t, f, "serving", first)
	if _, err := renewed.Verify(x509.VerifyOptions{Roots: bundle(t, firstCA.Data[selfcert.CAKey]), CurrentTime: f.clock.Now()}); err != nil {
		t.Errorf("the renewed certificate is not signed by the same CA: %v", err)
	}
	cancel()
	<-done

	// Past two thirds of the CA's life: a new CA, the old one still in
	// the bundle, and the bundle handed to the certificates' readers.
	f.clock.Step(caLifetime*2/3 + time.Hour)
	ctx, cancel = context.WithCancel(f.ctx)
	defer cancel()
	done = make(chan struct{})
	go func() { defer close(done); f.issuer(t).Run(ctx) }()
	if err := wait.PollUntilContextTimeout(f.ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		ca := f.secret(t, "serving-ca")
		certs, err := certutil.ParseCertsPEM(ca.Data[selfcert.CAKey])
		return err == nil && len(certs) == 2 && bytes.Equal(f.secret(t, "serving").Data[selfcert.CAKey], ca.Data[selfcert.CAKey]), nil
	}); err != nil {
		t.Fatalf("the CA was not renewed with the old one kept in the bundle: %v", err)
	}
	cancel()
	<-done
	ca := f.secret(t, "serving-ca")
	oldCA, err := certutil.ParseCertsPEM(firstCA.Data[corev1.TLSCertKey])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(ca.Data[selfcert.CAKey], firstCA.Data[corev1.TLSCertKey]) || bytes.Equal(ca.Data[corev1.TLSCertKey], firstCA.Data[corev1.TLSCertKey]) {
		t.Errorf("the bundle after the CA's renewal does not hold a new CA and the old one %s", oldCA[0].Subject)
	}
}

func waitForNewLeaf(t *testing.T, f *fixture, name string, old *x509.Certificate) *x509.Certificate {
	t.Helper()
	var got *x509.Certificate
	if err := wait.PollUntilContextTimeout(f.ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got = leaf(t, f.secret(t, name))
		return !got.Equal(old), nil
	}); err != nil {
		t.Fatalf("%s was not renewed: %v", name, err)
	}
	return got
}

// TestServingFollowsRenewals: a TLS server whose certificate is a
// SecretContent (as the server's is) serves each renewal without a restart,
// and a client trusting the CA bundle gets every request through while the
// certificate is renewed many times.
func TestServingFollowsRenewals(t *testing.T) {
	f := newFixture(t)
	if err := f.issuer(t).Ensure(f.ctx); err != nil {
		t.Fatal(err)
	}
	content := selfcert.NewSecretContent(f.client, f.namespace, "serving")
	if err := content.WaitForContent(f.ctx); err != nil {
		t.Fatal(err)
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	controller := dynamiccertificates.NewDynamicServingCertificateController(tlsConfig, nil, content, nil, nil)
	content.AddListener(controller)
	if err := controller.RunOnce(); err != nil {
		t.Fatal(err)
	}
	go controller.Run(1, f.ctx.Done())
	go content.Run(f.ctx, 1)

	// GetConfigForClient hands each handshake the current certificate.
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}), TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: controller.GetConfigForClient}}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.ServeTLS(raw, "", "") }()
	defer srv.Close()

	roots := bundle(t, f.secret(t, "serving").Data[selfcert.CAKey])
	// The certificates live on the fake clock: verify at its time.
	served := func() (*x509.Certificate, error) {
		conn, err := tls.Dial("tcp", raw.Addr().String(), &tls.Config{
			MinVersion: tls.VersionTLS12, InsecureSkipVerify: true, //nolint:gosec // verified below, at the fake clock's time
			VerifyConnection: func(cs tls.ConnectionState) error {
				_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: "svc.ns.svc", CurrentTime: f.clock.Now()})
				return err
			},
		})
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0], nil
	}

	var requests, failures int
	current := leaf(t, f.secret(t, "serving"))
	const renewals = 3
	for range renewals {
		f.clock.Step(lifetime*2/3 + time.Minute)
		ctx, cancel := context.WithCancel(f.ctx)
		done := make(chan struct{})
		go func() { defer close(done); f.issuer(t).Run(ctx) }()
		next := waitForNewLeaf(t, f, "serving", current)
		cancel()
		<-done
		// Clients keep dialing until the server serves the new one.
		if err := wait.PollUntilContextTimeout(f.ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			requests++
			got, err := served()
			if err != nil {
				failures++
				t.Logf("handshake failed: %v", err)
				return false, nil
			}
			return got.Equal(next), nil
		}); err != nil {
			t.Fatalf("the server never served the renewed certificate: %v", err)
		}
		current = next
	}
	t.Logf("%d renewals, %d handshakes, %d failed", renewals, requests, failures)
	if failures != 0 {
		t.Errorf("%d of %d handshakes failed during renewals, want 0", failures, requests)
	}
}

// TestAShortenedLifetimeRenewsAtOnce: certificates issued for a longer
// lifetime than the configured one are renewed by the controller's next
// pass, not two thirds into their old lifetime; Ensure leaves them.
func TestAShortenedLifetimeRenewsAtOnce(t *testing.T) {
	f := newFixture(t)
	if err := f.issuer(t).Ensure(f.ctx); err != nil {
		t.Fatal(err)
	}
	first := leaf(t, f.secret(t, "serving"))
	const shorter = 6 * time.Minute
	short, err := selfcert.New(selfcert.Config{Client: f.client, Dynamic: f.dyn, Namespace: f.namespace, Authorities: install(f.apiService),
		Lifetime: shorter, AuthorityLifetime: caLifetime, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := short.Ensure(f.ctx); err != nil {
		t.Fatal(err)
	}
	if !leaf(t, f.secret(t, "serving")).Equal(first) {
		t.Fatal("Ensure renewed a valid certificate for a shortened lifetime: renewals are the elected controller's")
	}
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); short.Run(ctx) }()
	renewed := waitForNewLeaf(t, f, "serving", first)
	cancel()
	<-done
	if got := renewed.NotAfter.Sub(renewed.NotBefore); got > shorter+10*time.Minute {
		t.Errorf("the renewed certificate is valid for %v, want about %v", got, shorter)
	}
}
