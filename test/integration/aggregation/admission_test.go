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

package aggregation

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/kube-events/events-apiserver/pkg/embedded/pki"
)

// createUntil creates events through kube-apiserver (a new name each try)
// until done accepts the error, for admission configuration our server
// learns of through its informers.
func createUntil(t *testing.T, ns string, event func(name string) *eventsv1beta1.Event, done func(error) bool) error {
	t.Helper()
	events := adminClient(t).EventsV1beta1().Events(ns)
	var last error
	try := 0
	err := wait.PollUntilContextTimeout(testContext(t), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		try++
		_, last = events.Create(ctx, event(fmt.Sprintf("try-%d", try)), metav1.CreateOptions{})
		return done(last), nil
	})
	if err != nil {
		t.Fatalf("creating events in %s: last error %v: %v", ns, last, err)
	}
	return last
}

// TestOurServerAdmitsEventsOnlyIntoLiveNamespaces: our server's
// NamespaceLifecycle admission watches kube-apiserver's namespaces, so an
// event for a namespace kube-apiserver lacks, or one being deleted, is
// refused by our server (kube-apiserver runs no admission for requests it
// proxies).
func TestOurServerAdmitsEventsOnlyIntoLiveNamespaces(t *testing.T) {
	events := adminClient(t).EventsV1beta1().Events("no-such-namespace")
	_, err := events.Create(testContext(t), v1beta1Event("no-such-namespace", "e1"), metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `namespaces "no-such-namespace" not found`) {
		t.Errorf("create in a missing namespace: %v, want NotFound for the namespace", err)
	}

	// envtest runs no namespace controller: a deleted namespace stays
	// Terminating.
	ns := newNamespace(t)
	if err := adminClient(t).CoreV1().Namespaces().Delete(testContext(t), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = createUntil(t, ns, func(name string) *eventsv1beta1.Event { return v1beta1Event(ns, name) }, func(err error) bool { return err != nil })
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "because it is being terminated") {
		t.Errorf("create in a terminating namespace: %v, want Forbidden: being terminated", err)
	}
}

// TestOurServerEnforcesTheClustersValidatingAdmissionPolicies creates a
// ValidatingAdmissionPolicy for events.k8s.io events in kube-apiserver;
// our server, which serves those events, enforces it.
func TestOurServerEnforcesTheClustersValidatingAdmissionPolicies(t *testing.T) {
	ns := newNamespace(t)
	ctx := testContext(t)
	client := adminClient(t).AdmissionregistrationV1()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "events-need-a-known-action-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{eventsGroup}, APIVersions: []string{"*"}, Resources: []string{"events"}},
				}}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: `object.action != "Forbidden"`,
				Message:    "the action Forbidden is not allowed here",
			}},
		},
	}
	if _, err := client.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.ValidatingAdmissionPolicies().Delete(context.Background(), policy.Name, metav1.DeleteOptions{})
	})
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
			}},
		},
	}
	if _, err := client.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.ValidatingAdmissionPolicyBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})

	forbidden := func(name string) *eventsv1beta1.Event {
		e := v1beta1Event(ns, name)
		e.Action = "Forbidden"
		return e
	}
	err := createUntil(t, ns, forbidden, func(err error) bool { return err != nil })
	want := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: the action Forbidden is not allowed here", policy.Name, binding.Name)
	if !strings.Contains(fmt.Sprint(err), want) {
		t.Fatalf("create: %v, want %q", err, want)
	}
	if _, err := adminClient(t).EventsV1beta1().Events(ns).Create(ctx, v1beta1Event(ns, "allowed"), metav1.CreateOptions{}); err != nil {
		t.Errorf("an event the policy allows: %v", err)
	}
}

// TestOurServerCallsTheClustersAdmissionWebhooks registers a validating
// webhook for events.k8s.io events in kube-apiserver; our server calls it
// with the request's user and version and obeys its answer.
func TestOurServerCallsTheClustersAdmissionWebhooks(t *testing.T) {
	ns := newNamespace(t)
	ctx := testContext(t)
	hook := startWebhook(t)

	config := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "events-webhook-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "events.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(hook.url), CABundle: hook.caBundle},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{eventsGroup}, APIVersions: []string{"*"}, Resources: []string{"events"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			TimeoutSeconds:          ptr.To[int32](5),
		}},
	}
	webhooks := adminClient(t).AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := webhooks.Create(ctx, config, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = webhooks.Delete(context.Background(), config.Name, metav1.DeleteOptions{}) })

	rejected := func(name string) *eventsv1beta1.Event {
		e := v1beta1Event(ns, name)
		e.Reason = "RejectedByWebhook"
		return e
	}
	err := createUntil(t, ns, rejected, func(err error) bool { return err != nil })
	if !strings.Contains(fmt.Sprint(err), `admission webhook "events.example.com" denied the request: reason RejectedByWebhook`) {
		t.Fatalf("create: %v, want the webhook's denial", err)
	}
	if _, err := adminClient(t).EventsV1beta1().Events(ns).Create(ctx, v1beta1Event(ns, "allowed"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("an event the webhook allows: %v", err)
	}

	requests := hook.requests()
	if len(requests) == 0 {
		t.Fatal("the webhook got no requests")
	}
	last := requests[len(requests)-1]
	if last.Name != "allowed" || last.Namespace != ns || last.Kind.Group != eventsGroup || last.Resource.Version != "v1beta1" {
		t.Errorf("webhook request for %s/%s %v %v, want the v1beta1 event allowed", last.Namespace, last.Name, last.Kind, last.Resource)
	}
	// The admin's client certificate names user "admin" in system:masters.
	if last.UserInfo.Username != "admin" {
		t.Errorf("webhook request user %q, want admin, the user kube-apiserver proxied", last.UserInfo.Username)
	}
}

// webhook is an HTTPS validating admission webhook on loopback that
// denies events whose reason is RejectedByWebhook and records requests.
type webhook struct {
	url      string
	caBundle []byte
	mu       sync.Mutex
	received []admissionv1.AdmissionRequest
}

func (w *webhook) requests() []admissionv1.AdmissionRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]admissionv1.AdmissionRequest(nil), w.received...)
}

func startWebhook(t *testing.T) *webhook {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.EnsureCA(dir, "ca", "webhook-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.EnsureCert(dir, "serving", pki.Spec{CommonName: "webhook", IPs: []net.IP{net.IPv4(127, 0, 0, 1)},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(pair.CertFile, pair.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	listener, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	w := &webhook{url: "https://" + listener.Addr().String() + "/validate", caBundle: ca.CertPEM()}
	server := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var review admissionv1.AdmissionReview
		if err == nil {
			err = json.Unmarshal(body, &review)
		}
		if err != nil || review.Request == nil {
			http.Error(rw, fmt.Sprintf("bad AdmissionReview: %v", err), http.StatusBadRequest)
			return
		}
		var event struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(review.Request.Object.Raw, &event)
		w.mu.Lock()
		w.received = append(w.received, *review.Request)
		w.mu.Unlock()
		response := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: event.Reason != "RejectedByWebhook"}
		if !response.Allowed {
			response.Result = &metav1.Status{Message: "reason " + event.Reason}
		}
		review.Request, review.Response = nil, response
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(review)
	})}
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(func() { _ = server.Close() })
	return w
}
