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
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-events/events-apiserver/pkg/archive/export"
	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// otlpPath is where VictoriaLogs takes OTLP logs.
const otlpPath = "/insert/opentelemetry/v1/logs"

// receivedRecords queries VictoriaLogs at vl for the records of namespace:
// each one's fields, as VictoriaLogs stores an OTLP log record.
func receivedRecords(ctx context.Context, t testing.TB, vl, namespace string) []map[string]string {
	t.Helper()
	query := url.Values{"query": {fmt.Sprintf("_time:1d %s:=%s", strconv.Quote(export.AttrNamespace), strconv.Quote(namespace))}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, vl+"/select/logsql/query?"+query.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("querying VictoriaLogs: %s", resp.Status)
	}
	var rows []map[string]string
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(nil, 1<<20)
	for scanner.Scan() {
		row := map[string]string{}
		if err := json.Unmarshal(scanner.Bytes(), &row); err != nil {
			t.Fatalf("VictoriaLogs row %q: %v", scanner.Text(), err)
		}
		rows = append(rows, row)
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestExportToVictoriaLogs runs the server with the export to
// VictoriaLogs' own OTLP ingestion, and checks every attribute of the
// mapping on the records VictoriaLogs received: an event with a series,
// a related object and a traceparent, and a core/v1 one.
func TestExportToVictoriaLogs(t *testing.T) {
	ctx := ctxFor(t)
	vl := startVictoriaLogs(t, "-storageDataPath="+t.TempDir(), "-retentionPeriod=30d")
	s, _ := historyServer(t, "embedded", time.Hour, "--export-otlp-endpoint="+vl+otlpPath, "--export-otlp-compression=gzip")
	namespace := namespaceFor(t)
	c := clientset(t, s.RestConfig, runtime.ContentTypeProtobuf)
	regarding := corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: "web-0", UID: "pod-uid", APIVersion: "v1",
		FieldPath: "spec.containers{app}", ResourceVersion: "7"}
	cases := createMappingEvents(ctx, t, c, namespace, regarding, nil)

	var rows []map[string]string
	if err := waitPoll(ctx, time.Minute, func() bool {
		rows = receivedRecords(ctx, t, vl, namespace)
		return len(rows) >= len(cases)
	}); err != nil {
		t.Fatalf("VictoriaLogs received %d records, want %d: %v", len(rows), len(cases), err)
	}
	checkMapping(t, cases, rows)
}

// mappingCase is an event written to check the export's mapping, and the
// fields its record must have, as VictoriaLogs flattens a record
// (harness.Record).
type mappingCase struct {
	name string
	want map[string]string
}

// createMappingEvents creates in namespace an events.k8s.io event about
// regarding with a series, a related object and a traceparent, and a
// core/v1 one about a node, and returns what their records must hold;
// chain is what the traced one's record holds of regarding's chain of
// owners (the server resolves it when it has a kube-apiserver).
func createMappingEvents(ctx context.Context, t testing.TB, c kubernetes.Interface, namespace string, regarding corev1.ObjectReference, chain map[string]string) []mappingCase {
	t.Helper()
	first := time.Now().Add(-time.Minute).Truncate(time.Microsecond).UTC()
	last := first.Add(30 * time.Second)
	created, err := c.EventsV1().Events(namespace).Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "traced", Namespace: namespace,
			Annotations: map[string]string{export.TraceparentAnnotation: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}},
		EventTime: metav1.NewMicroTime(first),
		Series:    &eventsv1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(last)},
		Regarding: regarding,
		Related:   &corev1.ObjectReference{Kind: "Node", Name: "node-1", UID: "node-uid", APIVersion: "v1"},
		Reason:    "BackOff", Note: "Back-off restarting failed container", Type: "Warning", Action: "Restarting",
		ReportingController: "kubelet", ReportingInstance: "kubelet-node-1",
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := c.CoreV1().Events(namespace).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "legacy", Namespace: namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Namespace: namespace, Name: "node-2", UID: "node-2-uid", APIVersion: "v1"},
		Reason:         "NodeReady", Message: "Node node-2 status is now: NodeReady", Type: "Normal",
		Source:              corev1.EventSource{Component: "kubelet", Host: "node-2"},
		ReportingController: "kubelet", ReportingInstance: "node-2",
		FirstTimestamp: metav1.NewTime(first.Truncate(time.Second)), LastTimestamp: metav1.NewTime(last.Truncate(time.Second)), Count: 1,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	traced := map[string]string{
		"_msg": "Back-off restarting failed container", "_time": last.Format(time.RFC3339Nano),
		"severity_text": "Warning", "severity_number": "13", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7",
		"k8s.event.type": "Warning", "k8s.event.reason": "BackOff", "k8s.event.action": "Restarting",
		"k8s.event.count": "3", "k8s.event.start_time": first.Format(time.RFC3339Nano), "k8s.event.series.state": "Ongoing",
		"k8s.event.reporting_controller": "kubelet", "k8s.event.reporting_instance": "kubelet-node-1",
		"k8s.object.kind": "Pod", "k8s.object.name": regarding.Name, "k8s.object.uid": string(regarding.UID), "k8s.object.api_version": "v1",
		"k8s.object.fieldpath": regarding.FieldPath, "k8s.object.resource_version": regarding.ResourceVersion,
		"k8s.pod.name": regarding.Name, "k8s.pod.uid": string(regarding.UID),
		"k8s.event.related.kind": "Node", "k8s.event.related.name": "node-1", "k8s.event.related.uid": "node-uid",
		"k8s.event.related.api_version": "v1",
	}
	maps.Copy(traced, chain)
	cases := []mappingCase{{name: "traced", want: traced}, {name: "legacy", want: map[string]string{
		"_msg": "Node node-2 status is now: NodeReady", "_time": last.Truncate(time.Second).Format(time.RFC3339Nano),
		"severity_text": "Normal", "severity_number": "9", "k8s.event.type": "Normal", "k8s.event.reason": "NodeReady", "k8s.event.count": "1",
		"k8s.event.start_time":           first.Truncate(time.Second).Format(time.RFC3339Nano),
		"k8s.event.reporting_controller": "kubelet", "k8s.event.reporting_instance": "node-2",
		"k8s.object.kind": "Node", "k8s.object.name": "node-2", "k8s.object.uid": "node-2-uid", "k8s.object.api_version": "v1",
		"k8s.node.name": "node-2", "k8s.node.uid": "node-2-uid",
	}}}
	for i, e := range []metav1.Object{created, legacy} {
		maps.Copy(cases[i].want, map[string]string{
			"log.record.uid": string(e.GetUID()) + "/" + e.GetResourceVersion(), "k8s.event.uid": string(e.GetUID()), "k8s.event.name": e.GetName(),
			"k8s.event.resource_version": e.GetResourceVersion(), "k8s.namespace.name": namespace, "service.name": "events-apiserver",
		})
	}
	return cases
}

