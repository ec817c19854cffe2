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

// Package ancestry checks the ownership-tree selectors against a real
// kube-apiserver (envtest) that holds the owners: events written to the
// aggregated server about the objects of a tree (Deployment → ReplicaSet →
// Pod, CronJob → Job → Pod) are selected by regarding.ancestor and
// regarding.ancestor.uid alike from the live store and, once expired, from
// the archive, in every version and content type, a deleted pod's too.
//
// Run with the envtest assets of hack/envtest-assets.sh:
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test ./test/integration/ancestry/
package ancestry

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kube-events/events-apiserver/pkg/ancestry"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// eventTTL is short: the events expire and are read from the archive.
const eventTTL = 8 * time.Second

var cluster *framework.AggregatedCluster

func TestMain(m *testing.M) {
	// Parsed before the cluster starts: the server in it opens an embedded
	// archive, whose engine needs the flags parsed, and -run and -v must
	// reach the tests.
	flag.Parse()
	var err error
	cluster, err = framework.StartAggregatedCluster(framework.AggregatedClusterOptions{
		ExtraServerFlags:    []string{"--archive=embedded", "--event-ttl=" + eventTTL.String()},
		LinkToKubeAPIServer: true,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the aggregated cluster: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the aggregated cluster: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// object is one object of the trees: its kind, name and controller.
type object struct {
	kind, name, owner string
}

// trees are created in kube-apiserver in this order (owners first).
var trees = []object{
	{"Deployment", "web", ""},
	{"ReplicaSet", "web-1", "web"},
	{"ReplicaSet", "web-2", "web"},
	{"Pod", "web-1-a", "web-1"},
	{"Pod", "web-2-a", "web-2"},
	{"Deployment", "webber", ""},
	{"ReplicaSet", "webber-1", "webber"},
	{"Pod", "webber-1-a", "webber-1"},
	{"CronJob", "nightly", ""},
	{"Job", "nightly-1", "nightly"},
	{"Pod", "nightly-1-a", "nightly-1"},
	{"Pod", "lone", ""},
}

// apiVersions are the apiVersions of the trees' kinds.
var apiVersions = map[string]string{"Deployment": "apps/v1", "ReplicaSet": "apps/v1", "CronJob": "batch/v1", "Job": "batch/v1", "Pod": "v1"}

// createTrees creates the objects of trees, each with a controller
// reference to its owner, and returns their UIDs by name.
func createTrees(ctx context.Context, t *testing.T, c kubernetes.Interface, namespace string) map[string]types.UID {
	t.Helper()
	uids := map[string]types.UID{}
	kinds := map[string]string{}
	labels := map[string]string{"app": "x"}
	selector := &metav1.LabelSelector{MatchLabels: labels}
	pod := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}, RestartPolicy: corev1.RestartPolicyNever}}
	// A Deployment's and a ReplicaSet's pods always restart; a Job's never.
	restarting := *pod.DeepCopy()
	restarting.Spec.RestartPolicy = corev1.RestartPolicyAlways
	for _, o := range trees {
		meta := metav1.ObjectMeta{Name: o.name, Namespace: namespace, Labels: labels}
		if o.owner != "" {
			gv := apiVersions[kinds[o.owner]]
			meta.OwnerReferences = []metav1.OwnerReference{{APIVersion: gv, Kind: kinds[o.owner], Name: o.owner,
				UID: uids[o.owner], Controller: ptr.To(true)}}
		}
		var uid types.UID
		var err error
		switch o.kind {
		case "Deployment":
			var d *appsv1.Deployment
			d, err = c.AppsV1().Deployments(namespace).Create(ctx, &appsv1.Deployment{ObjectMeta: meta,
				Spec: appsv1.DeploymentSpec{Selector: selector, Template: restarting}}, metav1.CreateOptions{})
			if err == nil {
				uid = d.UID
			}
		case "ReplicaSet":
			var rs *appsv1.ReplicaSet
			rs, err = c.AppsV1().ReplicaSets(namespace).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: meta,
				Spec: appsv1.ReplicaSetSpec{Selector: selector, Template: restarting}}, metav1.CreateOptions{})
			if err == nil {
				uid = rs.UID
			}
		case "CronJob":
			var cj *batchv1.CronJob
			cj, err = c.BatchV1().CronJobs(namespace).Create(ctx, &batchv1.CronJob{ObjectMeta: meta,
				Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{
					Spec: batchv1.JobSpec{Template: pod}}}}, metav1.CreateOptions{})
			if err == nil {
				uid = cj.UID
			}
		case "Job":
			var j *batchv1.Job
			jobPod := *pod.DeepCopy()
			jobPod.Labels = nil // the Job's own selector labels are generated
			j, err = c.BatchV1().Jobs(namespace).Create(ctx, &batchv1.Job{ObjectMeta: meta,
				Spec: batchv1.JobSpec{Template: jobPod}}, metav1.CreateOptions{})
			if err == nil {
				uid = j.UID
			}
		case "Pod":
			var p *corev1.Pod
			p, err = c.CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{ObjectMeta: meta, Spec: pod.Spec}, metav1.CreateOptions{})
			if err == nil {
				uid = p.UID
			}
		}
		if err != nil {
			t.Fatalf("creating %s %s: %v", o.kind, o.name, err)
		}
		uids[o.name], kinds[o.name] = uid, o.kind
	}
	return uids
}

