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

package takeover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"

	ourv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// automanagedLabel marks the APIServices kube-apiserver manages: ours must
// not carry it.
const automanagedLabel = "kube-aggregator.kubernetes.io/automanaged"

var apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

func kubeClient(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	return framework.KubeClient(t, cfg)
}

// newNamespace creates a namespace for one test in kube-apiserver.
func newNamespace(t *testing.T) string {
	t.Helper()
	return cluster.NewNamespace(testContext(t), t, "takeover-")
}

func podRef(namespace, name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: namespace, Name: name, UID: types.UID("uid-" + name)}
}

// servedByUs is nil once kube-apiserver's discovery lists events.k8s.io/v1
// and v1beta1, and our APIService v1.events.k8s.io (with a service) is
// Available; else it says what is missing.
func servedByUs(ctx context.Context) error {
	dyn, err := dynamic.NewForConfig(cluster.AdminConfig)
	if err != nil {
		return err
	}
	apiService, err := dyn.Resource(apiServicesGVR).Get(ctx, v1APIServiceName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if _, found, _ := unstructured.NestedMap(apiService.Object, "spec", "service"); !found {
		return fmt.Errorf("APIService %s is local (kube-apiserver's)", v1APIServiceName)
	}
	if !available(apiService) {
		return fmt.Errorf("APIService %s is not Available", v1APIServiceName)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cluster.AdminConfig)
	if err != nil {
		return err
	}
	groups, err := disco.ServerGroups()
	if err != nil {
		return err
	}
	for _, g := range groups.Groups {
		if g.Name != "events.k8s.io" {
			continue
		}
		var versions []string
		for _, v := range g.Versions {
			versions = append(versions, v.Version)
		}
		if !cmp.Equal([]string{"v1beta1", "v1"}, versions) && !cmp.Equal([]string{"v1", "v1beta1"}, versions) {
			return fmt.Errorf("discovery lists events.k8s.io versions %v", versions)
		}
		return nil
	}
	return errors.New("discovery does not list events.k8s.io")
}

// available says whether apiService's condition Available is True.
func available(apiService *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(apiService.Object, "status", "conditions")
	for _, c := range conditions {
		if m, _ := c.(map[string]any); m["type"] == "Available" {
			return m["status"] == "True"
		}
	}
	return false
}

// TestSeriesStateInTheAnswerThroughKubeAPIServer writes a series with
// unmodified client-go through kube-apiserver's events.k8s.io/v1, as the
// tools/events recorder does (create, then the series patch of its second
// occurrence): our admission answers the patch with series.state Ongoing,
// and kube-apiserver's core/v1 reads the same event.
func TestSeriesStateInTheAnswerThroughKubeAPIServer(t *testing.T) {
	ctx := testContext(t)
	namespace := newNamespace(t)
	kube := kubeClient(t, cluster.AdminConfig)
	sink := &events.EventSinkImpl{Interface: kube.EventsV1()}
	now := metav1.NewMicroTime(time.Now())
	created, err := sink.Create(ctx, &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "web-0.backoff", Namespace: namespace},
		EventTime:           now,
		ReportingController: "example.com/takeover",
		ReportingInstance:   "takeover-0",
		Action:              "Restarting",
		Reason:              "BackOff",
		Regarding:           *podRef(namespace, "web-0"),
		Note:                "Back-off restarting failed container",
		Type:                corev1.EventTypeWarning,
	})
	if err != nil {
		t.Fatalf("create through kube-apiserver: %v", err)
	}
	second := created.DeepCopy()
	second.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(time.Now())}
	patch, err := framework.SeriesPatch(second)
	if err != nil {
		t.Fatal(err)
	}
	// The very patch client-go sends, read as bytes: k8s.io/api's
	// EventSeries has no state, our type reads it.
	raw, err := kube.EventsV1().RESTClient().Patch(types.StrategicMergePatchType).
		Namespace(namespace).Resource("events").Name(second.Name).Body(patch).Do(ctx).Raw()
	if err != nil {
		t.Fatalf("series patch through kube-apiserver: %v", err)
	}
	var answered ourv1.Event
	if err := json.Unmarshal(raw, &answered); err != nil {
		t.Fatal(err)
	}
	if answered.Series == nil || answered.Series.Count != 2 || answered.Series.State != ourv1.EventSeriesStateOngoing {
		t.Errorf("answer to the series patch: series %+v, want count 2 Ongoing", answered.Series)
	}
	t.Logf("series patch through kube-apiserver answered: %s", raw)

	// Offload: kube-apiserver's core/v1 reads the keys our server wrote.
	core, err := kube.CoreV1().Events(namespace).Get(ctx, second.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("core/v1 through kube-apiserver: %v", err)
	}
	var coreSeriesCount int32
	if core.Series != nil {
		coreSeriesCount = core.Series.Count
	}
	if diff := cmp.Diff(
		[]string{string(answered.UID), answered.ResourceVersion, answered.Note, "2"},
		[]string{string(core.UID), core.ResourceVersion, core.Message, fmt.Sprint(coreSeriesCount)},
	); diff != "" {
		t.Errorf("core/v1 through kube-apiserver: uid, resourceVersion, message, series.count (-ours +core/v1):\n%s", diff)
	}
}

// TestEventsV1ServedByUs: kube-apiserver's discovery lists events.k8s.io v1
// and v1beta1, both our APIServices, with kube-apiserver's priorities for v1.
func TestEventsV1ServedByUs(t *testing.T) {
	ctx := testContext(t)
	if err := servedByUs(ctx); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cluster.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                                  string
		groupPriorityMinimum, versionPriority int64
	}{
		{name: v1APIServiceName, groupPriorityMinimum: 17750, versionPriority: 15},
		{name: framework.AggregatedAPIServiceName, groupPriorityMinimum: 17750, versionPriority: 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			apiService, err := dyn.Resource(apiServicesGVR).Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			service, _, _ := unstructured.NestedString(apiService.Object, "spec", "service", "name")
			group, _, _ := unstructured.NestedInt64(apiService.Object, "spec", "groupPriorityMinimum")
			version, _, _ := unstructured.NestedInt64(apiService.Object, "spec", "versionPriority")
			want := []string{framework.AggregatedServiceName, fmt.Sprint(tc.groupPriorityMinimum), fmt.Sprint(tc.versionPriority), "true", ""}
			got := []string{service, fmt.Sprint(group), fmt.Sprint(version), fmt.Sprint(available(apiService)), apiService.GetLabels()[automanagedLabel]}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("service, groupPriorityMinimum, versionPriority, Available, automanaged label (-want +got):\n%s", diff)
			}
		})
	}
}
