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
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/cmd/events-apiserver/app"
	"github.com/kube-events/events-apiserver/test/corev1storm"
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
)

// The phases' lengths: short in CI, which checks the bounds; longer, by
// hand, for latencies worth comparing (docs/storms.md).
var (
	baselinePhase = flag.Duration("corev1storm.baseline", 3*time.Second, "how long TestCoreV1StormThroughKubeAPIServer measures the quiet writers alone")
	stormPhase    = flag.Duration("corev1storm.storm", 4*time.Second, "how long each storm of TestCoreV1StormThroughKubeAPIServer lasts")
)

// newWriter is a core/v1 storm writer impersonating user.
func newWriter(t *testing.T, user string) *corev1storm.Writer {
	t.Helper()
	w, err := corev1storm.NewWriter(cluster.AdminConfig, user)
	if err != nil {
		t.Fatal(err)
	}
	return w
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
	cmd := app.NewCommand(t.Context(), &app.MemoryLimit{})
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
// kube-apiserver-eventratelimit from the event policy, then with a
// validating webhook applying the same limits instead (limitingWebhook).
// With either, a storm's accepted writes stay within the limit that binds
// it and the quiet writers are never refused.
func TestCoreV1StormThroughKubeAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute+3*(*baselinePhase+2*(*stormPhase)))
	defer cancel()
	if err := corev1storm.AllowWrites(ctx, kubeClient(t, cluster.AdminConfig)); err != nil {
		t.Fatal(err)
	}
	config := kubeEventRateLimitConfig(t)

	load := corev1storm.Load{QuietInterval: quietInterval, StormRate: stormRate, StormWorkers: stormWorkers}
	for i := range quietWriters {
		load.Quiet = append(load.Quiet, newWriter(t, fmt.Sprintf("system:node:quiet-node-%d", i)))
		load.Namespaces = append(load.Namespaces, newNamespace(t))
	}
	nodes := make([]*corev1storm.Writer, stormNodes)
	for i := range nodes {
		nodes[i] = newWriter(t, fmt.Sprintf("system:node:storm-node-%d", i))
	}

	type phase struct {
		name  string
		storm func(namespace string) corev1storm.StormWrite
		// bound is the most writes the storm may have accepted in elapsed
		// with the protection: the burst and refill of the bucket that binds.
		bound func(elapsed time.Duration) int
	}
	phases := []phase{
		{name: "baseline"},
		{
			// One kubelet reporting on one pod: its User and SourceAndObject
			// buckets; the latter binds.
			name: "one reporter",
			storm: func(namespace string) corev1storm.StormWrite {
				return func(ctx context.Context, _ int, mu *sync.Mutex, outcome *corev1storm.Outcome) {
					nodes[0].Write(ctx, namespace, "kubelet", "storm-node-0", "crashing", mu, outcome)
				}
			},
			bound: corev1storm.WithinBucket(stormObjectQPS, stormObjectBurst),
		},
		{
			// Many kubelets reporting on many pods of one namespace: each
			// below its own budgets, the Namespace bucket binds.
			name: "correlated, one namespace",
			storm: func(namespace string) corev1storm.StormWrite {
				return func(ctx context.Context, i int, mu *sync.Mutex, outcome *corev1storm.Outcome) {
					node := i % stormNodes
					nodes[node].Write(ctx, namespace, "kubelet", fmt.Sprintf("storm-node-%d", node), fmt.Sprintf("web-%d", i%stormPods), mu, outcome)
				}
			},
			bound: corev1storm.WithinBucket(stormNamespaceQPS, stormNamespaceBurst),
		},
	}

	measure := func(t *testing.T, protected bool) {
		// Warm up connections and caches.
		load.Run(ctx, time.Second, nil)
		var baseline corev1storm.Outcome
		for _, p := range phases {
			d, stormWrites := *baselinePhase, corev1storm.StormWrite(nil)
			if p.storm != nil {
				d, stormWrites = *stormPhase, p.storm(newNamespace(t))
			}
			quietOutcome, stormOutcome := load.Run(ctx, d, stormWrites)
			if p.storm == nil {
				baseline = quietOutcome
				t.Logf("%s: quiet writers: %v", p.name, quietOutcome)
			} else {
				t.Logf("%s storm: %v in %v; quiet writers: %v (p99 %.2fx baseline)", p.name, stormOutcome, stormOutcome.Elapsed.Round(time.Millisecond),
					quietOutcome, corev1storm.Ratio(quietOutcome, baseline))
			}
			if quietOutcome.Failed > 0 || stormOutcome.Failed > 0 {
				t.Errorf("%s: %d quiet and %d storm writes failed other than 429", p.name, quietOutcome.Failed, stormOutcome.Failed)
			}
			if !protected {
				continue
			}
			if quietOutcome.Refused > 0 {
				t.Errorf("%s: %d quiet writes refused, want none", p.name, quietOutcome.Refused)
			}
			if p.storm == nil {
				continue
			}
			if bound := p.bound(stormOutcome.Elapsed); stormOutcome.Accepted > bound {
				t.Errorf("%s: %d storm writes accepted in %v, want at most %d", p.name, stormOutcome.Accepted, stormOutcome.Elapsed, bound)
			}
			if stormOutcome.Refused == 0 {
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
	t.Run("a validating webhook with the same limits", func(t *testing.T) {
		registerLimitingWebhook(t, ctx)
		measure(t, true)
	})
}
