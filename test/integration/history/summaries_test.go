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

package history

import (
	"cmp"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	summariesv1alpha1 "github.com/kube-events/events-apiserver/pkg/apis/summaries/v1alpha1"
	"github.com/kube-events/events-apiserver/pkg/generated/clientset/versioned"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// summaryKey is what the events of one summary share.
type summaryKey struct{ Type, Reason, Kind, Controller string }

// summaryCounts are a summary's counts.
type summaryCounts struct{ Occurrences, Events, Objects int64 }

// TestEventSummaries writes events with series and counts through core/v1
// and events.k8s.io/v1, and checks that the event summaries of a selector
// count exactly what a list of events with that selector returns
// (occurrences: series.count, else count, at least 1), from the live store
// and, once the events expired, from the archive with history.since; that
// kubectl prints them as a table, pages them, and that they are read-only.
func TestEventSummaries(t *testing.T) {
	const ttl = 8 * time.Second
	s, _ := historyServer(t, "embedded", ttl)
	ctx := ctxFor(t)
	namespace := namespaceFor(t)
	c := clientset(t, s.RestConfig, runtime.ContentTypeJSON)
	ours, err := versioned.NewForConfig(s.RestConfig)
	if err != nil {
		t.Fatal(err)
	}
	createSummaryFixtures(ctx, t, c, namespace)

	selectors := []string{"", "type=Warning", "regarding.kind=Pod,reason!=Pulled", "reportingController=kubelet"}
	live := map[string][]summariesv1alpha1.EventSummary{}
	for _, selector := range selectors {
		got := listSummaries(ctx, t, ours, namespace, selector, 0)
		if diff := gocmp.Diff(countEvents(ctx, t, c, namespace, selector), countSummaries(got)); diff != "" {
			t.Errorf("live summaries of %q differ from the events listed with it (-events +summaries):\n%s", selector, diff)
		}
		live[selector] = got
	}
	warnings := live["type=Warning"]
	if got, want := warnings[0].Occurrences, int64(5+3+1); got != want || warnings[0].Reason != "BackOff" {
		t.Errorf("first Warning summary %s %d occurrences, want BackOff with %d", warnings[0].Reason, got, want)
	}
	if diff := gocmp.Diff(live["type=Warning"], listSummaries(ctx, t, ours, namespace, "type=Warning", 1)); diff != "" {
		t.Errorf("summaries in pages of 1 differ from one list (-one +pages):\n%s", diff)
	}

	t.Run("kubectl get eventsummaries prints the table", func(t *testing.T) {
		stdout, stderr, err := framework.Kubectl(t, s.KubeconfigPath, "get", "eventsummaries", "-n", namespace, "--field-selector", "type=Warning")
		if err != nil {
			t.Fatalf("kubectl get eventsummaries: %v\n%s", err, stderr)
		}
		t.Logf("kubectl get eventsummaries -n %s --field-selector type=Warning:\n%s", namespace, stdout)
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		wantRows := []string{
			"TYPE REASON KIND CONTROLLER OCCURRENCES OBJECTS FIRST LAST",
			"Warning BackOff Pod kubelet 9 2",
			"Warning FailedScheduling Pod default-scheduler 1 1",
		}
		if len(lines) != len(wantRows) {
			t.Fatalf("kubectl printed %d lines, want %d:\n%s", len(lines), len(wantRows), stdout)
		}
		for i, want := range wantRows {
			if got := strings.Join(strings.Fields(lines[i]), " "); !strings.HasPrefix(got, want) {
				t.Errorf("line %d = %q, want it to start with %q", i, got, want)
			}
		}
		stdout, stderr, err = framework.Kubectl(t, s.KubeconfigPath, "get", "eventsummaries", "-A", "--field-selector", "type=Warning,history.since=1h")
		if err != nil || !strings.Contains(stdout, namespace) {
			t.Errorf("kubectl get eventsummaries -A: %v\n%s%s", err, stdout, stderr)
		}
	})

	t.Run("read-only", func(t *testing.T) {
		_, err := ours.SummariesV1alpha1().RESTClient().Get().Namespace(namespace).Resource("eventsummaries").Param("watch", "true").DoRaw(ctx)
		if !apierrors.IsMethodNotSupported(err) {
			t.Errorf("watch: %v, want 405", err)
		}
		err = ours.SummariesV1alpha1().RESTClient().Post().Namespace(namespace).Resource("eventsummaries").
			Body([]byte(`{"apiVersion":"summaries.kube-events.io/v1alpha1","kind":"EventSummary","metadata":{"name":"x"}}`)).
			SetHeader("Content-Type", "application/json").Do(ctx).Error()
		if !apierrors.IsMethodNotSupported(err) {
			t.Errorf("create: %v, want 405", err)
		}
		_, err = ours.SummariesV1alpha1().EventSummaries(namespace).List(ctx, metav1.ListOptions{FieldSelector: "nosuchfield=x"})
		if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != http.StatusBadRequest {
			t.Errorf("an unknown field label: %v, want 400", err)
		}
	})

	waitExpired(ctx, t, c, namespace, 4*ttl)
	waitHistory(ctx, t, c, namespace, len(summaryFixtures), 20*time.Second)

	t.Run("from the archive with history.since", func(t *testing.T) {
		for _, selector := range selectors {
			selector := withHistory(selector, "1h")
			got := listSummaries(ctx, t, ours, namespace, selector, 0)
			if diff := gocmp.Diff(countEvents(ctx, t, c, namespace, selector), countSummaries(got)); diff != "" {
				t.Errorf("archived summaries of %q differ from the events listed with it (-events +summaries):\n%s", selector, diff)
			}
			if diff := gocmp.Diff(countSummaries(live[strings.TrimSuffix(strings.TrimSuffix(selector, "history.since=1h"), ",")]), countSummaries(got)); diff != "" {
				t.Errorf("archived summaries of %q differ from the live ones (-live +archive):\n%s", selector, diff)
			}
		}
		if diff := gocmp.Diff(listSummaries(ctx, t, ours, namespace, "history.since=1h", 0), listSummaries(ctx, t, ours, namespace, "history.since=1h", 2)); diff != "" {
			t.Errorf("archived summaries in pages of 2 differ from one list (-one +pages):\n%s", diff)
		}
		_, err := ours.SummariesV1alpha1().EventSummaries("").List(ctx, metav1.ListOptions{FieldSelector: "history.since=7d"})
		if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != http.StatusBadRequest {
			t.Errorf("a cluster-wide unselective week: %v, want the history's 400", err)
		}
	})

	// The same events again, new ones of the same objects: live now, and
	// archived as they are written. A summary counts them from the live
	// store, the expired ones from the archive, each event once and each
	// object once, as the history list returns them.
	t.Run("live and archived with history.since", func(t *testing.T) {
		createSummaryFixtures(ctx, t, c, namespace)
		time.Sleep(2 * time.Second) // the archiver appends the new events meanwhile
		for _, selector := range selectors {
			selector := withHistory(selector, "1h")
			got := listSummaries(ctx, t, ours, namespace, selector, 0)
			if diff := gocmp.Diff(countEvents(ctx, t, c, namespace, selector), countSummaries(got)); diff != "" {
				t.Errorf("summaries of %q differ from the events listed with it (-events +summaries):\n%s", selector, diff)
			}
		}
		list, err := c.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != len(summaryFixtures) {
			t.Errorf("%d events live after the comparison, want %d: the check did not cover live events", len(list.Items), len(summaryFixtures))
		}
		warnings := countSummaries(listSummaries(ctx, t, ours, namespace, "type=Warning,history.since=1h", 0))
		if got, want := warnings[summaryKey{"Warning", "BackOff", "Pod", "kubelet"}], (summaryCounts{Occurrences: 18, Events: 6, Objects: 2}); got != want {
			t.Errorf("BackOff counts %+v, want %+v: each event once, each object once", got, want)
		}
	})
}

// summaryFixture is an event of TestEventSummaries.
type summaryFixture struct {
	name, kind, object, reason, eventType, controller string
	// count is a core/v1 count; series a series' count.
	count, series int32
	legacy        bool
}

var summaryFixtures = []summaryFixture{
	{name: "web-0.backoff", kind: "Pod", object: "web-0", reason: "BackOff", eventType: "Warning", controller: "kubelet", series: 5},
	{name: "web-1.backoff", kind: "Pod", object: "web-1", reason: "BackOff", eventType: "Warning", controller: "kubelet", count: 3, legacy: true},
	{name: "web-1.backoff-2", kind: "Pod", object: "web-1", reason: "BackOff", eventType: "Warning", controller: "kubelet"},
	{name: "web-2.failed", kind: "Pod", object: "web-2", reason: "FailedScheduling", eventType: "Warning", controller: "default-scheduler"},
	{name: "web-0.pulled", kind: "Pod", object: "web-0", reason: "Pulled", eventType: "Normal", controller: "kubelet", count: 2, legacy: true},
	{name: "web.scaled", kind: "Deployment", object: "web", reason: "ScalingReplicaSet", eventType: "Normal", controller: "deployment-controller", series: 4},
}

// createSummaryFixtures writes summaryFixtures into namespace.
func createSummaryFixtures(ctx context.Context, t *testing.T, c kubernetes.Interface, namespace string) {
	t.Helper()
	now := time.Now()
	for i, f := range summaryFixtures {
		at := now.Add(time.Duration(i-len(summaryFixtures)) * time.Second)
		regarding := corev1.ObjectReference{Kind: f.kind, Namespace: namespace, Name: f.object, APIVersion: "v1"}
		if f.legacy {
			e := &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Name: f.name, Namespace: namespace},
				InvolvedObject: regarding, Reason: f.reason, Type: f.eventType, Message: f.name,
				Source:         corev1.EventSource{Component: f.controller, Host: "node-1"},
				FirstTimestamp: metav1.NewTime(at.Add(-time.Minute)), LastTimestamp: metav1.NewTime(at), Count: f.count,
			}
			if _, err := c.CoreV1().Events(namespace).Create(ctx, e, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating %s: %v", f.name, err)
			}
			continue
		}
		e := &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: f.name, Namespace: namespace},
			EventTime:  metav1.NewMicroTime(at.Add(-time.Minute)), Regarding: regarding, Reason: f.reason, Type: f.eventType,
			Action: "Acting", ReportingController: f.controller, ReportingInstance: "instance-1", Note: f.name,
		}
		if f.series > 0 {
			e.Series = &eventsv1.EventSeries{Count: f.series, LastObservedTime: metav1.NewMicroTime(at)}
		}
		if _, err := c.EventsV1().Events(namespace).Create(ctx, e, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", f.name, err)
		}
	}
}

