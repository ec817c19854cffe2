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

// Package storm tests storm safety against the real server: the
// EventRateLimit admission plugin (429 + Retry-After per reporter, object and
// namespace) and the folding of isomorphic creates, with unmodified
// client-go recorders and clients.
package storm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"

	ourv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	"github.com/kube-events/events-apiserver/pkg/generated/clientset/versioned"
	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// admissionConfig is an AdmissionConfiguration with the given
// EventRateLimitConfiguration body, written to a file of the test.
func admissionConfig(t *testing.T, body string) string {
	t.Helper()
	path, err := framework.WriteRateLimitAdmissionConfig(t.TempDir(), body)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func waitFor(t *testing.T, what string, done func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, done); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// refused reads events_apiserver_ratelimit_refused_total{limit} from /metrics.
func refused(t *testing.T, c kubernetes.Interface, limit string) int {
	t.Helper()
	m, err := harness.ScrapeMetrics(t.Context(), c.CoreV1().RESTClient())
	if err != nil {
		t.Fatal(err)
	}
	return int(m.Value("events_apiserver_ratelimit_refused_total", map[string]string{"limit": limit}))
}

// TestRecordersUnderTightLimits: unmodified client-go recorders write more
// than their reporter's budget; the server refuses with 429 + Retry-After,
// client-go waits and retries, and every occurrence ends up stored or folded.
func TestRecordersUnderTightLimits(t *testing.T) {
	config := admissionConfig(t, `    limits: [{type: Reporter, qps: 2, burst: 3}]
    folding: {after: 2, window: 1m, flushInterval: 500ms}
`)
	server := framework.StartServer(t, framework.WithServerArgs("--admission-control-config-file="+config))
	client := kubernetes.NewForConfigOrDie(server.RestConfig)
	ours := versioned.NewForConfigOrDie(server.RestConfig)

	t.Run("tools/record: isomorphic events with new names are folded", func(t *testing.T) {
		namespace := "record"
		broadcaster := record.NewBroadcaster(record.WithContext(t.Context()))
		defer broadcaster.Shutdown()
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
		recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "storming-kubelet", Host: "node-1"})
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: namespace, UID: "uid-web"}}
		// A different message each time defeats the recorder's own
		// deduplication: each occurrence is a create with a new name.
		const occurrences = 8
		before := refused(t, client, "Reporter")
		for i := range occurrences {
			recorder.Eventf(pod, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container (attempt %d)", i)
		}
		var items []corev1.Event
		waitFor(t, "every occurrence stored or folded", func(ctx context.Context) (bool, error) {
			list, err := client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			items = list.Items
			total := int32(0)
			for _, e := range items {
				total += e.Count
			}
			return total == occurrences, nil
		})
		if len(items) != 2 {
			t.Fatalf("stored events: got %d, want 2 (the first two, the rest folded into the second)", len(items))
		}
		if got := refused(t, client, "Reporter") - before; got == 0 {
			t.Errorf("no write was refused: the storm stayed within the reporter's budget")
		}
		folded := items[0]
		if folded.Count < items[1].Count {
			folded = items[1]
		}
		if folded.Count != occurrences-1 || folded.Series == nil || folded.Series.Count != occurrences-1 {
			t.Errorf("folded event: count %d, series %+v; want count and series.count %d", folded.Count, folded.Series, occurrences-1)
		}
		series, err := ours.EventsV1().Events(namespace).Get(t.Context(), folded.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if series.Series == nil || series.Series.State != ourv1.EventSeriesStateOngoing {
			t.Errorf("folded event's series: %+v, want state Ongoing", series.Series)
		}
	})

	t.Run("tools/events: refused writes are retried and stored", func(t *testing.T) {
		namespace := "events"
		broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
		defer broadcaster.Shutdown()
		if err := broadcaster.StartRecordingToSinkWithContext(t.Context()); err != nil {
			t.Fatal(err)
		}
		recorder := broadcaster.NewRecorder(scheme.Scheme, "example.com/storming-controller")
		const pods = 6
		before := refused(t, client, "Reporter")
		for i := range pods {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: namespace, UID: "uid"}}
			recorder.Eventf(pod, nil, corev1.EventTypeNormal, "Started", "Start", "Started container")
		}
		// A repeat of the first makes it a series through the recorder's patch.
		first := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: namespace, UID: "uid"}}
		recorder.Eventf(first, nil, corev1.EventTypeNormal, "Started", "Start", "Started container")
		waitFor(t, "every event stored and the repeat counted", func(ctx context.Context) (bool, error) {
			list, err := ours.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != pods {
				return false, err
			}
			for _, e := range list.Items {
				if e.Regarding.Name == "web-0" {
					return e.Series != nil && e.Series.Count == 2 && e.Series.State == ourv1.EventSeriesStateOngoing, nil
				}
			}
			return false, nil
		})
		if got := refused(t, client, "Reporter") - before; got == 0 {
			t.Errorf("no write was refused: the recorder stayed within the reporter's budget")
		}
	})

	t.Run("events.k8s.io creates with new names fold into one series", func(t *testing.T) {
		namespace := "creates"
		const creates = 6
		for i := range creates {
			event := &eventsv1.Event{
				ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("loop-%d", i), Namespace: namespace},
				EventTime:           metav1.NowMicro(),
				ReportingController: "example.com/loop", ReportingInstance: "loop-0",
				Action: "Sync", Reason: "Failed", Type: corev1.EventTypeWarning, Note: fmt.Sprintf("attempt %d", i),
				Regarding: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: "loop"},
			}
			// client-go retries the 429s after their Retry-After.
			created, err := client.EventsV1().Events(namespace).Create(t.Context(), event, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create %d: %v", i, err)
			}
			if i >= 2 && (created.Name != "loop-1" || created.Series == nil || created.Series.Count != int32(i)) {
				t.Errorf("create %d answered %s with series %+v; want loop-1, count %d", i, created.Name, created.Series, i)
			}
		}
		waitFor(t, "the folded count written", func(ctx context.Context) (bool, error) {
			e, err := ours.EventsV1().Events(namespace).Get(ctx, "loop-1", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return e.Series != nil && e.Series.Count == creates-1 && e.Series.State == ourv1.EventSeriesStateOngoing, nil
		})
		list, err := client.EventsV1().Events(namespace).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 2 {
			t.Errorf("stored events: got %d, want 2", len(list.Items))
		}
	})
}

