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

package mirror

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"

	ourv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	"github.com/kube-events/events-apiserver/pkg/generated/clientset/versioned"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestMirroredSeriesGetStates records series upstream with client-go's
// tools/events recorder: kube-apiserver knows no series.state, and the
// mirror copies what it stored, so the states of the copies come from our
// server's state controller and sweeper, by the rules of a write through
// our API (the cluster runs with framework's short thresholds).
func TestMirroredSeriesGetStates(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, cluster)
	kube := client(t, cluster)
	ours, err := versioned.NewForConfig(cluster.ServerConfig)
	if err != nil {
		t.Fatal(err)
	}
	ongoing, err := ours.EventsV1().Events(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "series.state=Ongoing"})
	if err != nil {
		t.Fatal(err)
	}
	defer ongoing.Stop()

	sink := &events.EventSinkImpl{Interface: kube.EventsV1()}
	broadcaster := events.NewBroadcaster(sink)
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, "mirror-kubelet")
	occur := func() {
		for _, name := range []string{"finished", "abandoned"} {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name)}}
			recorder.Eventf(pod, nil, corev1.EventTypeWarning, "BackOff", "Restarting", "Back-off restarting failed container")
		}
	}
	// The second occurrence patches the first into a series once the first
	// is stored upstream (see the offload test).
	occur()
	eventName(t, ns, "finished")
	eventName(t, ns, "abandoned")
	occur()

	delivered := framework.ReceiveSeries(t, ongoing, 2, 15*time.Second)
	for name, event := range delivered {
		if event.Series == nil || event.Series.Count != 2 {
			t.Errorf("%s: series %+v, want count 2", name, event.Series)
		}
	}

	// client-go's final write, after a third occurrence it only counted in
	// its cache: count 3, last observed then, sent once that is older than
	// its finishTime.
	final, err := kube.EventsV1().Events(ns).Get(ctx, delivered["finished"].Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	final.Series.Count = 3
	final.Series.LastObservedTime = metav1.NewMicroTime(time.Now())
	framework.WriteFinalSeries(ctx, t, sink, final, timeout)

	for _, tc := range []struct {
		pod   string
		want  ourv1.EventSeriesState
		count int32
	}{
		{"finished", ourv1.EventSeriesStateFinished, 3},
		// heartbeatInterval + heartbeatSlack of silence.
		{"abandoned", ourv1.EventSeriesStateUnknown, 2},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			got := framework.WaitForSeriesState(ctx, t, ours, ns, delivered[tc.pod].Name, tc.want, timeout)
			if diff := cmp.Diff(tc.count, got.Series.Count); diff != "" {
				t.Errorf("mirrored series.count of %s (-want +got):\n%s", tc.pod, diff)
			}
		})
	}
}
