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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"

	ourv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	"github.com/kube-events/events-apiserver/pkg/generated/clientset/versioned"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestSeriesStateThroughKubeAPIServer records series through kube-apiserver
// with client-go's tools/events recorder: kube-apiserver knows no
// series.state, so the state comes from our server's controller (and
// sweeper), by the rules a write through our API gets.
func TestSeriesStateThroughKubeAPIServer(t *testing.T) {
	ctx := testContext(t)
	namespace := newNamespace(t)
	kube := kubeClient(t, cluster.AdminConfig)
	ours, err := versioned.NewForConfig(cluster.ServerConfig)
	if err != nil {
		t.Fatal(err)
	}
	ongoing, err := ours.EventsV1().Events(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "series.state=Ongoing"})
	if err != nil {
		t.Fatal(err)
	}
	defer ongoing.Stop()

	// A legacy recorder writes count and lastTimestamp, never a series: its
	// events get no state.
	legacy := record.NewBroadcaster(record.WithContext(ctx))
	defer legacy.Shutdown()
	legacy.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	legacyRecorder := legacy.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "offload-kubelet"})

	sink := &events.EventSinkImpl{Interface: kube.EventsV1()}
	broadcaster := events.NewBroadcaster(sink)
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, "offload-kubelet")
	// The second occurrence of each makes it a series, written as a patch
	// of the first: recorded once the first is stored (recorded at once,
	// the patch may overtake the create, and the recorder retries 10s later).
	occur := func() {
		for _, pod := range []string{"finished", "abandoned"} {
			recorder.Eventf(podRef(namespace, pod), nil, corev1.EventTypeWarning, "BackOff", "Restarting", "Back-off restarting failed container")
			legacyRecorder.Eventf(podRef(namespace, pod), corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
		}
	}
	occur()
	waitForNames(t, "first occurrences", []string{"abandoned", "finished"}, func(ctx context.Context) ([]string, error) {
		list, err := ours.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "action=Restarting"})
		if err != nil {
			return nil, err
		}
		var names []string
		for _, e := range list.Items {
			names = append(names, e.Regarding.Name)
		}
		return names, nil
	})
	occur()

	// Both series reach the Ongoing watch, with no write through our API.
	delivered := framework.ReceiveSeries(t, ongoing, 2, 15*time.Second)
	for pod, event := range delivered {
		if event.Series == nil || event.Series.Count != 2 || event.Series.State != ourv1.EventSeriesStateOngoing {
			t.Errorf("%s: series %+v, want count 2 Ongoing", pod, event.Series)
		}
	}
	list, err := ours.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "series.state=Ongoing,reportingController=offload-kubelet"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Errorf("series.state=Ongoing lists %d events, want the 2 series (legacy events have none)", len(list.Items))
	}

	// client-go's final write re-sends the cached series once it is older
	// than its finishTime; kube-apiserver drops our state on that update.
	final, err := kube.EventsV1().Events(namespace).Get(ctx, delivered["finished"].Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	framework.WriteFinalSeries(ctx, t, sink, final, timeout)

	for _, tc := range []struct {
		pod  string
		want ourv1.EventSeriesState
	}{
		{"finished", ourv1.EventSeriesStateFinished},
		// heartbeatInterval + heartbeatSlack of silence.
		{"abandoned", ourv1.EventSeriesStateUnknown},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			got := framework.WaitForSeriesState(ctx, t, ours, namespace, delivered[tc.pod].Name, tc.want, timeout)
			if diff := cmp.Diff(int32(2), got.Series.Count); diff != "" {
				t.Errorf("series.count (-want +got):\n%s", diff)
			}
		})
	}

	// The abandoned series' reporter is back: its heartbeat carries the
	// occurrences it counted meanwhile, and the series is Ongoing again.
	heartbeat, err := kube.EventsV1().Events(namespace).Get(ctx, delivered["abandoned"].Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	heartbeat.Series.Count = 3
	heartbeat.Series.LastObservedTime = metav1.NewMicroTime(time.Now())
	framework.PatchSeries(ctx, t, sink, heartbeat)
	// The watch first delivers both series leaving Ongoing (DELETED).
	deadline := time.After(15 * time.Second)
	for revived := false; !revived; {
		select {
		case e := <-ongoing.ResultChan():
			event, ok := e.Object.(*ourv1.Event)
			if !ok || e.Type == watch.Deleted {
				continue
			}
			if e.Type != watch.Added || event.Name != heartbeat.Name || event.Series.Count != 3 {
				t.Fatalf("series.state=Ongoing watch after the heartbeat: %s of %s, want ADDED of %s with count 3", e.Type, event.Name, heartbeat.Name)
			}
			revived = true
		case <-deadline:
			t.Fatal("series.state=Ongoing watch: the revived series not delivered within 15s")
		}
	}
}
