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

package e2e

import (
	"context"
	"flag"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/pager"
)

// archiveOutage is how long TestVictoriaLogsOutage holds VictoriaLogs down.
var archiveOutage = flag.Duration("e2e.archive-outage", 5*time.Minute, "how long TestVictoriaLogsOutage keeps the VictoriaLogs StatefulSet scaled to 0")

// archiveStatefulSet is the default overlay's VictoriaLogs.
const archiveStatefulSet = "events-victorialogs"

// TestVictoriaLogsOutage: VictoriaLogs scaled to 0 for -e2e.archive-outage
// (5m by default) under a paced create load. A dependency outage restarts
// nothing: the server pods' restartCount does not move, the live API
// answers throughout, history lists answer 503 meanwhile, and once
// VictoriaLogs is back every acknowledged create is in the history, once,
// read from the archive alone (the live events are deleted first).
func TestVictoriaLogsOutage(t *testing.T) {
	ctx := context.Background()
	c := suite.cluster
	if _, err := c.Client.AppsV1().StatefulSets(serverNamespace).Get(ctx, archiveStatefulSet, metav1.GetOptions{}); err != nil {
		t.Fatalf("the default overlay is not installed (TestDefaultOverlay runs first): %v", err)
	}
	restarts := func() map[string]int32 {
		t.Helper()
		pods, err := c.Client.CoreV1().Pods(serverNamespace).List(ctx, metav1.ListOptions{LabelSelector: serverSelector})
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]int32{}
		for _, p := range pods.Items {
			for _, s := range p.Status.ContainerStatuses {
				counts[p.Name] += s.RestartCount
			}
		}
		return counts
	}
	before := restarts()
	logf(t, "server pods' restartCount before the outage: %v", before)

	ch := &churn{namespace: "e2e-archive-outage", seen: map[string]bool{}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ch.namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	events := c.Client.EventsV1beta1().Events(ch.namespace)
	writeCtx, stopWrites := context.WithCancel(ctx)
	defer stopWrites()
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		ch.write(writeCtx, 100*time.Millisecond)
	}()

	mustKubectl(t, ctx, "-n", serverNamespace, "scale", "statefulset/"+archiveStatefulSet, "--replicas=0")
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Client.CoreV1().Pods(serverNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + archiveStatefulSet})
		return err == nil && len(pods.Items) == 0, nil
	}); err != nil {
		t.Fatalf("VictoriaLogs' pod still there after scaling to 0: %v", err)
	}
	down := time.Now()
	logf(t, "VictoriaLogs down; holding it down for %s", *archiveOutage)

	// Every 5 s while it is down: a live list, which must answer, and a
	// history list, which must answer 503.
	var liveLists, liveFailures, history503, historyOther int
	var lastLiveErr, lastHistoryErr error
	tick := time.NewTicker(5 * time.Second)
	for ; time.Since(down) < *archiveOutage; <-tick.C {
		reqCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := events.List(reqCtx, metav1.ListOptions{Limit: 100})
		liveLists++
		if err != nil {
			liveFailures++
			lastLiveErr = err
		}
		_, err = events.List(reqCtx, metav1.ListOptions{FieldSelector: "history.since=1h", Limit: 100})
		cancel()
		if status, ok := err.(apierrors.APIStatus); ok && status.Status().Code == http.StatusServiceUnavailable {
			history503++
		} else {
			historyOther++
			lastHistoryErr = err
		}
	}
	tick.Stop()
	logf(t, "during the outage: %d live lists, %d failed (last: %v); %d history lists answered 503, %d otherwise (last: %v)",
		liveLists, liveFailures, lastLiveErr, history503, historyOther, lastHistoryErr)
	if liveFailures > 0 {
		t.Errorf("%d of %d live lists failed while VictoriaLogs was down, the last with %v", liveFailures, liveLists, lastLiveErr)
	}
	if historyOther > 0 {
		t.Errorf("%d of %d history lists did not answer 503 while VictoriaLogs was down, the last with %v", historyOther, history503+historyOther, lastHistoryErr)
	}
	during := restarts()
	logf(t, "server pods' restartCount after %s without VictoriaLogs: %v", time.Since(down).Round(time.Second), during)

	mustKubectl(t, ctx, "-n", serverNamespace, "scale", "statefulset/"+archiveStatefulSet, "--replicas=1")
	mustKubectl(t, ctx, "-n", serverNamespace, "rollout", "status", "statefulset/"+archiveStatefulSet, "--timeout=5m")
	back := time.Now()
	// A few seconds of writes with the archive back, then stop.
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, false, func(context.Context) (bool, error) {
		return time.Since(back) > 5*time.Second, nil
	}); err != nil {
		t.Fatal(err)
	}
	stopWrites()
	<-writerDone
	ch.mu.Lock()
	acked := append([]string(nil), ch.acked...)
	failed, lastErr := ch.failed, ch.lastErr
	ch.mu.Unlock()
	logf(t, "creates: %d acknowledged, %d refused (the last with %v)", len(acked), failed, lastErr)
	if failed > 0 {
		t.Errorf("%d creates refused while VictoriaLogs was down or coming back, the last with %v", failed, lastErr)
	}

	// The history from the archive alone: the live events go first (their
	// states before the delete are in etcd's history, which compaction
	// keeps for the archiver), then every acknowledged create must come
	// back from a history list, once.
	if err := events.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	var missing, twice []string
	var archived int
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		counts := map[string]int{}
		lister := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = "history.since=1h"
			return events.List(ctx, o)
		})
		lister.PageSize = 500
		if err := lister.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
			accessor, err := meta.Accessor(obj)
			if err != nil {
				return err
			}
			counts[accessor.GetName()]++
			return nil
		}); err != nil {
			return false, nil // 503 while the archive warms up: ask again
		}
		missing, twice = missing[:0], twice[:0]
		for _, name := range acked {
			switch counts[name] {
			case 0:
				missing = append(missing, name)
			case 1:
			default:
				twice = append(twice, name)
			}
		}
		archived = len(counts)
		return len(missing) == 0, nil
	})
	after := restarts()
	logf(t, "history after VictoriaLogs came back (%s): %d events, %d of %d acknowledged missing, %d more than once; restartCount %v",
		time.Since(back).Round(time.Second), archived, len(missing), len(acked), len(twice), after)
	if err != nil || len(missing) > 0 {
		t.Errorf("%d acknowledged creates not in the history once VictoriaLogs was back: %v", len(missing), missing)
	}
	if len(twice) > 0 {
		t.Errorf("%d acknowledged creates more than once in the history: %v", len(twice), twice)
	}
	for pod, n := range after {
		if n != before[pod] {
			t.Errorf("server pod %s restarted: restartCount %d before the outage, %d after", pod, before[pod], n)
		}
	}
	if len(after) != len(before) {
		t.Errorf("server pods changed across the outage: %v before, %v after", before, after)
	}
}
