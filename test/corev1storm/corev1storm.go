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

// Package corev1storm measures a storm of core/v1 event creates written
// through kube-apiserver beside quiet writers: what the storm got accepted
// and refused, and the quiet writers' latencies. Writers impersonate users
// that are not system:masters, so that kube-apiserver's admission
// (EventRateLimit) and flow control see them as they see kubelets. The
// offload integration test and the e2e suite run it.
package corev1storm

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-events/events-apiserver/test/harness"
)

// WriterGroup may create core/v1 events everywhere once AllowWrites has
// run; every Writer impersonates a member.
const WriterGroup = "events-storm-writers"

// AllowWrites lets WriterGroup create core/v1 events in every namespace.
func AllowWrites(ctx context.Context, admin kubernetes.Interface) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: WriterGroup},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}}},
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: WriterGroup},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: WriterGroup},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: WriterGroup}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// Outcome is what one side of a phase saw.
type Outcome struct {
	Accepted, Refused, Failed int // 2xx, 429, other errors
	Latencies                 []time.Duration
	Elapsed                   time.Duration
}

// P99 is the 99th percentile of the accepted writes' latencies.
func (o Outcome) P99() time.Duration { return harness.Quantile(o.Latencies, 0.99) }

func (o Outcome) String() string {
	return fmt.Sprintf("%d accepted, %d refused (429), %d failed, p50 %v, p99 %v",
		o.Accepted, o.Refused, o.Failed,
		harness.Quantile(o.Latencies, 0.5).Round(100*time.Microsecond), o.P99().Round(100*time.Microsecond))
}

// Ratio is a's p99 over b's.
func Ratio(a, b Outcome) float64 {
	if b.P99() == 0 {
		return 0
	}
	return float64(a.P99()) / float64(b.P99())
}

// Writer creates core/v1 events through kube-apiserver as one user, without
// client-side rate limits or retries, so that every answer counts.
type Writer struct {
	client rest.Interface
}

// NewWriter is a Writer impersonating user, a member of WriterGroup, with
// admin's credentials.
func NewWriter(admin *rest.Config, user string) (*Writer, error) {
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{WriterGroup}}
	cfg.QPS = -1
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Writer{client: client.CoreV1().RESTClient()}, nil
}

// Write creates a kubelet-like core/v1 event of source (component, host)
// about pod and adds its answer and latency to outcome, under mu.
func (w *Writer) Write(ctx context.Context, namespace, component, host, pod string, mu *sync.Mutex, outcome *Outcome) {
	now := metav1.Now()
	event := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pod + ".", Namespace: namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: namespace, Name: pod, UID: types.UID("uid-" + pod),
		},
		Reason:         "BackOff",
		Message:        "Back-off restarting failed container",
		Type:           corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: component, Host: host},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
	}
	start := time.Now()
	err := w.client.Post().Namespace(namespace).Resource("events").Body(event).MaxRetries(0).Do(ctx).Error()
	latency := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	switch {
	case err == nil:
		outcome.Accepted++
		outcome.Latencies = append(outcome.Latencies, latency)
	case apierrors.IsTooManyRequests(err):
		outcome.Refused++
	default:
		if ctx.Err() == nil {
			outcome.Failed++
		}
	}
}

// StormWrite is the i-th write of a storm.
type StormWrite func(ctx context.Context, i int, mu *sync.Mutex, outcome *Outcome)

// Load is the quiet side of a phase and how hard a storm pushes.
type Load struct {
	// Quiet are the quiet writers, each writing about a pod of its own in
	// Namespaces[i], as kubelet quiet-node-<i>, every QuietInterval.
	Quiet         []*Writer
	Namespaces    []string
	QuietInterval time.Duration
	// StormRate is the storm's writes offered per second, by StormWorkers
	// concurrent writers.
	StormRate    float64
	StormWorkers int
}

// Run runs the quiet writers for d and, when storm is set, a storm beside
// them, and returns what each side saw.
func (l Load) Run(ctx context.Context, d time.Duration, storm StormWrite) (quiet, stormed Outcome) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for i, w := range l.Quiet {
		wg.Go(func() {
			pod := fmt.Sprintf("quiet-%d", i)
			host := fmt.Sprintf("quiet-node-%d", i)
			_ = wait.PollUntilContextCancel(ctx, l.QuietInterval, true, func(ctx context.Context) (bool, error) {
				w.Write(ctx, l.Namespaces[i], "kubelet", host, pod, &mu, &quiet)
				return false, nil
			})
		})
	}
	if storm != nil {
		limiter := rate.NewLimiter(rate.Limit(l.StormRate), 1)
		var next int
		for range l.StormWorkers {
			wg.Go(func() {
				for limiter.Wait(ctx) == nil {
					mu.Lock()
					i := next
					next++
					mu.Unlock()
					storm(ctx, i, &mu, &stormed)
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	quiet.Elapsed, stormed.Elapsed = elapsed, elapsed
	return quiet, stormed
}

// WithinBucket is the most writes a token bucket of qps and burst lets
// through in elapsed.
func WithinBucket(qps, burst int) func(elapsed time.Duration) int {
	return func(elapsed time.Duration) int { return burst + int(float64(qps)*elapsed.Seconds()) + 1 }
}
