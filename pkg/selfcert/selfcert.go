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

// Package selfcert keeps the install's own certificates without
// cert-manager, as open-policy-agent/cert-controller does for Gatekeeper
// and Kyverno: CAs of the install's own, the certificates they sign, each
// in a Secret of the server's namespace, renewed after two thirds of their
// life, and the serving CA copied into the APIServices' caBundle.
//
// An Issuer writes them. Every replica runs its Ensure once at start,
// which makes only what is missing or unusable (the first start of an
// install, where nothing may be served before), and one replica, elected,
// runs it as a controller that also renews what is due. Each write is a
// create or an update at the resourceVersion read, so two writers never
// overwrite each other. A SecretContent on every replica serves a
// certificate from its Secret and follows its renewals.
//
// A renewed CA is added to the bundle before the old one leaves it (when
// it expires): certificates it signed stay trusted until they are renewed
// in their turn.
package selfcert

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// CAKey is the key of a Secret's data that holds the bundle of trusted CA
// certificates, as cert-manager names it.
const CAKey = "ca.crt"

// ManagedByLabel marks the Secrets an Issuer writes.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// managedBy is ManagedByLabel's value.
const managedBy = "events-apiserver"

// resync is the longest pause between two passes of the controller, so that
// a deleted or edited Secret is made again soon.
const resync = time.Minute

// retryPeriod is the pause after a failed pass.
const retryPeriod = 5 * time.Second

// apiServices is the resource of the aggregator's APIServices.
var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// CertificateSpec is a certificate an authority signs, kept in a Secret of
// type kubernetes.io/tls (tls.crt, tls.key and ca.crt: the authority's
// bundle).
type CertificateSpec struct {
	Secret      string
	CommonName  string
	DNSNames    []string
	IPAddresses []net.IP
	// Usages are its extended key usages: server auth for what serves,
	// client auth for what authenticates as a client, both only for etcd
	// peers.
	Usages []x509.ExtKeyUsage
}

// TrustSpec is a Secret holding only ca.crt: the authority's bundle and
// then the ca.crt of each Secret of Include that exists (written by
// someone else), for a server that trusts clients of several CAs.
type TrustSpec struct {
	Secret  string
	Include []string
}

// RandomSpec is a Secret holding a random secret (64 hexadecimal digits)
// under Key, made once and never changed: a password two parts of the
// install share.
type RandomSpec struct {
	Secret string
	Key    string
}

// AuthoritySpec is a CA of the install's own, kept in a Secret of type
// kubernetes.io/tls (tls.crt and tls.key: the CA; ca.crt: its bundle), and
// what it signs.
type AuthoritySpec struct {
	Secret       string
	CommonName   string
	Certificates []CertificateSpec
	Trust        []TrustSpec
	// APIServices get the bundle as their spec.caBundle.
	APIServices []string
}

// Config is what an Issuer keeps.
type Config struct {
	Client kubernetes.Interface
	// Dynamic writes the APIServices' caBundle; needed only when an
	// authority names APIServices.
	Dynamic   dynamic.Interface
	Namespace string
	// Authorities and what they sign.
	Authorities []AuthoritySpec
	// Randoms are the shared passwords.
	Randoms []RandomSpec
	// Lifetime is how long a certificate is valid; it is renewed after two
	// thirds of it.
	Lifetime time.Duration
	// AuthorityLifetime is how long a CA is valid; renewed likewise.
	AuthorityLifetime time.Duration
	// Clock is the time; the real one when nil.
	Clock clock.WithTicker
}

// Issuer writes the certificates of a Config.
type Issuer struct {
	cfg Config
}