// TestEachLimitType: each limit type refuses, past its burst, exactly the
// writes that fall in its bucket, with 429, a Retry-After header and a
// message naming the limit; writes in other buckets pass.
func TestEachLimitType(t *testing.T) {
	// Refills too slow to matter during the test; no folding.
	config := admissionConfig(t, `    limits:
    - {type: Reporter, qps: 0.01, burst: 3}
    - {type: Object, qps: 0.01, burst: 5}
    - {type: Namespace, qps: 0.01, burst: 8}
    folding: {enabled: false}
`)
	server := framework.StartServer(t, framework.WithServerArgs("--admission-control-config-file="+config))
	httpClient, err := rest.HTTPClientFor(server.RestConfig)
	if err != nil {
		t.Fatal(err)
	}

	// create posts an event without client-side retries and returns the
	// answer's code, Retry-After header and message.
	serial := 0
	create := func(namespace, reporter, object string) (int, string, string) {
		serial++
		event := corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("e-%d", serial), Namespace: namespace},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: object},
			Reason:         "Tested", Message: "m", Type: corev1.EventTypeNormal,
			Source: corev1.EventSource{Component: reporter},
		}
		body, _ := json.Marshal(event)
		url := fmt.Sprintf("%s/api/v1/namespaces/%s/events", server.RestConfig.Host, namespace)
		resp, err := httpClient.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var status metav1.Status
		_ = json.NewDecoder(resp.Body).Decode(&status)
		return resp.StatusCode, resp.Header.Get("Retry-After"), status.Message
	}
	expect := func(what string, code int, retryAfter, message string, wantLimit string) {
		t.Helper()
		if wantLimit == "" {
			if code != http.StatusCreated {
				t.Errorf("%s: got %d %s, want 201", what, code, message)
			}
			return
		}
		if code != http.StatusTooManyRequests || retryAfter == "" || !strings.Contains(message, "limit "+wantLimit) {
			t.Errorf("%s: got %d, Retry-After %q, %q; want 429 with Retry-After naming limit %s", what, code, retryAfter, message, wantLimit)
		}
	}

	t.Run("Reporter", func(t *testing.T) {
		for i := range 3 {
			code, ra, msg := create("reporter", "r1", fmt.Sprintf("o%d", i))
			expect("within the reporter's burst", code, ra, msg, "")
		}
		code, ra, msg := create("reporter", "r1", "o9")
		expect("the reporter over its burst", code, ra, msg, "Reporter")
		code, ra, msg = create("reporter", "r2", "o9")
		expect("another reporter", code, ra, msg, "")
	})
	t.Run("Object", func(t *testing.T) {
		for i := range 5 {
			code, ra, msg := create("object", fmt.Sprintf("object-r%d", i), "hot")
			expect("within the object's burst", code, ra, msg, "")
		}
		code, ra, msg := create("object", "object-r9", "hot")
		expect("the object over its burst", code, ra, msg, "Object")
		code, ra, msg = create("object", "object-r9", "cold")
		expect("another object", code, ra, msg, "")
	})
	t.Run("Namespace", func(t *testing.T) {
		for i := range 8 {
			code, ra, msg := create("namespace", fmt.Sprintf("namespace-r%d", i), fmt.Sprintf("o%d", i))
			expect("within the namespace's burst", code, ra, msg, "")
		}
		code, ra, msg := create("namespace", "namespace-r9", "o9")
		expect("the namespace over its burst", code, ra, msg, "Namespace")
		code, ra, msg = create("other-namespace", "namespace-r9", "o9")
		expect("another namespace", code, ra, msg, "")
	})
}

