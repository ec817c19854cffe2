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
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"

	ourcorev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	ourv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	"github.com/kube-events/events-apiserver/pkg/generated/clientset/versioned"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

func kubeClient(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	return framework.KubeClient(t, cfg)
}

// newNamespace creates a namespace for one test in kube-apiserver.
func newNamespace(t *testing.T) string {
	t.Helper()
	return cluster.NewNamespace(testContext(t), t, "offload-")
}

func podRef(namespace, name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: namespace, Name: name, UID: types.UID("uid-" + name)}
}

// waitForList polls list until it returns want names.
func waitForNames(t *testing.T, what string, want []string, list func(ctx context.Context) ([]string, error)) {
	t.Helper()
	var got []string
	err := wait.PollUntilContextTimeout(testContext(t), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		got, err = list(ctx)
		return err == nil && cmp.Equal(want, got), nil
	})
	if err != nil {
		t.Fatalf("%s: got %v, want %v: %v", what, got, want, err)
	}
}

// TestRecordersThroughKubeAPIServer records events with unmodified
// client-go through kube-apiserver (tools/record: core/v1; tools/events:
// events.k8s.io/v1) and reads them through our v1beta1 (aggregated) and v1
// (our server) with our selectors, on list and watch.
func TestRecordersThroughKubeAPIServer(t *testing.T) {
	ctx := testContext(t)
	namespace := newNamespace(t)
	kube := kubeClient(t, cluster.AdminConfig)
	ours := kubeClient(t, cluster.ServerConfig)

	// Watches with our selectors, opened before anything is written.
	v1beta1Watch, err := kube.EventsV1beta1().Events(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "related.name=node-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer v1beta1Watch.Stop()
	v1Watch, err := ours.EventsV1().Events(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "action=Binding,reportingController=offload-scheduler"})
	if err != nil {
		t.Fatal(err)
	}
	defer v1Watch.Stop()

	legacy := record.NewBroadcaster(record.WithContext(ctx))
	defer legacy.Shutdown()
	legacy.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	legacy.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "offload-kubelet", Host: "node-1"}).
		Eventf(podRef(namespace, "web-0"), corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container")

	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	defer broadcaster.Shutdown()
	broadcaster.NewRecorder(scheme.Scheme, "offload-scheduler").
		Eventf(podRef(namespace, "web-1"), &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: "node-1"},
			corev1.EventTypeNormal, "Scheduled", "Binding", "Successfully assigned %s/web-1 to node-1", namespace)

	for _, tc := range []struct {
		selector string
		want     []string // regarding names
	}{
		{"regarding.name=web-0", []string{"web-0"}},
		{"reportingController=offload-kubelet", []string{"web-0"}},
		{"type=Warning,reason=BackOff", []string{"web-0"}},
		{"related.name=node-1", []string{"web-1"}},
		{"action=Binding", []string{"web-1"}},
		{"reportingController=offload-scheduler,reportingInstance!=", []string{"web-1"}},
	} {
		t.Run("v1beta1 list "+tc.selector, func(t *testing.T) {
			waitForNames(t, "v1beta1 list "+tc.selector, tc.want, func(ctx context.Context) ([]string, error) {
				list, err := kube.EventsV1beta1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: tc.selector})
				if err != nil {
					return nil, err
				}
				var names []string
				for _, e := range list.Items {
					names = append(names, e.Regarding.Name)
				}
				return names, nil
			})
		})
		t.Run("v1 list "+tc.selector, func(t *testing.T) {
			waitForNames(t, "v1 list "+tc.selector, tc.want, func(ctx context.Context) ([]string, error) {
				list, err := ours.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: tc.selector})
				if err != nil {
					return nil, err
				}
				var names []string
				for _, e := range list.Items {
					names = append(names, e.Regarding.Name)
				}
				return names, nil
			})
		})
	}

	for name, w := range map[string]watch.Interface{"v1beta1 watch related.name=node-1": v1beta1Watch, "v1 watch action=Binding": v1Watch} {
		select {
		case e := <-w.ResultChan():
			var regarding string
			switch obj := e.Object.(type) {
			case *eventsv1.Event:
				regarding = obj.Regarding.Name
			case *eventsv1beta1.Event:
				regarding = obj.Regarding.Name
			default:
				regarding = fmt.Sprintf("%T", obj)
			}
			if e.Type != watch.Added || regarding != "web-1" {
				t.Errorf("%s: first event %s %s, want ADDED of web-1's event", name, e.Type, regarding)
			}
		case <-ctx.Done():
			t.Errorf("%s: nothing delivered", name)
		}
	}
}