// New returns the Issuer of cfg.
func New(cfg Config) (*Issuer, error) {
	if cfg.Client == nil || cfg.Namespace == "" {
		return nil, errors.New("self-managed certificates need a client and a namespace")
	}
	if cfg.Lifetime <= 0 || cfg.AuthorityLifetime < cfg.Lifetime {
		return nil, fmt.Errorf("a certificate's lifetime (%v) must be positive and at most its CA's (%v)", cfg.Lifetime, cfg.AuthorityLifetime)
	}
	for _, a := range cfg.Authorities {
		if len(a.APIServices) > 0 && cfg.Dynamic == nil {
			return nil, errors.New("writing APIServices' caBundle needs a dynamic client")
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Issuer{cfg: cfg}, nil
}

// Name names the controller.
func (i *Issuer) Name() string { return "certificates" }

// Ensure makes what is missing or unusable (absent, unparsable, expired, or
// no longer matching its spec or its CA), and renews nothing that is still
// valid: what every replica may do at start.
//
// Replicas starting together race: a pass that lost one (a conflict) is
// made again on what the winner wrote.
func (i *Issuer) Ensure(ctx context.Context) error {
	return retry.OnError(retry.DefaultRetry, apierrors.IsConflict, func() error {
		_, err := i.sync(ctx, false)
		return err
	})
}

// Run renews what is due, and makes what is missing, until ctx ends: the
// elected replica's controller.
func (i *Issuer) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("controller", i.Name())
	ctx = klog.NewContext(ctx, logger)
	for {
		next, err := i.sync(ctx, true)
		wait := resync
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			logger.Error(err, "Keeping the certificates failed; trying again", "retryAfter", retryPeriod)
			wait = retryPeriod
		} else if d := next.Sub(i.cfg.Clock.Now()); d < wait {
			wait = max(d, time.Second)
		}
		t := i.cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// sync makes one pass over every authority; renew also renews what is due.
// It returns when the next renewal is due.
func (i *Issuer) sync(ctx context.Context, renew bool) (time.Time, error) {
	next := i.cfg.Clock.Now().Add(i.cfg.AuthorityLifetime)
	var errs []error
	for _, spec := range i.cfg.Authorities {
		ca, err := i.authority(ctx, spec, renew)
		if err != nil {
			errs = append(errs, fmt.Errorf("CA %s/%s: %w", i.cfg.Namespace, spec.Secret, err))
			continue
		}
		next = earliest(next, renewalTime(ca.cert))
		for _, c := range spec.Certificates {
			due, err := i.certificate(ctx, ca, c, renew)
			if err != nil {
				errs = append(errs, fmt.Errorf("certificate %s/%s: %w", i.cfg.Namespace, c.Secret, err))
				continue
			}
			next = earliest(next, due)
		}
		for _, t := range spec.Trust {
			if err := i.trust(ctx, ca, t); err != nil {
				errs = append(errs, fmt.Errorf("trust bundle %s/%s: %w", i.cfg.Namespace, t.Secret, err))
			}
		}
		for _, name := range spec.APIServices {
			err := i.caBundle(ctx, name, ca.bundlePEM())
			if apierrors.IsNotFound(err) && !renew {
				// Not registered yet: the server may start before its
				// APIService is applied; the controller sets it then.
				klog.FromContext(ctx).Info("No APIService to set the caBundle of yet", "apiService", name)
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("caBundle of APIService %s: %w", name, err))
			}
		}
	}
	for _, spec := range i.cfg.Randoms {
		if err := i.random(ctx, spec); err != nil {
			errs = append(errs, fmt.Errorf("secret %s/%s: %w", i.cfg.Namespace, spec.Secret, err))
		}
	}
	return next, errors.Join(errs...)
}

// random makes the Secret of spec if it is missing or its key is empty.
func (i *Issuer) random(ctx context.Context, spec RandomSpec) error {
	secrets := i.cfg.Client.CoreV1().Secrets(i.cfg.Namespace)
	secret, err := secrets.Get(ctx, spec.Secret, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err == nil && len(secret.Data[spec.Key]) > 0 {
		return nil
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return err
	}
	value := []byte(hex.EncodeToString(buf))
	if err != nil {
		_, err = secrets.Create(ctx, i.secret(spec.Secret, corev1.SecretTypeOpaque, map[string][]byte{spec.Key: value}), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	secret = secret.DeepCopy()
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	secret.Data[spec.Key] = value
	_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{})
	return err
}

// authority reads the CA of spec, making it when it is missing or unusable
// and, with renew, renewing it when due (the new CA joins the bundle, the
// old stays in it until it expires).
func (i *Issuer) authority(ctx context.Context, spec AuthoritySpec, renew bool) (*authority, error) {
	now := i.cfg.Clock.Now()
	secrets := i.cfg.Client.CoreV1().Secrets(i.cfg.Namespace)
	secret, err := secrets.Get(ctx, spec.Secret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		ca, err := newAuthority(spec.CommonName, i.cfg.AuthorityLifetime, now, nil)
		if err != nil {
			return nil, err
		}
		_, err = secrets.Create(ctx, i.tlsSecret(spec.Secret, ca.certPEM, ca.keyPEM, ca.bundlePEM()), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Another replica made it first: use that one.
			return i.authority(ctx, spec, false)
		}
		if err != nil {
			return nil, err
		}
		klog.FromContext(ctx).Info("Created a CA", "secret", klog.KRef(i.cfg.Namespace, spec.Secret), "notAfter", ca.cert.NotAfter)
		return ca, nil
	}
	if err != nil {
		return nil, err
	}
	ca, err := parseAuthority(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey], secret.Data[CAKey])
	usable := err == nil && now.Before(ca.cert.NotAfter)
	if usable && (!renew || now.Before(renewalTime(ca.cert))) {
		return ca, nil
	}
	var previous []*x509.Certificate
	if err == nil {
		previous = ca.bundle
	}
	renewed, err := newAuthority(spec.CommonName, i.cfg.AuthorityLifetime, now, previous)
	if err != nil {
		return nil, err
	}
	if err := i.update(ctx, secret, renewed.certPEM, renewed.keyPEM, renewed.bundlePEM()); err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Renewed a CA", "secret", klog.KRef(i.cfg.Namespace, spec.Secret), "notAfter", renewed.cert.NotAfter, "wasUsable", usable)
	return renewed, nil
}

// certificate keeps the certificate of spec signed by ca, and returns when
// it is due for renewal.
func (i *Issuer) certificate(ctx context.Context, ca *authority, spec CertificateSpec, renew bool) (time.Time, error) {
	now := i.cfg.Clock.Now()
	secrets := i.cfg.Client.CoreV1().Secrets(i.cfg.Namespace)
	secret, err := secrets.Get(ctx, spec.Secret, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return time.Time{}, err
	}
	if err == nil {
		cert, err := parseLeaf(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
		if err == nil && now.Before(cert.NotAfter) && ca.matches(cert, spec, now) {
			due := renewalTime(cert)
			if cert.NotAfter.Sub(cert.NotBefore) > i.cfg.Lifetime+backdate+time.Minute {
				// Issued for a longer lifetime than configured now: a
				// shortened lifetime holds from the next pass on.
				due = now
			}
			if !renew {
				return due, nil
			}
			if now.Before(due) {
				if bytes.Equal(secret.Data[CAKey], ca.bundlePEM()) {
					return due, nil
				}
				// The CA was renewed: the readers learn the new bundle.
				return due, i.update(ctx, secret, secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey], ca.bundlePEM())
			}
		}
	}
	certPEM, keyPEM, err := ca.issue(spec, i.cfg.Lifetime, now)
	if err != nil {
		return time.Time{}, err
	}
	cert, err := parseLeaf(certPEM, keyPEM)
	if err != nil {
		return time.Time{}, err
	}
	if secret == nil || secret.Name == "" {
		_, err = secrets.Create(ctx, i.tlsSecret(spec.Secret, certPEM, keyPEM, ca.bundlePEM()), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Another replica made it first; the next pass checks it.
			return now, nil
		}
	} else {
		err = i.update(ctx, secret, certPEM, keyPEM, ca.bundlePEM())
	}
	if err != nil {
		return time.Time{}, err
	}
	klog.FromContext(ctx).Info("Issued a certificate", "secret", klog.KRef(i.cfg.Namespace, spec.Secret), "notAfter", cert.NotAfter)
	return renewalTime(cert), nil
}

// trust keeps the trust bundle of spec: ca's bundle, then the ca.crt of
// the Secrets it includes.
func (i *Issuer) trust(ctx context.Context, ca *authority, spec TrustSpec) error {
	secrets := i.cfg.Client.CoreV1().Secrets(i.cfg.Namespace)
	bundle := ca.bundlePEM()
	for _, name := range spec.Include {
		other, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		bundle = append(bundle, other.Data[CAKey]...)
	}
	secret, err := secrets.Get(ctx, spec.Secret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = secrets.Create(ctx, i.secret(spec.Secret, corev1.SecretTypeOpaque, map[string][]byte{CAKey: bundle}), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	if err != nil || bytes.Equal(secret.Data[CAKey], bundle) {
		return err
	}
	secret = secret.DeepCopy()
	secret.Data = map[string][]byte{CAKey: bundle}
	_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{})
	return err
}

// caBundle sets an APIService's spec.caBundle, when it differs.
func (i *Issuer) caBundle(ctx context.Context, name string, bundle []byte) error {
	client := i.cfg.Dynamic.Resource(apiServices)
	obj, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	current, _, _ := unstructured.NestedString(obj.Object, "spec", "caBundle")
	encoded := base64.StdEncoding.EncodeToString(bundle)
	if current == encoded {
		return nil
	}
	// The resourceVersion makes the patch fail rather than undo a newer
	// write.
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": obj.GetResourceVersion()},
		"spec":     map[string]any{"caBundle": encoded},
	})
	if err != nil {
		return err
	}
	if _, err := client.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Set the APIService's caBundle", "apiService", name)
	return nil
}

// update writes a TLS Secret's data at the resourceVersion read.
func (i *Issuer) update(ctx context.Context, secret *corev1.Secret, certPEM, keyPEM, bundle []byte) error {
	secret = secret.DeepCopy()
	secret.Type = corev1.SecretTypeTLS
	secret.Data = map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, CAKey: bundle}
	if secret.Labels == nil {
		secret.Labels = map[string]string{}
	}
	secret.Labels[ManagedByLabel] = managedBy
	_, err := i.cfg.Client.CoreV1().Secrets(i.cfg.Namespace).Update(ctx, secret, metav1.UpdateOptions{})
	return err
}

func (i *Issuer) tlsSecret(name string, certPEM, keyPEM, bundle []byte) *corev1.Secret {
	return i.secret(name, corev1.SecretTypeTLS, map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, CAKey: bundle})
}

func (i *Issuer) secret(name string, typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: i.cfg.Namespace, Labels: map[string]string{ManagedByLabel: managedBy}},
		Type:       typ,
		Data:       data,
	}
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
