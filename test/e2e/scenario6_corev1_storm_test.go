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
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kube-events/events-apiserver/test/corev1storm"
)

// The core/v1 storm: quiet kubelets, each reporting on a pod of its own
// namespace, and one kubelet reporting on a crash-looping pod, under the
// built-in event policy the install runs with: Object (kube-apiserver's
// SourceAndObject) binds it. The storm comes at the most a kubelet's own
// client limits let through (--event-qps, 50 by default), then at four
// times that.
const (
	stormQuietWriters  = 8
	stormQuietInterval = 200 * time.Millisecond // 5 writes/s each
	stormWorkers       = 16
	stormPhase         = 15 * time.Second
	// The built-in policy's Object limit.
	stormObjectQPS, stormObjectBurst = 10, 100
)

// stormRates are the storms' writes offered per second.
var stormRates = []int{50, 200}

// kubeAPIServerEventRateLimit is the admission configuration of
// kube-apiserver's EventRateLimit for the built-in event policy, as the
// release's image prints it (events-apiserver
// kube-apiserver-eventratelimit --admission-configuration) in a pod, the
// way an operator without the binary at hand gets it.
func kubeAPIServerEventRateLimit(t *testing.T, ctx context.Context) string {
	t.Helper()
	const ns, pod = "e2e-eventratelimit", "print-config"
	ensureNamespace(t, ctx, ns)
	applyYAML(t, ctx, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: print
    image: %s
    imagePullPolicy: IfNotPresent
    args: [kube-apiserver-eventratelimit, --admission-configuration]
`, pod, ns, serverImage))
	out := succeededPodOutput(t, ctx, ns, pod, 3*time.Minute)
	config := suite.cluster.path("eventratelimit.yaml")
	if err := os.WriteFile(config, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	logf(t, "kube-apiserver's admission configuration, printed by the release:\n%s", out)
	mustKubectl(t, ctx, "delete", "namespace", ns, "--wait=false")
	return config
}

// restartAPIServer restarts kube-apiserver with flags in place of those of
// offload mode, and, if it does not become ready with them, with those
// again, for the scenarios after.
func restartAPIServer(t *testing.T, ctx context.Context, flags []string) {
	t.Helper()
	c := suite.cluster
	if err := c.RestartAPIServer(ctx, flags...); err != nil {
		log := c.Tail("kube-apiserver", 30)
		if err := c.RestartAPIServer(ctx, offload.apiServerFlags...); err != nil {
			t.Errorf("restarting kube-apiserver with the flags of offload mode again: %v", err)
		}
		t.Fatalf("restarting kube-apiserver with %v: %v\n%s", flags, err, log)
	}
}

// eventRateLimitFlags are kube-apiserver's flags that turn EventRateLimit
// on with config.
func eventRateLimitFlags(config string) []string {
	return []string{"--enable-admission-plugins=EventRateLimit", "--admission-control-config-file=" + config}
}

// TestCoreV1StormInOffload: in offload mode kube-apiserver stores core/v1
// events (the kubelet's) straight into the events etcd, past the server's
// admission. A kubelet storming one pod's events beside quiet kubelets,
// first as offload leaves it, then with kube-apiserver's EventRateLimit
// configured from the event policy by the release's own command: with it,
// the storm's accepted writes stay within the policy's Object limit and no
// quiet write is refused. The quiet writers' p99 against their baseline is
// printed for docs/storms.md.
func TestCoreV1StormInOffload(t *testing.T) {
	ctx := context.Background()
	c := suite.cluster
	if offload.install == "" {
		t.Fatal("offload mode is not installed: run TestOffloadOverlay first")
	}
	if err := corev1storm.AllowWrites(ctx, c.Client); err != nil {
		t.Fatal(err)
	}
	config := kubeAPIServerEventRateLimit(t, ctx)

	load := corev1storm.Load{QuietInterval: stormQuietInterval, StormWorkers: stormWorkers}
	for i := range stormQuietWriters {
		w, err := corev1storm.NewWriter(c.Admin, fmt.Sprintf("system:node:quiet-node-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		ns := fmt.Sprintf("e2e-quiet-%d", i)
		ensureNamespace(t, ctx, ns)
		load.Quiet, load.Namespaces = append(load.Quiet, w), append(load.Namespaces, ns)
	}
	const stormNamespace = "e2e-corev1-storm"
	ensureNamespace(t, ctx, stormNamespace)

	measure := func(t *testing.T, protected bool) {
		load.Run(ctx, 2*time.Second, nil) // connections and caches warm
		baseline, _ := load.Run(ctx, stormPhase, nil)
		logf(t, "baseline: quiet writers %v", baseline)
		if n := baseline.Failed; n > 0 {
			t.Errorf("%d quiet writes failed", n)
		}
		if protected && baseline.Refused > 0 {
			t.Errorf("%d quiet writes refused, want none", baseline.Refused)
		}
		for _, rate := range stormRates {
			// A kubelet and a pod of each storm's own: each starts with
			// full buckets.
			node, pod := fmt.Sprintf("storm-node-%d-%t", rate, protected), fmt.Sprintf("crashing-%d", rate)
			kubelet, err := corev1storm.NewWriter(c.Admin, "system:node:"+node)
			if err != nil {
				t.Fatal(err)
			}
			storm := func(ctx context.Context, _ int, mu *sync.Mutex, outcome *corev1storm.Outcome) {
				kubelet.Write(ctx, stormNamespace, "kubelet", node, pod, mu, outcome)
			}
			phase := load
			phase.StormRate = float64(rate)
			quiet, stormed := phase.Run(ctx, stormPhase, storm)
			logf(t, "storm of one kubelet offered %d/s: %v in %v; quiet writers %v; quiet p99 %.2fx baseline",
				rate, stormed, stormed.Elapsed.Round(time.Millisecond), quiet, corev1storm.Ratio(quiet, baseline))
			if n := quiet.Failed + stormed.Failed; n > 0 {
				t.Errorf("%d/s: %d writes failed other than 429", rate, n)
			}
			if !protected {
				continue
			}
			if quiet.Refused > 0 {
				t.Errorf("%d/s: %d quiet writes refused, want none", rate, quiet.Refused)
			}
			if bound := corev1storm.WithinBucket(stormObjectQPS, stormObjectBurst)(stormed.Elapsed); stormed.Accepted > bound {
				t.Errorf("%d/s: the storm got %d writes accepted in %v, want at most the Object limit's %d", rate, stormed.Accepted, stormed.Elapsed, bound)
			}
			if stormed.Refused == 0 {
				t.Errorf("%d/s: no storm write refused", rate)
			}
		}
	}
	t.Run("offload as it is", func(t *testing.T) { measure(t, false) })
	t.Run("kube-apiserver's EventRateLimit", func(t *testing.T) {
		restart := time.Now()
		flags := slices.Concat(offload.apiServerFlags, eventRateLimitFlags(config))
		restartAPIServer(t, ctx, flags)
		mustKubectl(t, ctx, "wait", "--for=condition=Available", "apiservice/v1beta1.events.k8s.io", "--timeout=3m")
		logf(t, "kube-apiserver ready with EventRateLimit after %s", time.Since(restart).Round(time.Millisecond))
		offload.apiServerFlags = flags
		measure(t, true)
	})
}
