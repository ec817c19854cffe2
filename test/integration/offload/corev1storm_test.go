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
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-events/events-apiserver/cmd/events-apiserver/app"
	"github.com/kube-events/events-apiserver/test/harness"
)

// The event policy of the core/v1 storm, tight enough that a storm of a few
// seconds meets every limit, and the generated configuration of
// kube-apiserver's EventRateLimit: Reporter as User, Object as
// SourceAndObject.
const (
	stormReporterQPS, stormReporterBurst   = 10, 50
	stormObjectQPS, stormObjectBurst       = 5, 20
	stormNamespaceQPS, stormNamespaceBurst = 20, 100
)

var stormPolicy = fmt.Sprintf(`apiVersion: eventpolicy.config.events.k8s.io/v1alpha1
kind: EventPolicy
limits:
- {type: Reporter, qps: %d, burst: %d}
- {type: Object, qps: %d, burst: %d}
- {type: Namespace, qps: %d, burst: %d}
`, stormReporterQPS, stormReporterBurst, stormObjectQPS, stormObjectBurst, stormNamespaceQPS, stormNamespaceBurst)

// The load: quiet writers, each a user of its own in a namespace of its
// own, below every limit, beside a storm offered at stormRate.
const (
	quietWriters  = 8
	quietInterval = 200 * time.Millisecond // 5 writes/s each
	stormRate     = 400                    // writes/s offered
	stormWorkers  = 16
	// The correlated storm: kubelets of stormNodes nodes reporting on
	// stormPods pods of one namespace.
	stormNodes, stormPods = 20, 100

	baselinePhase = 3 * time.Second
	stormPhase    = 4 * time.Second
)

// eventWriterGroup may create events; the test's writers impersonate its
// members, so that kube-apiserver's admission and flow control see users
// that are not system:masters.
const eventWriterGroup = "events-storm-writers"

// writeOutcome is what one phase's writers saw.
type writeOutcome struct {
	accepted, refused, failed int // 2xx, 429, other errors
	latencies                 []time.Duration
	elapsed                   time.Duration
}

func (o writeOutcome) String() string {
	return fmt.Sprintf("%d accepted, %d refused (429), %d failed, p50 %v, p99 %v",
		o.accepted, o.refused, o.failed,
		harness.Quantile(o.latencies, 0.5).Round(100*time.Microsecond), harness.Quantile(o.latencies, 0.99).Round(100*time.Microsecond))
}

// eventWriter creates core/v1 events through kube-apiserver as one user,
// without client-side rate limits or retries, so that every answer counts.
type eventWriter struct {
	client rest.Interface
}

func newEventWriter(t *testing.T, user string) *eventWriter {
	t.Helper()
	cfg := rest.CopyConfig(cluster.AdminConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{eventWriterGroup}}
	cfg.QPS = -1
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &eventWriter{client: client.CoreV1().RESTClient()}
}

// write creates a core/v1 event of source (component, host) about pod and
// adds its answer and latency to outcome.
func (w *eventWriter) write(ctx context.Context, namespace, component, host, pod string, mu *sync.Mutex, outcome *writeOutcome) {
	now := metav1.Now()
	event := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: pod + ".", Namespace: namespace},
		InvolvedObject: *podRef(namespace, pod),
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
		outcome.accepted++
		outcome.latencies = append(outcome.latencies, latency)
	case apierrors.IsTooManyRequests(err):
		outcome.refused++
	default:
		if ctx.Err() == nil {
			outcome.failed++
		}
	}
}

// stormWrite is one write of a storm: the i-th.
type stormWrite func(ctx context.Context, i int, mu *sync.Mutex, outcome *writeOutcome)

// runPhase runs the quiet writers for d and, when storm is set, a storm
// offered at stormRate beside them, and returns what each side saw.
func runPhase(ctx context.Context, quiet []*eventWriter, quietNamespaces []string, d time.Duration, storm stormWrite) (quietOutcome, stormOutcome writeOutcome) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for i, w := range quiet {
		wg.Go(func() {
			pod := fmt.Sprintf("quiet-%d", i)
			host := fmt.Sprintf("quiet-node-%d", i)
			_ = wait.PollUntilContextCancel(ctx, quietInterval, true, func(ctx context.Context) (bool, error) {
				w.write(ctx, quietNamespaces[i], "kubelet", host, pod, &mu, &quietOutcome)
				return false, nil
			})
		})
	}
	if storm != nil {
		limiter := rate.NewLimiter(stormRate, 1)
		var next int
		for range stormWorkers {
			wg.Go(func() {
				for limiter.Wait(ctx) == nil {
					mu.Lock()
					i := next
					next++
					mu.Unlock()
					storm(ctx, i, &mu, &stormOutcome)
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	quietOutcome.elapsed, stormOutcome.elapsed = elapsed, elapsed
	return quietOutcome, stormOutcome
}

// allowEventWrites lets eventWriterGroup create events everywhere.
func allowEventWrites(t *testing.T) {
	t.Helper()
	ctx := testContext(t)
	kube := kubeClient(t, cluster.AdminConfig)
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: eventWriterGroup},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}}},
	}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: eventWriterGroup},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: eventWriterGroup},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: eventWriterGroup}},
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// kubeEventRateLimitConfig writes the event policy and, with the server's
// kube-apiserver-eventratelimit command, kube-apiserver's admission
// configuration for it, and returns the latter's path.
func kubeEventRateLimitConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(stormPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := app.NewCommand(t.Context())
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{app.KubeEventRateLimitCommandName, "--event-policy-config=" + policy, "--admission-configuration"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%s: %v", app.KubeEventRateLimitCommandName, err)
	}
	config := filepath.Join(dir, "admission.yaml")
	if err := os.WriteFile(config, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver's admission configuration:\n%s", out.String())
	return config
}

// restartKubeAPIServer restarts kube-apiserver with flags and waits until
// it and our APIService answer again.
func restartKubeAPIServer(t *testing.T, flags map[string]string) {
	t.Helper()
	if err := cluster.RestartKubeAPIServer(flags); err != nil {
		t.Fatal(err)
	}
	kube := kubeClient(t, cluster.AdminConfig)
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := kube.Discovery().ServerResourcesForGroupVersion("events.k8s.io/v1beta1")
		return err == nil, nil
	}); err != nil {
		t.Fatalf("events.k8s.io/v1beta1 not served after restarting kube-apiserver: %v", err)
	}
}

