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

package recorder_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kube-events/events-apiserver/pkg/recorder"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// A controller switches from client-go's tools/events recorder by changing
// the line that builds the broadcaster; its recorder calls stay as they are.
func Example() {
	// A server to write to: events-apiserver in this process, on its
	// embedded etcd. (A controller has its clientset already.)
	server, err := framework.RunServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer server.Close()
	client := kubernetes.NewForConfigOrDie(server.RestConfig)
	ctx := context.Background()

	// Before: broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	broadcaster := recorder.NewBroadcaster(client.EventsV1(), recorder.Options{})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		fmt.Println(err)
		return
	}
	eventRecorder := broadcaster.NewRecorder(scheme.Scheme, "example.com/my-controller")

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "4f0c2a1e"}}
	for range 1000 {
		eventRecorder.Eventf(pod, nil, corev1.EventTypeWarning, "BackOff", "Restarting", "Back-off restarting failed container %s", "app")
	}
	// On the way out, Shutdown writes what is pending and the count of
	// every live series, so that the next start continues it.
	broadcaster.Shutdown()

	list, err := client.EventsV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=web-0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, event := range list.Items {
		fmt.Println(event.Reason, event.ReportingController, event.Series.Count)
	}
	// Output:
	// BackOff example.com/my-controller 1000
}