// listSummaries lists the summaries of namespace with selector, in pages
// of limit (0: one list).
func listSummaries(ctx context.Context, t *testing.T, c versioned.Interface, namespace, selector string, limit int64) []summariesv1alpha1.EventSummary {
	t.Helper()
	var out []summariesv1alpha1.EventSummary
	options := metav1.ListOptions{FieldSelector: selector, Limit: limit}
	for {
		list, err := c.SummariesV1alpha1().EventSummaries(namespace).List(ctx, options)
		if err != nil {
			t.Fatalf("listing summaries of %q: %v", selector, err)
		}
		out = append(out, list.Items...)
		if list.Continue == "" {
			return out
		}
		options.Continue = list.Continue
	}
}

// countSummaries are the counts of summaries by what their events share.
func countSummaries(summaries []summariesv1alpha1.EventSummary) map[summaryKey]summaryCounts {
	out := map[summaryKey]summaryCounts{}
	for _, s := range summaries {
		out[summaryKey{s.Type, s.Reason, s.RegardingKind, s.ReportingController}] = summaryCounts{s.Occurrences, s.Events, s.Objects}
	}
	return out
}

// countEvents counts the events a core/v1 list of namespace with selector
// returns, as a user would: an event's occurrences are its series' count
// if it has a series, else its count, at least 1.
func countEvents(ctx context.Context, t *testing.T, c kubernetes.Interface, namespace, selector string) map[summaryKey]summaryCounts {
	t.Helper()
	out := map[summaryKey]summaryCounts{}
	objects := map[summaryKey]map[string]bool{}
	options := metav1.ListOptions{FieldSelector: strings.ReplaceAll(strings.ReplaceAll(selector, "regarding.", "involvedObject."), "reportingController", "reportingComponent"), Limit: 500}
	for {
		list, err := c.CoreV1().Events(namespace).List(ctx, options)
		if err != nil {
			t.Fatalf("listing events of %q: %v", selector, err)
		}
		for _, e := range list.Items {
			k := summaryKey{e.Type, e.Reason, e.InvolvedObject.Kind, cmp.Or(e.ReportingController, e.Source.Component)}
			occurrences := max(int64(e.Count), 1)
			if e.Series != nil {
				occurrences = int64(e.Series.Count)
			}
			if objects[k] == nil {
				objects[k] = map[string]bool{}
			}
			objects[k][e.InvolvedObject.Name] = true
			counts := out[k]
			counts.Occurrences += occurrences
			counts.Events++
			counts.Objects = int64(len(objects[k]))
			out[k] = counts
		}
		if list.Continue == "" {
			return out
		}
		options.Continue = list.Continue
	}
}
