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

package server

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
)

// recorderTimeout bounds how long a recorder takes to write an event.
const recorderTimeout = 20 * time.Second

// TestToolsRecordBroadcaster records through client-go's legacy recorder
// (core/v1 sink): the first occurrence is created, the repeats are
// aggregated into its count by strategic merge patches.
func TestToolsRecordBroadcaster(t *testing.T) {
	t.Parallel()
	for _, c := range clientsFor(t, shared) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			namespace := namespaceFor(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			broadcaster := record.NewBroadcaster(record.WithContext(ctx))
			defer broadcaster.Shutdown()
			broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.CoreV1().Events("")})
			recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "integration-kubelet", Host: "node-1"})

			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: namespace, UID: "uid-web"}}
			const occurrences = 4
			for range occurrences {
				recorder.Eventf(pod, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s", "app")
			}

			var got *corev1.Event
			eventually(t, recorderTimeout, "the recorded event reaching count 4", func() (bool, error) {
				list, err := c.CoreV1().Events(namespace).List(ctxFor(t), metav1.ListOptions{})
				if err != nil || len(list.Items) != 1 {
					return false, err
				}
				got = &list.Items[0]
				return got.Count == occurrences, nil
			})
			if got.InvolvedObject.Name != "web" || got.InvolvedObject.UID != "uid-web" || got.InvolvedObject.Kind != "Pod" ||
				got.Source.Component != "integration-kubelet" || got.Source.Host != "node-1" || got.Reason != "BackOff" ||
				got.Message != "Back-off restarting failed container app" || got.Type != corev1.EventTypeWarning ||
				got.FirstTimestamp.IsZero() || got.LastTimestamp.Before(&got.FirstTimestamp) {
				t.Errorf("recorded event: %+v", got)
			}
		})
	}
}

// TestToolsEventsBroadcaster records through client-go's events.k8s.io/v1
// recorder: the first occurrence is created, the second makes it a series
// by a strategic merge patch of series, which the server keeps Ongoing.
func TestToolsEventsBroadcaster(t *testing.T) {
	t.Parallel()
	for _, c := range clientsFor(t, shared) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			namespace := namespaceFor(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: c.EventsV1()})
			defer broadcaster.Shutdown()
			if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
				t.Fatal(err)
			}
			recorder := broadcaster.NewRecorder(scheme.Scheme, "example.com/integration-controller")

			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: namespace, UID: "uid-web-0"}}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "uid-node-1"}}
			emit := func() {
				recorder.Eventf(pod, node, corev1.EventTypeNormal, "Scheduled", "Binding", "Assigned %s to %s", "web-0", "node-1")
			}

			emit()
			var name string
			eventually(t, recorderTimeout, "the recorded event", func() (bool, error) {
				list, err := c.EventsV1().Events(namespace).List(ctxFor(t), metav1.ListOptions{FieldSelector: "regarding.name=web-0"})
				if err != nil || len(list.Items) != 1 {
					return false, err
				}
				e := list.Items[0]
				name = e.Name
				if e.ReportingController != "example.com/integration-controller" || e.Action != "Binding" || e.Reason != "Scheduled" ||
					e.Note != "Assigned web-0 to node-1" || e.Related == nil || e.Related.Name != "node-1" || e.EventTime.IsZero() || e.Series != nil {
					t.Fatalf("recorded event: %+v", e)
				}
				return true, nil
			})

			emit()
			eventually(t, recorderTimeout, "the event becoming a series of 2", func() (bool, error) {
				e, err := c.EventsV1().Events(namespace).Get(ctxFor(t), name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				return e.Series != nil && e.Series.Count == 2, nil
			})
			// The same event through core/v1, with the state the server keeps.
			raw, err := jsonClient(t).CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/" + namespace + "/events/" + name).DoRaw(ctxFor(t))
			if err != nil {
				t.Fatal(err)
			}
			var legacy struct {
				Message            string `json:"message"`
				ReportingComponent string `json:"reportingComponent"`
				Series             struct {
					Count int32  `json:"count"`
					State string `json:"state"`
				} `json:"series"`
			}
			if err := json.Unmarshal(raw, &legacy); err != nil {
				t.Fatal(err)
			}
			if legacy.Message != "Assigned web-0 to node-1" || legacy.ReportingComponent != "example.com/integration-controller" ||
				legacy.Series.Count != 2 || legacy.Series.State != "Ongoing" {
				t.Errorf("through core/v1: %s", raw)
			}
		})
	}
}