// checkMapping checks the records received of cases: each one's fields
// that cases name.
func checkMapping(t *testing.T, cases []mappingCase, records []map[string]string) {
	t.Helper()
	byName := map[string]map[string]string{}
	for _, r := range records {
		byName[r[export.AttrEventName]] = r
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := byName[tc.name]
			if r == nil {
				t.Fatalf("no record of %s among %v", tc.name, records)
			}
			got := map[string]string{}
			for k := range tc.want {
				got[k] = r[k]
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("record (-want +got):\n%s\nwhole record: %v", diff, r)
			}
		})
	}
}

// TestExportFaults: the receiver unreachable under a paced create load,
// then back, and the server SIGKILLed while it sends the backlog and
// started again on its data. Every archived state of the load is received at
// least once (0 missing, counted against the archive: every acknowledged
// create), and the duplicates are at most one batch per interruption.
func TestExportFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the server")
	}
	const batch = 50
	ctx := ctxFor(t)
	binary, err := harness.BuildServer(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	vl := startVictoriaLogs(t, "-storageDataPath="+t.TempDir(), "-retentionPeriod=30d")
	link, err := framework.StartLink(strings.TrimPrefix(vl, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = link.Close() })
	etcd := framework.StartEtcd(t)
	dataDir := t.TempDir()
	args := []string{"--etcd-servers=" + strings.Join(etcd.Endpoints, ","), "--archive=embedded", "--embedded-etcd-log-level=error",
		"--export-otlp-endpoint=http://" + link.Addr() + otlpPath, "--export-batch-size=" + strconv.Itoa(batch), "--export-otlp-timeout=2s",
		// The restarted server leads once the killed one's lease ends.
		"--leader-elect-lease-duration=3s"}
	first, err := harness.StartServer(ctx, binary, dataDir, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Kill() })
	p := first
	namespace := namespaceFor(t)
	c := clientset(t, p.RestConfig, runtime.ContentTypeProtobuf)
	metric := func(name string, labels map[string]string) float64 {
		m, err := p.Metrics(ctx)
		if err != nil {
			return -1
		}
		return m.Value(name, labels)
	}

	l := startLoad(ctx, t, namespace, 2, 50, c)
	if err := waitPoll(ctx, time.Minute, func() bool {
		return metric("events_apiserver_export_exported_records_total", nil) >= 100
	}); err != nil {
		t.Fatalf("nothing exported: %v", err)
	}

	// The receiver unreachable while the load goes on.
	link.Cut()
	before := l.count()
	if err := waitPoll(ctx, time.Minute, func() bool {
		return metric("events_apiserver_export_requests_total", map[string]string{"result": "error"}) >= 3 && l.count() >= before+200
	}); err != nil {
		t.Fatalf("the export did not fail while the receiver was unreachable: %v", err)
	}
	lag := metric("events_apiserver_export_cursor_lag_revisions", nil)
	retried := metric("events_apiserver_export_retries_total", nil)

	// Back, and killed as soon as the receiver took the first batch of the
	// backlog: the next batches are in flight, read, sent or taken without
	// their cursor written.
	exported := metric("events_apiserver_export_exported_records_total", nil)
	link.Restore()
	if err := waitPoll(ctx, time.Minute, func() bool {
		return metric("events_apiserver_export_exported_records_total", nil) > exported
	}); err != nil {
		t.Fatalf("the export did not resume once the receiver was back: %v", err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	acknowledged, failed := l.halt()
	newest := int64(0)
	for _, rv := range acknowledged {
		newest = max(newest, rv)
	}
	// The killed server left its kubeconfig behind; the new one writes its own.
	if err := os.Remove(filepath.Join(dataDir, "kubeconfig")); err != nil {
		t.Fatal(err)
	}
	second, err := harness.StartServer(ctx, binary, dataDir, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = second.Kill() })
	p = second
	if err := waitPoll(ctx, 2*time.Minute, func() bool { return readCursor(ctx, etcd) >= newest }); err != nil {
		t.Fatalf("the export's cursor did not pass the last acknowledged create (%d): %v", newest, err)
	}

	// What VictoriaLogs received, against what was archived.
	var rows []map[string]string
	received := map[string]int{}
	missing := 0
	if err := waitPoll(ctx, time.Minute, func() bool {
		rows = receivedRecords(ctx, t, vl, namespace)
		clear(received)
		for _, row := range rows {
			received[row[export.AttrEventName]+"/"+row[export.AttrEventRV]]++
		}
		missing = 0
		for name, rv := range acknowledged {
			if received[name+"/"+strconv.FormatInt(rv, 10)] == 0 {
				missing++
			}
		}
		return missing == 0
	}); err != nil {
		t.Errorf("%d of %d acknowledged creates never received", missing, len(acknowledged))
	}
	duplicates := len(rows) - len(received)
	t.Logf("receiver unreachable: cursor lag %v revisions, %v retries; killed with %v states exported", lag, retried, exported)
	t.Logf("%d creates acknowledged (%d failed at the kill); %d records received, %d states, %d duplicates, %d missing",
		len(acknowledged), failed, len(rows), len(received), duplicates, missing)
	// One batch again after the kill; a batch the receiver took as the
	// link was cut, sent again after the outage.
	if limit := 2 * batch; duplicates > limit {
		t.Errorf("%d duplicates, more than one batch per interruption (%d)", duplicates, limit)
	}
}
