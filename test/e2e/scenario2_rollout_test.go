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
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// serverNamespace and serverSelector find the installed server's pods.
const (
	serverNamespace = "events-apiserver"
	serverSelector  = "app.kubernetes.io/name=events-apiserver,app.kubernetes.io/component=apiserver"
)

// leaders returns the running server pods whose log says they lead now
// (their last leadership line is "Became leader"), read from the kubelet's
// pod log directory.
func leaders(ctx context.Context) ([]string, error) {
	c := suite.cluster
	pods, err := c.Client.CoreV1().Pods(serverNamespace).List(ctx, metav1.ListOptions{LabelSelector: serverSelector})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		leading, err := leadsPerLog(c.path("pod-logs", fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID)))
		if err != nil {
			return nil, err
		}
		if leading {
			out = append(out, p.Name)
		}
	}
	return out, nil
}

// leadsPerLog reads a pod's container logs for the last leadership line.
func leadsPerLog(podLogDir string) (bool, error) {
	files, err := filepath.Glob(filepath.Join(podLogDir, "*", "*.log"))
	if err != nil || len(files) == 0 {
		return false, err
	}
	leading := false
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return false, err
		}
		s := bufio.NewScanner(f)
		s.Buffer(make([]byte, 1<<20), 1<<20)
		for s.Scan() {
			switch line := s.Text(); {
			case strings.Contains(line, `"Became leader"`):
				leading = true
			case strings.Contains(line, `"Stopped leading"`), strings.Contains(line, `"Lost leadership`):
				leading = false
			}
		}
		f.Close()
	}
	return leading, nil
}

// waitOneLeader waits until exactly one running replica leads, and
// returns it.
func waitOneLeader(t *testing.T, ctx context.Context, timeout time.Duration) string {
	t.Helper()
	var got []string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		got, err = leaders(ctx)
		return err == nil && len(got) == 1, nil
	})
	if err != nil {
		t.Fatalf("want exactly one leading replica, got %v", got)
	}
	return got[0]
}

// churn writes events through the aggregator at a steady pace and keeps
// the names of the acknowledged ones; a watch (client-go's RetryWatcher,
// which resumes from the last resourceVersion) records what it delivers.
type churn struct {
	namespace string
	mu        sync.Mutex
	acked     []string
	failed    int
	seen      map[string]bool
	watchErrs int
	firstFail time.Time
	lastFail  time.Time
	lastErr   error
}

func (ch *churn) write(ctx context.Context, interval time.Duration) {
	client := suite.cluster.Client.EventsV1beta1().Events(ch.namespace)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		name := fmt.Sprintf("churn-%05d", i)
		// Each regards an object of its own: isomorphic creates would be
		// folded into one stored event (README "Storms").
		created, err := client.Create(ctx, &eventsv1beta1.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: name, Namespace: ch.namespace},
			EventTime:           metav1.NowMicro(),
			ReportingController: "e2e.events.k8s.io/churn",
			ReportingInstance:   "e2e",
			Action:              "Write",
			Reason:              "Churn",
			Type:                corev1.EventTypeNormal,
			Note:                "an event written while the server rolls",
			Regarding:           corev1.ObjectReference{Kind: "ConfigMap", Namespace: ch.namespace, Name: name, APIVersion: "v1"},
		}, metav1.CreateOptions{})
		ch.mu.Lock()
		if err == nil {
			// The name the server answered: the stored event's.
			ch.acked = append(ch.acked, created.Name)
		} else if ctx.Err() == nil {
			ch.failed++
			if ch.firstFail.IsZero() {
				ch.firstFail = time.Now()
			}
			ch.lastFail = time.Now()
			ch.lastErr = err
		}
		ch.mu.Unlock()
	}
}

func (ch *churn) watch(ctx context.Context, resourceVersion string) error {
	client := suite.cluster.Client.EventsV1beta1().Events(ch.namespace)
	w, err := watchtools.NewRetryWatcherWithContext(ctx, resourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.Watch(ctx, o)
		},
	})
	if err != nil {
		return err
	}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				ch.mu.Lock()
				if e, isEvent := ev.Object.(*eventsv1beta1.Event); isEvent && (ev.Type == watch.Added || ev.Type == watch.Modified) {
					ch.seen[e.Name] = true
				} else if ev.Type == watch.Error {
					ch.watchErrs++
				}
				ch.mu.Unlock()
			}
		}
	}()
	return nil
}

