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

package mirror_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apiserver"
	"github.com/kube-events/events-apiserver/pkg/mirror"
)

var (
	t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	t1 = t0.Add(30 * time.Second)
	t2 = t0.Add(time.Minute)
)

// legacyEvent is what client-go's legacy recorder writes through core/v1.
func legacyEvent(name string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: "upstream-uid-1", ResourceVersion: "41",
			CreationTimestamp: metav1.NewTime(t0),
			Labels:            map[string]string{"app": "web"},
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", UID: "pod-uid", APIVersion: "v1"},
		Reason:         "BackOff",
		Message:        "Back-off restarting failed container",
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: metav1.NewTime(t0),
		LastTimestamp:  metav1.NewTime(t1),
		Count:          3,
		Type:           corev1.EventTypeWarning,
	}
}

// seriesEvent is what an events.k8s.io/v1 recorder writes, as kube-apiserver
// serves it through core/v1.
func seriesEvent(name string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "kube-system", UID: "upstream-uid-2", ResourceVersion: "77",
			CreationTimestamp: metav1.NewTime(t0),
		},
		InvolvedObject:      corev1.ObjectReference{Kind: "Node", Name: "node-1", UID: "node-uid"},
		Related:             &corev1.ObjectReference{Kind: "Pod", Namespace: "kube-system", Name: "kube-proxy-abc"},
		Reason:              "Scheduled",
		Message:             "Successfully assigned",
		Action:              "Binding",
		EventTime:           metav1.NewMicroTime(t0),
		Series:              &corev1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(t2)},
		ReportingController: "default-scheduler",
		ReportingInstance:   "default-scheduler-cp-1",
		Type:                corev1.EventTypeNormal,
	}
}

func TestConvert(t *testing.T) {
	decoder := apiserver.Codecs.UniversalDecoder()
	for _, tt := range []struct {
		name     string
		upstream *corev1.Event
		check    func(t *testing.T, e *core.Event)
	}{{
		name:     "legacy core/v1 event",
		upstream: legacyEvent("web-0.17a"),
		check: func(t *testing.T, e *core.Event) {
			if e.InvolvedObject.Name != "web-0" || e.InvolvedObject.Kind != "Pod" || e.InvolvedObject.UID != "pod-uid" {
				t.Errorf("involvedObject = %+v", e.InvolvedObject)
			}
			if e.Source.Component != "kubelet" || e.Source.Host != "node-1" || e.Count != 3 || e.Reason != "BackOff" ||
				e.Message != "Back-off restarting failed container" || e.Type != "Warning" {
				t.Errorf("legacy fields not carried over: %+v", e)
			}
			if !e.FirstTimestamp.Time.Equal(t0) || !e.LastTimestamp.Time.Equal(t1) {
				t.Errorf("timestamps = %v, %v", e.FirstTimestamp, e.LastTimestamp)
			}
			if e.Labels["app"] != "web" {
				t.Errorf("upstream label lost: %v", e.Labels)
			}
		},
	}, {
		name:     "events.k8s.io event with a series",
		upstream: seriesEvent("node-1.18b"),
		check: func(t *testing.T, e *core.Event) {
			if e.Series == nil || e.Series.Count != 4 || !e.Series.LastObservedTime.Time.Equal(t2) {
				t.Errorf("series = %+v", e.Series)
			}
			if e.Related == nil || e.Related.Name != "kube-proxy-abc" {
				t.Errorf("related = %+v", e.Related)
			}
			if e.Action != "Binding" || e.ReportingController != "default-scheduler" ||
				e.ReportingInstance != "default-scheduler-cp-1" || !e.EventTime.Time.Equal(t0) {
				t.Errorf("events.k8s.io fields not carried over: %+v", e)
			}
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mirror.Convert(decoder, tt.upstream)
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tt.upstream.Name || got.Namespace != tt.upstream.Namespace {
				t.Errorf("identity = %s/%s", got.Namespace, got.Name)
			}
			if got.UID != "" || got.ResourceVersion != "" || !got.CreationTimestamp.IsZero() || got.ManagedFields != nil {
				t.Errorf("upstream server-owned metadata kept: %+v", got.ObjectMeta)
			}
			if got.Labels[mirror.LabelMirroredFrom] != mirror.SourceKubeAPIServer {
				t.Errorf("labels = %v, want %s=%s", got.Labels, mirror.LabelMirroredFrom, mirror.SourceKubeAPIServer)
			}
			if got.Annotations[mirror.AnnotationUID] != string(tt.upstream.UID) ||
				got.Annotations[mirror.AnnotationResourceVersion] != tt.upstream.ResourceVersion {
				t.Errorf("annotations = %v", got.Annotations)
			}
			if tt.upstream.Labels[mirror.LabelMirroredFrom] != "" {
				t.Errorf("Convert changed its input's labels")
			}
			tt.check(t, got)
		})
	}
}

func TestUnchanged(t *testing.T) {
	stored, err := mirror.Convert(apiserver.Codecs.UniversalDecoder(), legacyEvent("web-0.17a"))
	if err != nil {
		t.Fatal(err)
	}
	unlabelled := stored.DeepCopy()
	delete(unlabelled.Labels, mirror.LabelMirroredFrom)
	for _, tt := range []struct {
		name     string
		stored   *core.Event
		upstream func(*corev1.Event)
		want     bool
	}{
		{"same uid and resourceVersion", stored, func(*corev1.Event) {}, true},
		{"new upstream resourceVersion", stored, func(e *corev1.Event) { e.ResourceVersion = "42" }, false},
		{"recreated upstream (new uid)", stored, func(e *corev1.Event) { e.UID = "upstream-uid-9" }, false},
		{"stored event not written by the mirror", unlabelled, func(*corev1.Event) {}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			upstream := legacyEvent("web-0.17a")
			tt.upstream(upstream)
			if got := mirror.Unchanged(tt.stored, upstream); got != tt.want {
				t.Errorf("mirror.Unchanged = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOptionsDefaulted(t *testing.T) {
	want := mirror.Options{Workers: mirror.DefaultWorkers, QPS: mirror.DefaultQPS, Burst: mirror.DefaultBurst, MaxPending: mirror.DefaultMaxPending,
		PageSize: mirror.DefaultPageSize, RetryBaseDelay: mirror.DefaultRetryBaseDelay, RetryMaxDelay: mirror.DefaultRetryMaxDelay}
	if diff := cmp.Diff(want, mirror.Options{}.Defaulted()); diff != "" {
		t.Errorf("Defaulted (-want +got):\n%s", diff)
	}
	set := mirror.Options{Workers: 1, QPS: 1, Burst: 2, MaxPending: 5, PageSize: 7, RetryBaseDelay: time.Millisecond, RetryMaxDelay: time.Second}
	if diff := cmp.Diff(set, set.Defaulted()); diff != "" {
		t.Errorf("Defaulted changed set options (-want +got):\n%s", diff)
	}
}