// TestOurWritesReadBackThroughKubeAPIServer writes through our server, with
// our extension fields, and reads back through kube-apiserver's core/v1 and
// events.k8s.io/v1; kube-apiserver's update then reads back through ours.
func TestOurWritesReadBackThroughKubeAPIServer(t *testing.T) {
	ctx := testContext(t)
	namespace := newNamespace(t)
	kube := kubeClient(t, cluster.AdminConfig)
	ours, err := versioned.NewForConfig(cluster.ServerConfig)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	written, err := ours.EventsV1().Events(namespace).Create(ctx, &ourv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "ours", Namespace: namespace},
		EventTime:           metav1.NewMicroTime(now),
		Series:              &ourv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(now), State: ourv1.EventSeriesStateOngoing},
		ReportingController: "example.com/ours",
		ReportingInstance:   "ours-0",
		Action:              "Restarting",
		Reason:              "BackOff",
		Regarding:           ourcorev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: namespace, Name: "web-0"},
		Related:             &ourcorev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: "node-1"},
		Note:                "written through events-apiserver",
		Type:                corev1.EventTypeWarning,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	core, err := kube.CoreV1().Events(namespace).Get(ctx, written.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("core/v1 through kube-apiserver: %v", err)
	}
	if diff := cmp.Diff([]string{"web-0", "node-1", "written through events-apiserver", "2"},
		[]string{core.InvolvedObject.Name, core.Related.Name, core.Message, fmt.Sprint(core.Series.Count)}); diff != "" {
		t.Errorf("core/v1 through kube-apiserver (-want +got):\n%s", diff)
	}
	v1, err := kube.EventsV1().Events(namespace).Get(ctx, written.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("events.k8s.io/v1 through kube-apiserver: %v", err)
	}
	if v1.ResourceVersion != written.ResourceVersion || v1.Note != written.Note || v1.ReportingController != written.ReportingController {
		t.Errorf("events.k8s.io/v1 through kube-apiserver = %+v, want what we wrote: %+v", v1, written)
	}

	// An update through kube-apiserver, which knows no series.state.
	v1.Series.Count = 3
	v1.Series.LastObservedTime = metav1.NewMicroTime(time.Now())
	if _, err := kube.EventsV1().Events(namespace).Update(ctx, v1, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update through kube-apiserver: %v", err)
	}
	var got *ourv1.Event
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		got, err = ours.EventsV1().Events(namespace).Get(ctx, written.Name, metav1.GetOptions{})
		return err == nil && got.Series != nil && got.Series.Count == 3, nil
	})
	if err != nil {
		t.Fatalf("our read after kube-apiserver's update: %+v, %v", got, err)
	}
	if got.Note != written.Note || got.Related.Name != "node-1" {
		t.Errorf("our read after kube-apiserver's update = %+v", got)
	}
}

// TestMainEtcdHoldsNoEvents checks that events written through
// kube-apiserver are in the events etcd, and none in the main one.
func TestMainEtcdHoldsNoEvents(t *testing.T) {
	ctx := testContext(t)
	namespace := newNamespace(t)
	kube := kubeClient(t, cluster.AdminConfig)
	created, err := kube.CoreV1().Events(namespace).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "placed", Namespace: namespace},
		InvolvedObject: *podRef(namespace, "web-0"),
		Reason:         "Placed",
		Message:        "where does this live?",
		Source:         corev1.EventSource{Component: "offload-test"},
		Type:           corev1.EventTypeNormal,
		Count:          1,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := "/registry/events/" + namespace + "/" + created.Name

	eventsEtcd := cluster.EventsEtcd.Client
	resp, err := eventsEtcd.Get(ctx, key, clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 1 {
		t.Errorf("events etcd: %d keys %s, want 1", resp.Count, key)
	}

	main, err := clientv3.New(clientv3.Config{Endpoints: []string{cluster.MainEtcdEndpoint()}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer main.Close()
	resp, err = main.Get(ctx, "/registry/events/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		var keys []string
		for _, kv := range resp.Kvs {
			keys = append(keys, string(kv.Key))
		}
		t.Errorf("main etcd holds %d event keys: %v", len(keys), keys)
	}
}
