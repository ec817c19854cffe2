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

package offload

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// limitingWebhook is the other way to hold core/v1 writers to the event
// policy in offload mode: a validating admission webhook that kube-apiserver
// calls for every event create, applying the limits kube-apiserver's
// EventRateLimit applies (User, SourceAndObject, Namespace; a token taken
// from every bucket) and refusing with 429. It is measured beside the
// plugin (TestCoreV1StormThroughKubeAPIServer) in its best case: in the
// test's process, a loopback TLS round trip from kube-apiserver.
type limitingWebhook struct {
	calls atomic.Int64

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

// allow takes a token from the bucket of key, made with qps and burst.
func (w *limitingWebhook) allow(key string, qps, burst int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, ok := w.buckets[key]
	if !ok {
		b = rate.NewLimiter(rate.Limit(qps), burst)
		w.buckets[key] = b
	}
	return b.Allow()
}

func (w *limitingWebhook) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	w.calls.Add(1)
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(req.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	var event corev1.Event
	if err := json.Unmarshal(review.Request.Object.Raw, &event); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	o := event.InvolvedObject
	allowed := true
	for _, limit := range []struct {
		key        string
		qps, burst int
	}{
		{"user/" + review.Request.UserInfo.Username, stormReporterQPS, stormReporterBurst},
		{fmt.Sprintf("object/%s/%s/%s/%s/%s/%s", event.Source.Component, event.Source.Host, o.Kind, o.Namespace, o.Name, o.UID), stormObjectQPS, stormObjectBurst},
		{"namespace/" + review.Request.Namespace, stormNamespaceQPS, stormNamespaceBurst},
	} {
		allowed = w.allow(limit.key, limit.qps, limit.burst) && allowed
	}
	response := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: allowed}
	if !allowed {
		response.Result = &metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests,
			Message: "event rate limit exceeded",
		}
	}
	review.Response, review.Request = response, nil
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(review)
}

// registerLimitingWebhook serves a limitingWebhook and registers it for
// core/v1 event creates, with a short timeout and failurePolicy Ignore (a
// webhook that is away must not stop the cluster's events), until the test
// ends; it returns once kube-apiserver calls it.
func registerLimitingWebhook(t *testing.T, ctx context.Context) {
	t.Helper()
	webhook := &limitingWebhook{buckets: map[string]*rate.Limiter{}}
	server := httptest.NewTLSServer(webhook)
	t.Cleanup(server.Close)
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	url := server.URL + "/validate"
	ignore, none, timeoutSeconds := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone, int32(2)
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "event-rate-limit.example.com"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "event-rate-limit.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"events"}},
			}},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			TimeoutSeconds:          &timeoutSeconds,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	kube := kubeClient(t, cluster.AdminConfig)
	if _, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, config, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), config.Name, metav1.DeleteOptions{})
	})
	namespace := newNamespace(t)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		probe := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: "webhook-probe.", Namespace: namespace},
			InvolvedObject: *podRef(namespace, "webhook-probe"),
			Reason:         "Probe",
		}
		_, err := kube.CoreV1().Events(namespace).Create(ctx, probe, metav1.CreateOptions{})
		return err == nil && webhook.calls.Load() > 0, nil
	})
	if err != nil {
		t.Fatalf("kube-apiserver never called the webhook: %v", err)
	}
}
