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
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	summariesv1alpha1 "github.com/kube-events/events-apiserver/pkg/apis/summaries/v1alpha1"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestPlainKubectlGetIsAnsweredByOurServer creates an event directly in our
// server (not through kube-apiserver) and lists events.events.k8s.io
// through kube-apiserver without naming a version: kubectl picks the
// preferred v1beta1, the aggregator proxies it to us, and the event is
// there. kube-apiserver's own v1 does not have it.
func TestPlainKubectlGetIsAnsweredByOurServer(t *testing.T) {
	ns := newNamespace(t)
	direct := clientFor(t, cluster.ServerConfig)
	if _, err := direct.EventsV1beta1().Events(ns).Create(testContext(t), v1beta1Event(ns, "only-in-events-apiserver"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the event directly in our server: %v", err)
	}

	out := mustKubectl(t, "get", "events.events.k8s.io", "-n", ns, "-o", "json")
	var list struct {
		APIVersion string `json:"apiVersion"`
		Items      []struct {
			APIVersion string            `json:"apiVersion"`
			Metadata   metav1.ObjectMeta `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Metadata.Name != "only-in-events-apiserver" {
		t.Fatalf("kubectl get events.events.k8s.io -n %s: %s", ns, out)
	}
	if list.Items[0].APIVersion != ourV1beta1 {
		t.Errorf("listed as %s, want %s", list.Items[0].APIVersion, ourV1beta1)
	}

	if got := names(mustKubectl(t, "get", "events.v1.events.k8s.io", "-n", ns, "-o", "name")); len(got) != 0 {
		t.Errorf("kube-apiserver's own events.k8s.io/v1 lists %v, want nothing: the event lives only in our server", got)
	}
	if got := names(mustKubectl(t, "get", "events.v1beta1.events.k8s.io", "-n", ns, "-o", "name")); !slices.Equal(got, []string{"only-in-events-apiserver"}) {
		t.Errorf("kubectl get events.v1beta1.events.k8s.io: %v", got)
	}
}

// TestKubectlShowsFieldsOnlyOurServerServes creates, through kube-apiserver
// with kubectl, an event whose series has a state, a field upstream's
// Event lacks, and reads it back the same way.
func TestKubectlShowsFieldsOnlyOurServerServes(t *testing.T) {
	ns := newNamespace(t)
	now := time.Now().UTC()
	manifest := `apiVersion: events.k8s.io/v1beta1
kind: Event
metadata:
  name: backoff
  namespace: ` + ns + `
eventTime: "` + now.Add(-time.Minute).Format("2006-01-02T15:04:05.000000Z") + `"
reportingController: example.com/kubelet
reportingInstance: node-1
action: Restarting
reason: BackOff
note: back-off restarting failed container
type: Warning
regarding: {kind: Pod, namespace: ` + ns + `, name: crashing, apiVersion: v1}
series:
  count: 3
  lastObservedTime: "` + now.Format("2006-01-02T15:04:05.000000Z") + `"
  state: Ongoing
`
	file := filepath.Join(t.TempDir(), "event.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := framework.Kubectl(t, cluster.Kubeconfig, "create", "-f", file); err != nil {
		t.Fatalf("kubectl create: %v\n%s", err, stderr)
	}
	if got := mustKubectl(t, "get", "events.events.k8s.io", "-n", ns, "backoff", "-o", "jsonpath={.series.state}"); got != "Ongoing" {
		t.Errorf("series.state through kube-apiserver %q, want Ongoing", got)
	}
	if got := names(mustKubectl(t, "get", "events.events.k8s.io", "-n", ns, "--field-selector", "series.state=Ongoing", "-o", "name")); !slices.Equal(got, []string{"backoff"}) {
		t.Errorf("--field-selector series.state=Ongoing: %v", got)
	}
}

// TestClientGoEventsV1beta1ThroughKubeAPIServer creates, lists, updates,
// watches and deletes events with client-go's EventsV1beta1 client
// against kube-apiserver.
func TestClientGoEventsV1beta1ThroughKubeAPIServer(t *testing.T) {
	ns := newNamespace(t)
	ctx := testContext(t)
	events := adminClient(t).EventsV1beta1().Events(ns)

	w, err := events.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	created, err := events.Create(ctx, v1beta1Event(ns, "e1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.ReportingController != "example.com/controller" || created.Regarding.Name != "pod-e1" || created.UID == "" {
		t.Errorf("created %+v", created)
	}
	list, err := events.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "e1" {
		t.Fatalf("list: %+v", list.Items)
	}

	created.Series = &eventsv1beta1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(time.Now())}
	updated, err := events.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if err := events.Delete(ctx, "e1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}

	want := []struct {
		typ   watch.EventType
		count int32
	}{{watch.Added, 0}, {watch.Modified, 2}, {watch.Deleted, 2}}
	for _, w2 := range want {
		select {
		case got, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			event, isEvent := got.Object.(*eventsv1beta1.Event)
			if got.Type != w2.typ || !isEvent || event.Name != "e1" {
				t.Fatalf("watch: got %s %T, want %s of e1", got.Type, got.Object, w2.typ)
			}
			var count int32
			if event.Series != nil {
				count = event.Series.Count
			}
			if count != w2.count {
				t.Errorf("watch %s: series count %d, want %d", got.Type, count, w2.count)
			}
			if got.Type == watch.Modified && event.ResourceVersion != updated.ResourceVersion {
				t.Errorf("watch MODIFIED resourceVersion %s, want %s", event.ResourceVersion, updated.ResourceVersion)
			}
		case <-ctx.Done():
			t.Fatalf("no %s watch event", w2.typ)
		}
	}
	if _, err := events.Get(ctx, "e1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
}

// TestKubectlFieldSelectorsReachOurServer lists events through
// kube-apiserver with the field selectors of events.k8s.io. related.name
// and action are ones kube-apiserver's own events.k8s.io/v1 rejects, so
// their answers prove the request reached our server.
func TestKubectlFieldSelectorsReachOurServer(t *testing.T) {
	ns := newNamespace(t)
	ctx := testContext(t)
	events := adminClient(t).EventsV1beta1().Events(ns)
	for _, e := range []struct {
		name, regarding, related, action, controller string
	}{
		{"scheduled", "web-0", "node-a", "Binding", "default-scheduler"},
		{"pulled", "web-0", "", "Pulling", "kubelet"},
		{"preempted", "web-1", "web-0", "Preempting", "default-scheduler"},
	} {
		event := v1beta1Event(ns, e.name)
		event.Regarding.Name = e.regarding
		event.Action = e.action
		event.ReportingController = e.controller
		if e.related != "" {
			event.Related = &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: e.related, APIVersion: "v1"}
		}
		if _, err := events.Create(ctx, event, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", e.name, err)
		}
	}

	for _, c := range []struct {
		selector string
		want     []string
	}{
		{"regarding.name=web-0", []string{"pulled", "scheduled"}},
		{"regarding.name=web-1", []string{"preempted"}},
		{"related.name=web-0", []string{"preempted"}},
		{"related.name=node-a", []string{"scheduled"}},
		{"action=Pulling", []string{"pulled"}},
		{"reportingController=default-scheduler", []string{"preempted", "scheduled"}},
		{"reportingController=kubelet,regarding.name=web-0", []string{"pulled"}},
		{"action!=Binding", []string{"preempted", "pulled"}},
	} {
		t.Run(c.selector, func(t *testing.T) {
			got := names(mustKubectl(t, "get", "events.events.k8s.io", "-n", ns, "--field-selector", c.selector, "-o", "name"))
			if !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}

	// The same selectors at kube-apiserver's own version: unsupported.
	for _, selector := range []string{"related.name=web-0", "action=Pulling"} {
		_, stderr, err := framework.Kubectl(t, cluster.Kubeconfig, "get", "events.v1.events.k8s.io", "-n", ns, "--field-selector", selector)
		if err == nil || !strings.Contains(stderr, "field label not supported") {
			t.Errorf("kube-apiserver's events.k8s.io/v1 with --field-selector %s: err %v, stderr %q; want field label not supported", selector, err, stderr)
		}
	}
}

// TestKubectlGetEventSummariesThroughKubeAPIServer: the summaries' own
// APIService is served through kube-apiserver, and `kubectl get
// eventsummaries` prints a row per type, reason, kind and controller whose
// occurrences are the sum of the summed events' counts (a series counts
// each of its occurrences).
func TestKubectlGetEventSummariesThroughKubeAPIServer(t *testing.T) {
	ns := newNamespace(t)
	ctx := testContext(t)
	events := adminClient(t).EventsV1beta1().Events(ns)
	backOff := func(name, pod string, count int32) *eventsv1beta1.Event {
		e := v1beta1Event(ns, name)
		e.Type, e.Reason, e.Action, e.Note = "Warning", "BackOff", "Restarting", "back-off restarting failed container"
		e.Regarding.Name = pod
		if count > 1 {
			e.Series = &eventsv1beta1.EventSeries{Count: count, LastObservedTime: metav1.NewMicroTime(time.Now())}
		}
		return e
	}
	for _, e := range []*eventsv1beta1.Event{backOff("a", "web-0", 5), backOff("b", "web-1", 1), v1beta1Event(ns, "c")} {
		if _, err := events.Create(ctx, e, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var rows [][]string
	for i, line := range strings.Split(strings.TrimSpace(mustKubectl(t, "get", "eventsummaries", "-n", ns)), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 6 {
			t.Fatalf("kubectl get eventsummaries, line %d: %q", i, line)
		}
		rows = append(rows, fields[:6])
	}
	want := [][]string{
		{"TYPE", "REASON", "KIND", "CONTROLLER", "OCCURRENCES", "OBJECTS"},
		{"Warning", "BackOff", "Pod", "example.com/controller", "6", "2"},
		{"Normal", "Started", "Pod", "example.com/controller", "1", "1"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("kubectl get eventsummaries -n %s (-want +got):\n%s", ns, diff)
	}

	// The same sums from the events as listed.
	listed, err := events.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]int64{}
	for _, e := range listed.Items {
		n := int64(1)
		if e.Series != nil {
			n = int64(e.Series.Count)
		}
		sums[e.Type+"/"+e.Reason] += n
	}
	var summaries summariesv1alpha1.EventSummaryList
	if err := json.Unmarshal([]byte(mustKubectl(t, "get", "eventsummaries", "-n", ns, "-o", "json")), &summaries); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, s := range summaries.Items {
		got[s.Type+"/"+s.Reason] += s.Occurrences
	}
	if diff := cmp.Diff(sums, got); diff != "" {
		t.Errorf("occurrences by type and reason (-events +summaries):\n%s", diff)
	}
}