// TestCoreV1StormThroughKubeAPIServer measures core/v1 storms written
// through kube-apiserver, which stores them in the events etcd past our
// admission, beside quiet writers: first as offload mode leaves them, then
// with kube-apiserver's EventRateLimit configured by
// kube-apiserver-eventratelimit from the event policy. With it, a storm's
// accepted writes stay within the limit that binds it and the quiet writers
// are never refused.
func TestCoreV1StormThroughKubeAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	allowEventWrites(t)
	config := kubeEventRateLimitConfig(t)

	quiet := make([]*eventWriter, quietWriters)
	quietNamespaces := make([]string, quietWriters)
	for i := range quiet {
		quiet[i] = newEventWriter(t, fmt.Sprintf("system:node:quiet-node-%d", i))
		quietNamespaces[i] = newNamespace(t)
	}
	nodes := make([]*eventWriter, stormNodes)
	for i := range nodes {
		nodes[i] = newEventWriter(t, fmt.Sprintf("system:node:storm-node-%d", i))
	}

	type phase struct {
		name  string
		storm func(namespace string) stormWrite
		// bound is the most writes the storm may have accepted in elapsed
		// with the protection: the burst and refill of the bucket that binds.
		bound func(elapsed time.Duration) int
	}
	within := func(qps, burst int) func(time.Duration) int {
		return func(elapsed time.Duration) int { return burst + int(float64(qps)*elapsed.Seconds()) + 1 }
	}
	phases := []phase{
		{name: "baseline"},
		{
			// One kubelet reporting on one pod: its User and SourceAndObject
			// buckets; the latter binds.
			name: "one reporter",
			storm: func(namespace string) stormWrite {
				return func(ctx context.Context, _ int, mu *sync.Mutex, outcome *writeOutcome) {
					nodes[0].write(ctx, namespace, "kubelet", "storm-node-0", "crashing", mu, outcome)
				}
			},
			bound: within(stormObjectQPS, stormObjectBurst),
		},
		{
			// Many kubelets reporting on many pods of one namespace: each
			// below its own budgets, the Namespace bucket binds.
			name: "correlated, one namespace",
			storm: func(namespace string) stormWrite {
				return func(ctx context.Context, i int, mu *sync.Mutex, outcome *writeOutcome) {
					node := i % stormNodes
					nodes[node].write(ctx, namespace, "kubelet", fmt.Sprintf("storm-node-%d", node), fmt.Sprintf("web-%d", i%stormPods), mu, outcome)
				}
			},
			bound: within(stormNamespaceQPS, stormNamespaceBurst),
		},
	}

	measure := func(t *testing.T, protected bool) {
		// Warm up connections and caches.
		runPhase(ctx, quiet, quietNamespaces, time.Second, nil)
		var baseline writeOutcome
		for _, p := range phases {
			d, stormWrites := baselinePhase, stormWrite(nil)
			if p.storm != nil {
				d, stormWrites = stormPhase, p.storm(newNamespace(t))
			}
			quietOutcome, stormOutcome := runPhase(ctx, quiet, quietNamespaces, d, stormWrites)
			if p.storm == nil {
				baseline = quietOutcome
				t.Logf("%s: quiet writers: %v", p.name, quietOutcome)
			} else {
				t.Logf("%s storm: %v in %v; quiet writers: %v (p99 %.2fx baseline)", p.name, stormOutcome, stormOutcome.elapsed.Round(time.Millisecond),
					quietOutcome, float64(harness.Quantile(quietOutcome.latencies, 0.99))/float64(harness.Quantile(baseline.latencies, 0.99)))
			}
			if quietOutcome.failed > 0 || stormOutcome.failed > 0 {
				t.Errorf("%s: %d quiet and %d storm writes failed other than 429", p.name, quietOutcome.failed, stormOutcome.failed)
			}
			if !protected {
				continue
			}
			if quietOutcome.refused > 0 {
				t.Errorf("%s: %d quiet writes refused, want none", p.name, quietOutcome.refused)
			}
			if p.storm == nil {
				continue
			}
			if bound := p.bound(stormOutcome.elapsed); stormOutcome.accepted > bound {
				t.Errorf("%s: %d storm writes accepted in %v, want at most %d", p.name, stormOutcome.accepted, stormOutcome.elapsed, bound)
			}
			if stormOutcome.refused == 0 {
				t.Errorf("%s: no storm write refused", p.name)
			}
		}
	}

	t.Run("offload as it is", func(t *testing.T) { measure(t, false) })
	t.Run("kube-apiserver's EventRateLimit", func(t *testing.T) {
		restartKubeAPIServer(t, map[string]string{
			"enable-admission-plugins":      "EventRateLimit",
			"admission-control-config-file": config,
		})
		t.Cleanup(func() {
			restartKubeAPIServer(t, map[string]string{"enable-admission-plugins": "", "admission-control-config-file": ""})
		})
		measure(t, true)
	})
}