// TestConfigurationErrorsAtStart: an invalid EventRateLimit configuration
// stops the server from starting, with a message naming the field.
func TestConfigurationErrorsAtStart(t *testing.T) {
	config := admissionConfig(t, `    limits: [{type: Reporter, qps: -1, burst: 3}, {type: Pods, qps: 1, burst: 1}]
`)
	server, err := framework.RunServer(framework.WithServerDataDir(t.TempDir()), framework.WithServerArgs("--admission-control-config-file="+config))
	if err == nil {
		_ = server.Close()
		t.Fatal("server started with an invalid EventRateLimit configuration")
	}
	for _, want := range []string{"limits[0].qps: Invalid value: -1: must be positive", `limits[1].type: Unsupported value: "Pods"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err.Error(), want)
		}
	}
}

// TestEventPolicyFile: the limits of an EventPolicy given with
// --event-policy-config are enforced, and they are charged once per write
// that passed the store's validation: writes refused as invalid take no
// token from the reporter's budget.
func TestEventPolicyFile(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte(`apiVersion: eventpolicy.config.events.k8s.io/v1alpha1
kind: EventPolicy
limits: [{type: Reporter, qps: 0.01, burst: 2}]
folding: {enabled: false}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	server := framework.StartServer(t, framework.WithServerArgs("--event-policy-config="+policy))
	httpClient, err := rest.HTTPClientFor(server.RestConfig)
	if err != nil {
		t.Fatal(err)
	}
	// create posts an event of one reporter without client-side retries
	// and returns the answer's code.
	create := func(name, objectNamespace string) int {
		t.Helper()
		event := corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "policy"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: objectNamespace, Name: "web"},
			Reason:         "Tested", Message: "m", Type: corev1.EventTypeNormal,
			Source: corev1.EventSource{Component: "reporter"},
		}
		body, _ := json.Marshal(event)
		resp, err := httpClient.Post(server.RestConfig.Host+"/api/v1/namespaces/policy/events", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode
	}
	var got []int
	for i := range 3 {
		got = append(got, create(fmt.Sprintf("invalid-%d", i), "elsewhere")) // regarding an object of another namespace
	}
	for i := range 3 {
		got = append(got, create(fmt.Sprintf("valid-%d", i), "policy"))
	}
	want := []int{http.StatusUnprocessableEntity, http.StatusUnprocessableEntity, http.StatusUnprocessableEntity,
		http.StatusCreated, http.StatusCreated, http.StatusTooManyRequests}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers to 3 invalid and 3 valid writes with a burst of 2 (-want +got):\n%s", diff)
	}
}