// version lists events through one served version.
type version struct {
	name string
	// prefix is the version's name of the regarding object in labels.
	prefix string
	list   func(ctx context.Context, c kubernetes.Interface, namespace string, opts metav1.ListOptions) ([]string, error)
}

var versions = []version{
	{"core/v1", "involvedObject", func(ctx context.Context, c kubernetes.Interface, namespace string, opts metav1.ListOptions) ([]string, error) {
		list, err := c.CoreV1().Events(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return sortedNames(list.Items, func(e *corev1.Event) string { return e.Name }), nil
	}},
	{"events.k8s.io/v1beta1", "regarding", func(ctx context.Context, c kubernetes.Interface, namespace string, opts metav1.ListOptions) ([]string, error) {
		list, err := c.EventsV1beta1().Events(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return sortedNames(list.Items, func(e *eventsv1beta1.Event) string { return e.Name }), nil
	}},
	{"events.k8s.io/v1", "regarding", func(ctx context.Context, c kubernetes.Interface, namespace string, opts metav1.ListOptions) ([]string, error) {
		list, err := c.EventsV1().Events(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return sortedNames(list.Items, func(e *eventsv1.Event) string { return e.Name }), nil
	}},
}

func sortedNames[E any](items []E, name func(*E) string) []string {
	out := []string{}
	for i := range items {
		out = append(out, name(&items[i]))
	}
	sort.Strings(out)
	return out
}

// TestAncestorTerms writes an event about each object of the trees (and
// about a pod that does not exist), deletes a pod, and checks every ancestor
// selector in every version and content type, live and, once the events
// expired, from the archive.
func TestAncestorTerms(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	admin, err := kubernetes.NewForConfig(cluster.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ancestry-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	namespace := ns.Name
	uids := createTrees(ctx, t, admin, namespace)

	server := clientFor(t, cluster.ServerConfig, runtime.ContentTypeJSON)
	kinds := map[string]string{}
	for _, o := range append(trees, object{"Pod", "ghost", ""}) {
		kinds[o.name] = o.kind
		reason := "Scaled"
		if o.kind == "Pod" {
			reason = "BackOff"
		}
		uid := uids[o.name]
		if uid == "" {
			uid = "uid-ghost"
		}
		gv := apiVersions[o.kind]
		e := &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: "ev-" + o.name, Namespace: namespace,
				// A client's chain is never kept: the server owns the annotation.
				Annotations: map[string]string{ownerchain.Annotation: `["Deployment/webber","forged"]`}},
			EventTime: metav1.NowMicro(), ReportingController: "example.com/test", ReportingInstance: "test-1",
			Action: "Test", Reason: reason, Type: corev1.EventTypeNormal, Note: "about " + o.name,
			Regarding: corev1.ObjectReference{APIVersion: gv, Kind: o.kind, Namespace: namespace, Name: o.name, UID: uid},
		}
		created, err := server.EventsV1().Events(namespace).Create(ctx, e, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("event about %s: %v", o.name, err)
		}
		chain, err := ownerchain.Decode(created.Annotations[ownerchain.Annotation])
		if err != nil {
			t.Fatalf("event about %s: %v", o.name, err)
		}
		var want []ownerchain.Ancestor
		for owner := ownerOf(o.name); owner != ""; owner = ownerOf(owner) {
			want = append(want, ownerchain.Ancestor{Kind: kinds[owner], Name: owner, UID: uids[owner]})
		}
		if diff := cmp.Diff(want, chain); diff != "" {
			t.Errorf("chain of the event about %s %s (-want +got):\n%s", o.kind, o.name, diff)
		}
	}
	// A pod deleted once its events are written: they still match its tree.
	if err := admin.CoreV1().Pods(namespace).Delete(ctx, "web-1-a", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}

	// The selectors, in canonical labels (core/v1's, with "ancestor.uid"
	// spelled out), and what they select.
	all := []string{}
	for name := range kinds {
		all = append(all, "ev-"+name)
	}
	sort.Strings(all)
	except := func(names ...string) []string {
		var out []string
		for _, n := range all {
			if !slices.Contains(names, n) {
				out = append(out, n)
			}
		}
		return out
	}
	cases := []struct {
		terms []string
		want  []string
	}{
		{[]string{"ancestor=Deployment/web"}, []string{"ev-web", "ev-web-1", "ev-web-1-a", "ev-web-2", "ev-web-2-a"}},
		{[]string{"ancestor.uid=" + string(uids["web"])}, []string{"ev-web", "ev-web-1", "ev-web-1-a", "ev-web-2", "ev-web-2-a"}},
		{[]string{"ancestor=ReplicaSet/web-1"}, []string{"ev-web-1", "ev-web-1-a"}},
		{[]string{"ancestor.uid=" + string(uids["web-2"])}, []string{"ev-web-2", "ev-web-2-a"}},
		{[]string{"ancestor=CronJob/nightly"}, []string{"ev-nightly", "ev-nightly-1", "ev-nightly-1-a"}},
		{[]string{"ancestor=Job/nightly-1"}, []string{"ev-nightly-1", "ev-nightly-1-a"}},
		{[]string{"ancestor=Deployment/webber"}, []string{"ev-webber", "ev-webber-1", "ev-webber-1-a"}},
		{[]string{"ancestor=Pod/lone"}, []string{"ev-lone"}},
		{[]string{"ancestor=Pod/ghost"}, []string{"ev-ghost"}},
		{[]string{"ancestor=Deployment/we"}, []string{}},
		{[]string{"ancestor=Deployment/web", "reason=BackOff"}, []string{"ev-web-1-a", "ev-web-2-a"}},
		{[]string{"ancestor=Deployment/web", "ancestor!=ReplicaSet/web-1"}, []string{"ev-web", "ev-web-2", "ev-web-2-a"}},
		{[]string{"ancestor!=Deployment/web"}, except("ev-web", "ev-web-1", "ev-web-1-a", "ev-web-2", "ev-web-2-a")},
	}
	check := func(t *testing.T, history string) {
		for _, v := range versions {
			for _, contentType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
				c := clientFor(t, cluster.ServerConfig, contentType)
				for _, tc := range cases {
					var terms []string
					for _, term := range tc.terms {
						// Only the ancestor terms are spelled under regarding (involvedObject).
						if strings.HasPrefix(term, "ancestor") {
							term = v.prefix + "." + term
						}
						terms = append(terms, term)
					}
					if history != "" {
						terms = append(terms, "history.since="+history)
					}
					selector := strings.Join(terms, ",")
					got, err := v.list(ctx, c, namespace, metav1.ListOptions{FieldSelector: selector})
					if err != nil {
						t.Errorf("%s %s %q: %v", v.name, contentType, selector, err)
						continue
					}
					if diff := cmp.Diff(tc.want, got); diff != "" {
						t.Errorf("%s %s %q (-want +got):\n%s", v.name, contentType, selector, diff)
					}
				}
			}
		}
	}
	t.Run("live", func(t *testing.T) { check(t, "") })

	// Expired from the live store, the events are the archive's alone.
	err = wait.PollUntilContextTimeout(ctx, time.Second, 4*eventTTL+time.Minute, true, func(ctx context.Context) (bool, error) {
		live, err := server.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
		if err != nil || len(live.Items) > 0 {
			return false, nil
		}
		archived, err := server.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "history.since=1h"})
		return err == nil && len(archived.Items) == len(all), nil
	})
	if err != nil {
		t.Fatalf("the events never left the live store for the archive: %v", err)
	}
	t.Run("archived", func(t *testing.T) { check(t, "1h") })
}

