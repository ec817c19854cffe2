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

package selfcert

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// SecretContent follows one TLS Secret (tls.crt, tls.key, ca.crt) through
// a watch of that Secret alone, and hands its content to the server's TLS
// configuration (a dynamiccertificates.CertKeyContentProvider, as the
// generic server's --tls-cert-file is) and to OnChange's callbacks. A
// content whose certificate and key do not match is ignored: the last good
// one stays. A Secret with ca.crt alone (a trust bundle) is content too.
type SecretContent struct {
	client    kubernetes.Interface
	namespace string
	name      string

	mu        sync.Mutex
	cert, key []byte
	ca        []byte
	listeners []dynamiccertificates.Listener
	onChange  []func(cert, key, ca []byte)
}

var (
	_ dynamiccertificates.CertKeyContentProvider = &SecretContent{}
	_ dynamiccertificates.ControllerRunner       = &SecretContent{}
)

// NewSecretContent follows the Secret namespace/name.
func NewSecretContent(client kubernetes.Interface, namespace, name string) *SecretContent {
	return &SecretContent{client: client, namespace: namespace, name: name}
}

// Name names the content in the server's logs.
func (s *SecretContent) Name() string { return "secret/" + s.namespace + "/" + s.name }

// CurrentCertKeyContent is the certificate and key last read.
func (s *SecretContent) CurrentCertKeyContent() ([]byte, []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cert, s.key
}

// AddListener is told of every change.
func (s *SecretContent) AddListener(l dynamiccertificates.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners = append(s.listeners, l)
}

// OnChange calls f with the content now, if it was read, and on every
// change.
func (s *SecretContent) OnChange(f func(cert, key, ca []byte)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onChange = append(s.onChange, f)
	if s.cert != nil || s.ca != nil {
		f(s.cert, s.key, s.ca)
	}
}

// RunOnce reads the Secret once.
func (s *SecretContent) RunOnce(ctx context.Context) error {
	secret, err := s.client.CoreV1().Secrets(s.namespace).Get(ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return s.set(secret)
}

// WaitForContent reads the Secret until it holds a usable certificate or
// ctx ends: at start, while another replica may still be writing it.
func (s *SecretContent) WaitForContent(ctx context.Context) error {
	for {
		err := s.RunOnce(ctx)
		if err == nil {
			return nil
		}
		klog.FromContext(ctx).V(2).Info("Waiting for a certificate", "secret", klog.KRef(s.namespace, s.name), "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("secret %s/%s: %w (last: %w)", s.namespace, s.name, ctx.Err(), err)
		case <-time.After(time.Second):
		}
	}
}

// Run follows the Secret until ctx ends.
func (s *SecretContent) Run(ctx context.Context, _ int) {
	factory := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informers.WithNamespace(s.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.name).String()
		}))
	informer := factory.Core().V1().Secrets().Informer()
	handle := func(obj any) {
		if secret, ok := obj.(*corev1.Secret); ok {
			if err := s.set(secret); err != nil {
				klog.FromContext(ctx).Error(err, "Ignoring an unusable certificate", "secret", klog.KObj(secret))
			}
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	}); err != nil {
		klog.FromContext(ctx).Error(err, "Following a certificate's Secret failed", "secret", klog.KRef(s.namespace, s.name))
		return
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
}

// set takes the Secret's content if its certificate and key match.
func (s *SecretContent) set(secret *corev1.Secret) error {
	cert, key, ca := secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey], secret.Data[CAKey]
	switch {
	case len(cert) == 0 && len(key) == 0:
		if _, err := certutil.ParseCertsPEM(ca); err != nil {
			return fmt.Errorf("secret %s/%s holds no certificate and no usable %s: %w", secret.Namespace, secret.Name, CAKey, err)
		}
	default:
		if _, err := tls.X509KeyPair(cert, key); err != nil {
			return fmt.Errorf("secret %s/%s: %w", secret.Namespace, secret.Name, err)
		}
	}
	s.mu.Lock()
	if bytes.Equal(cert, s.cert) && bytes.Equal(key, s.key) && bytes.Equal(ca, s.ca) {
		s.mu.Unlock()
		return nil
	}
	s.cert, s.key, s.ca = cert, key, ca
	listeners := slices.Clone(s.listeners)
	callbacks := slices.Clone(s.onChange)
	s.mu.Unlock()
	for _, l := range listeners {
		l.Enqueue()
	}
	for _, f := range callbacks {
		f(cert, key, ca)
	}
	return nil
}
