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
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestKilledWhileArchiving runs the server as a process of its own, kills
// it (SIGKILL) while clients create events and the archiver appends them,
// starts it again on the same data, and checks, once every event has
// expired from the live store, that every acknowledged create is in the
// history exactly once.
func TestKilledWhileArchiving(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the server")
	}
	const ttl = 10 * time.Second
	ctx := ctxFor(t)
	binary, err := harness.BuildServer(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	etcd := framework.StartEtcd(t)
	dataDir := t.TempDir()
	args := []string{"--etcd-servers=" + strings.Join(etcd.Endpoints, ","), "--archive=embedded",
		"--event-ttl=" + ttl.String(), "--embedded-etcd-log-level=error"}
	p, err := harness.StartServer(ctx, binary, dataDir, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })
	namespace := namespaceFor(t)
	c := clientset(t, p.RestConfig, runtime.ContentTypeProtobuf)

	// Writers create events until told to stop; the kill lands among them.
	var (
		mu           sync.Mutex
		acknowledged = map[string]string{}
		wg           sync.WaitGroup
	)
	stop := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("w%d-%05d", w, i)
				e := &eventsv1.Event{
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
					EventTime:  metav1.NowMicro(), Reason: "Load", Type: "Normal", Action: "Loading",
					ReportingController: "load", ReportingInstance: "load-0",
					// One object per event: no two events are of one series,
					// which the server would fold into one.
					Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: "pod-" + name, APIVersion: "v1"},
				}
				reqCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
				created, err := c.EventsV1().Events(namespace).Create(reqCtx, e, metav1.CreateOptions{})
				cancel()
				if err == nil {
					mu.Lock()
					acknowledged[name] = created.ResourceVersion
					mu.Unlock()
				}
			}
		})
	}
	// Kill while the writes go on, once the archiver has checkpointed some
	// of them: the states after the checkpoint are appended and not yet
	// durable, or not yet appended.
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acknowledged)
	}
	if err := waitPoll(ctx, time.Minute, func() bool { return count() >= 300 }); err != nil {
		t.Fatalf("load did not reach 300 creates: %v", err)
	}
	first := checkpoint(ctx, t, etcd).Revision
	if err := waitPoll(ctx, time.Minute, func() bool { return checkpoint(ctx, t, etcd).Revision > first && count() >= 600 }); err != nil {
		t.Fatalf("the checkpoint did not move under load: %v", err)
	}
	if metrics, err := p.Metrics(ctx); err == nil {
		t.Logf("archiver under load: %v states appended, delay to the archive ≤ 0.1s for %v of %v batches, ≤ 1s for %v; lag %vs, %v revisions",
			metrics["events_apiserver_archive_appended_records_total"],
			metrics[`events_apiserver_archive_append_delay_seconds_bucket{le="0.1"}`],
			metrics["events_apiserver_archive_append_delay_seconds_count"],
			metrics[`events_apiserver_archive_append_delay_seconds_bucket{le="1"}`],
			metrics["events_apiserver_archive_lag_seconds"], metrics["events_apiserver_archive_lag_revisions"])
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d creates acknowledged before the kill", len(acknowledged))

	// The killed server left its kubeconfig behind; the new one writes its own.
	if err := os.Remove(filepath.Join(dataDir, "kubeconfig")); err != nil {
		t.Fatal(err)
	}
	p, err = harness.StartServer(ctx, binary, dataDir, args...)
	if err != nil {
		t.Fatal(err)
	}
	c = clientset(t, p.RestConfig, runtime.ContentTypeProtobuf)
	waitExpired(ctx, t, c, namespace, 10*ttl)

	var names map[string]int
	err = waitPoll(ctx, time.Minute, func() bool {
		names = map[string]int{}
		opts := metav1.ListOptions{FieldSelector: "history.since=1h", Limit: 500}
		for {
			list, err := c.EventsV1().Events(namespace).List(ctx, opts)
			if err != nil {
				t.Logf("history list: %v", err)
				return false
			}
			for _, e := range list.Items {
				names[e.Name]++
			}
			if list.Continue == "" {
				break
			}
			opts.Continue = list.Continue
		}
		return len(names) >= len(acknowledged)
	})
	var missing, twice []string
	for name, rv := range acknowledged {
		if names[name] == 0 {
			missing = append(missing, name+"@"+rv)
		}
	}
	for name, n := range names {
		if n > 1 {
			twice = append(twice, name)
		}
	}
	if err != nil || len(missing) > 0 || len(twice) > 0 {
		t.Errorf("history after the kill: %d events for %d acknowledged; missing %d %v; more than once %d %v",
			len(names), len(acknowledged), len(missing), head(missing), len(twice), head(twice))
	}
}

func head(s []string) []string { return s[:min(len(s), 10)] }