// TestChainThroughAnOutage: an event stored while our server cannot reach
// kube-apiserver keeps what could be resolved, marked pending, and its
// write succeeds; once kube-apiserver answers again, the elected
// annotator gives it its whole chain, and once expired its history still
// answers its Deployment's ancestor term.
func TestChainThroughAnOutage(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	admin, err := kubernetes.NewForConfig(cluster.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	namespace := cluster.NewNamespace(ctx, t, "outage-")
	uids := createTrees(ctx, t, admin, namespace)
	server := clientFor(t, cluster.ServerConfig, runtime.ContentTypeProtobuf)

	cluster.KubeAPIServerLink.Cut()
	e, err := server.EventsV1().Events(namespace).Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "ev-outage", Namespace: namespace},
		EventTime:  metav1.NowMicro(), ReportingController: "example.com/test", ReportingInstance: "test-1",
		Action: "Test", Reason: "BackOff", Type: corev1.EventTypeWarning, Note: "stored while kube-apiserver is out of reach",
		Regarding: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: "web-1-a", UID: uids["web-1-a"]},
	}, metav1.CreateOptions{})
	cluster.KubeAPIServerLink.Restore()
	if err != nil {
		t.Fatalf("an event written while kube-apiserver is out of reach: %v", err)
	}
	if reason := e.Annotations[ownerchain.PendingAnnotation]; !ancestry.Retryable(reason) {
		t.Errorf("stored with %s=%q, want a retryable reason; annotations %v", ownerchain.PendingAnnotation, reason, e.Annotations)
	}

	want := ownerchain.Encode([]ownerchain.Ancestor{
		{Kind: "ReplicaSet", Name: "web-1", UID: uids["web-1"]}, {Kind: "Deployment", Name: "web", UID: uids["web"]}})
	var last map[string]string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := server.EventsV1().Events(namespace).Get(ctx, "ev-outage", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = got.Annotations
		_, pending := last[ownerchain.PendingAnnotation]
		return last[ownerchain.Annotation] == want && !pending, nil
	})
	if err != nil {
		t.Fatalf("the event was never given its whole chain %s: %v; annotations %v", want, err, last)
	}

	selector := "regarding.ancestor=Deployment/web,history.since=1h"
	err = wait.PollUntilContextTimeout(ctx, time.Second, 4*eventTTL+time.Minute, true, func(ctx context.Context) (bool, error) {
		live, err := server.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
		if err != nil || len(live.Items) > 0 {
			return false, nil
		}
		archived, err := server.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: selector})
		return err == nil && len(archived.Items) == 1 && archived.Items[0].Name == "ev-outage", nil
	})
	if err != nil {
		t.Fatalf("once expired, %q never listed the event: %v", selector, err)
	}
}

// ownerOf is the controller of the object name in trees, "" for none.
func ownerOf(name string) string {
	for _, o := range trees {
		if o.name == name {
			return o.owner
		}
	}
	return ""
}

// clientFor is a clientset of config speaking contentType.
func clientFor(t *testing.T, config *rest.Config, contentType string) kubernetes.Interface {
	t.Helper()
	config = rest.CopyConfig(config)
	config.ContentType, config.AcceptContentTypes = contentType, contentType
	c, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