// TestRolloutAndPodLoss: `kubectl rollout restart` of the
// server and the loss of the elected replica's pod while events are
// written and watched: every acknowledged event is stored and delivered,
// the watch resumes, and the controllers run on exactly one replica after.
func TestRolloutAndPodLoss(t *testing.T) {
	ctx := context.Background()
	c := suite.cluster
	if _, err := c.Client.AppsV1().Deployments(serverNamespace).Get(ctx, "events-apiserver", metav1.GetOptions{}); err != nil {
		t.Fatalf("the server is not installed (TestDefaultOverlay runs first): %v", err)
	}
	ch := &churn{namespace: "e2e-churn", seen: map[string]bool{}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ch.namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	list, err := c.Client.EventsV1beta1().Events(ch.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	writeCtx, stopWrites := context.WithCancel(ctx)
	defer stopWrites()
	if err := ch.watch(watchCtx, list.ResourceVersion); err != nil {
		t.Fatal(err)
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		ch.write(writeCtx, 50*time.Millisecond)
	}()

	before := waitOneLeader(t, ctx, time.Minute)
	start := time.Now()
	mustKubectl(t, ctx, "-n", serverNamespace, "rollout", "restart", "deployment/events-apiserver")
	mustKubectl(t, ctx, "-n", serverNamespace, "rollout", "status", "deployment/events-apiserver", "--timeout=5m")
	rolled := time.Since(start)
	afterRollout := waitOneLeader(t, ctx, 2*time.Minute)
	logf(t, "rollout restart: %s; leader %s before, %s after", rolled.Round(time.Millisecond), before, afterRollout)

	// Lose the elected replica's pod.
	start = time.Now()
	mustKubectl(t, ctx, "-n", serverNamespace, "delete", "pod", afterRollout, "--wait=false")
	var next []string
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		next, err = leaders(ctx)
		return err == nil && len(next) == 1 && next[0] != afterRollout, nil
	}); err != nil {
		t.Fatalf("no other replica took over after %s was deleted: leaders %v", afterRollout, next)
	}
	failover := time.Since(start)
	mustKubectl(t, ctx, "-n", serverNamespace, "rollout", "status", "deployment/events-apiserver", "--timeout=5m")
	logf(t, "deleted leader %s: %s took over in %s", afterRollout, next[0], failover.Round(time.Millisecond))

	// A few more seconds of writes against the settled Deployment.
	settled := time.Now()
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, false, func(context.Context) (bool, error) {
		ch.mu.Lock()
		defer ch.mu.Unlock()
		return time.Since(settled) > 5*time.Second && len(ch.acked) > 0, nil
	}); err != nil {
		ch.mu.Lock()
		defer ch.mu.Unlock()
		t.Fatalf("no write acknowledged (%d refused, the last with %v)", ch.failed, ch.lastErr)
	}
	stopWrites()
	<-writerDone

	ch.mu.Lock()
	acked := append([]string(nil), ch.acked...)
	failed, firstFail, lastFail, lastErr := ch.failed, ch.firstFail, ch.lastFail, ch.lastErr
	ch.mu.Unlock()
	stored, err := c.Client.EventsV1beta1().Events(ch.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inStore := map[string]bool{}
	for _, e := range stored.Items {
		inStore[e.Name] = true
	}
	var lost, unseen []string
	for _, name := range acked {
		if !inStore[name] {
			lost = append(lost, name)
		}
	}
	// The watch, started before the rollout, delivers every acknowledged
	// event, resuming across both losses of its server.
	_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		ch.mu.Lock()
		defer ch.mu.Unlock()
		unseen = unseen[:0]
		for _, name := range acked {
			if !ch.seen[name] {
				unseen = append(unseen, name)
			}
		}
		return len(unseen) == 0, nil
	})
	stopWatch()
	ch.mu.Lock()
	watchErrs := ch.watchErrs
	ch.mu.Unlock()
	failWindow := time.Duration(0)
	if failed > 0 {
		failWindow = lastFail.Sub(firstFail)
	}
	logf(t, "churn: %d events acknowledged, %d writes refused (over %s; the last with %v), %d stored, %d delivered to the watch (%d watch errors)",
		len(acked), failed, failWindow.Round(time.Millisecond), lastErr, len(inStore), len(acked)-len(unseen), watchErrs)
	if len(lost) > 0 {
		t.Errorf("%d acknowledged events lost: %v", len(lost), lost)
	}
	if len(unseen) > 0 {
		t.Errorf("%d acknowledged events never delivered to the resuming watch: %v", len(unseen), unseen)
	}
	final := waitOneLeader(t, ctx, time.Minute)
	logf(t, "controllers on exactly one replica: %s", final)
}
