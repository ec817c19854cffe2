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

package series

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	watchtools "k8s.io/client-go/tools/watch"

	ourv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	"github.com/kube-events/events-apiserver/pkg/generated/clientset/versioned"
)

// callTimeout bounds each test's API calls and waits.
const callTimeout = 60 * time.Second

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	t.Cleanup(cancel)
	return ctx
}

// clients reach one server: upstream client-go (k8s.io/api types, which know
// nothing of series.state), and this repository's generated clientset,
// whose types carry series.state.
type clients struct {
	upstream kubernetes.Interface
	ours     versioned.Interface
}

func clientsFor(t *testing.T, cfg *rest.Config) clients {
	t.Helper()
	upstream, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return clients{upstream: upstream, ours: ours}
}

// recorder is an unmodified client-go tools/events recorder writing to the
// server through events.k8s.io/v1.
type recorder struct {
	events.EventRecorder
	stop func()
}

// ReportingController is what the tests' recorders report as.
const reportingController = "ctrl"

func startRecorder(t *testing.T, cfg *rest.Config) *recorder {
	t.Helper()
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	ctx, cancel := context.WithCancel(context.Background())
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	stopped := false
	r := &recorder{
		EventRecorder: broadcaster.NewRecorder(scheme.Scheme, reportingController),
		stop: func() {
			if !stopped {
				stopped = true
				cancel()
				broadcaster.Shutdown()
			}
		},
	}
	t.Cleanup(r.stop)
	return r
}

// pod is what the recorded events are about.
func pod(namespace string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "web-0", UID: "0b6e1a3c-5a1e-4c41-9d2b-2f3f1c0d9e01"},
	}
}

// waitForEvents polls the events of namespace (through the generated
// clientset, which shows series.state) until done accepts them.
func waitForEvents(t *testing.T, c clients, namespace string, what string, done func([]ourv1.Event) bool) []ourv1.Event {
	t.Helper()
	var items []ourv1.Event
	err := wait.PollUntilContextTimeout(testContext(t), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := c.ours.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		items = list.Items
		return done(items), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; events now: %s", what, err, describe(items))
	}
	return items
}

// expectNoWrite watches the events of namespace from resourceVersion for
// quiet and fails the test if any is written meanwhile.
func expectNoWrite(t *testing.T, c clients, namespace, resourceVersion string, quiet time.Duration) {
	t.Helper()
	w, err := c.ours.EventsV1().Events(namespace).Watch(testContext(t), metav1.ListOptions{ResourceVersion: resourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(testContext(t), quiet)
	defer cancel()
	got, err := watchtools.UntilWithoutRetry(ctx, w, func(watch.Event) (bool, error) { return true, nil })
	switch {
	case err == nil:
		t.Fatalf("%s written within %v of the expected last write: %+v", got.Type, quiet, got.Object)
	case !wait.Interrupted(err):
		t.Fatalf("watching events of %s: %v", namespace, err)
	}
}

func describe(items []ourv1.Event) string {
	var parts []string
	for _, e := range items {
		s := e.Name + " (singleton)"
		if e.Series != nil {
			s = fmt.Sprintf("%s (count %d, lastObservedTime %s, state %q)", e.Name, e.Series.Count,
				e.Series.LastObservedTime.UTC().Format(metav1.RFC3339Micro), e.Series.State)
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// writeFile writes contents to a file in a test directory and returns its path.
func writeFile(t *testing.T, dir, name, contents string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(contents), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
