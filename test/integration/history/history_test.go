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

package history

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// version lists events through one served version.
type version struct {
	name string
	// label turns a canonical (core/v1) field label into the version's;
	// "" when the version has no such label.
	label func(string) string
	list  func(ctx context.Context, c kubernetes.Interface, namespace string, opts metav1.ListOptions) ([]runtime.Object, string, error)
}

// objects are pointers to a typed list's items, as runtime.Objects.
func objects[T any, PT interface {
	*T
	runtime.Object
}](items []T) []runtime.Object {
	out := make([]runtime.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

var versions = []version{
	{
		name:  "core/v1",
		label: func(l string) string { return l },
		list: func(ctx context.Context, c kubernetes.Interface, namespace string, opts metav1.ListOptions) ([]runtime.Object, string, error) {
			list, err := c.CoreV1().Events(namespace).List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return objects(list.Items), list.Continue, nil
		},
	},
	{
		name:  "events.k8s.io/v1beta1",
		label: eventsLabel,
		list: func(ctx context.Context, c kubernetes.Interface, namespace string, opts metav1.ListOptions) ([]runtime.Object, string, error) {
			list, err := c.EventsV1beta1().Events(namespace).List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return objects(list.Items), list.Continue, nil
		},
	},
	{
		name:  "events.k8s.io/v1",
		label: eventsLabel,
		list: func(ctx context.Context, c kubernetes.Interface, namespace string, opts metav1.ListOptions) ([]runtime.Object, string, error) {
			list, err := c.EventsV1().Events(namespace).List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return objects(list.Items), list.Continue, nil
		},
	},
}

// eventsLabel is events.k8s.io's name of a canonical label.
func eventsLabel(l string) string {
	switch {
	case l == "source":
		return ""
	case l == "reportingComponent":
		return "reportingController"
	case strings.HasPrefix(l, "involvedObject."):
		return "regarding." + strings.TrimPrefix(l, "involvedObject.")
	}
	return l
}

// selectors are field selectors in canonical labels ("!" marks !=), one
// per selectable field and then some.
var selectors = [][]string{
	nil,
	{"involvedObject.name=web-0"},
	{"involvedObject.name!=web-0"},
	{"involvedObject.kind=Node"},
	{"involvedObject.uid=uid-web-1"},
	{"involvedObject.namespace="},
	{"involvedObject.kind!=Pod"},
	{"involvedObject.apiVersion=v1"},
	{"involvedObject.fieldPath=spec.containers{app}"},
	{"involvedObject.resourceVersion="},
	{"related.name=node-2"},
	{"related.name="},
	{"related.kind!=Node"},
	{"related.uid=uid-node-1"},
	{"reason=BackOff"},
	{"reason=BackOff", "type=Warning"},
	{"type!=Normal"},
	{"action=Restarting"},
	{"reportingComponent=kubelet"},
	{"reportingInstance=node-1"},
	{"source=kubelet"},
	{"metadata.name=e3"},
	{"metadata.namespace!=elsewhere"},
	{"involvedObject.name=web-0", "reason=BackOff", "reportingComponent=kubelet"},
	{"involvedObject.name=nothing"},
	// Without a cluster no event has ancestors: the object itself.
	{"involvedObject.ancestor=Pod/web-0"},
	{"involvedObject.ancestor.uid=uid-web-1"},
	{"involvedObject.ancestor!=Node/node-1"},
	{"involvedObject.ancestor=Pod/web-0", "reason=BackOff"},
	{"involvedObject.ancestor=Deployment/web"},
}

// selectorFor writes terms in v's labels; false if v lacks one.
func selectorFor(v version, terms []string) (string, bool) {
	var out []string
	for _, term := range terms {
		op := "="
		if strings.Contains(term, "!=") {
			op = "!="
		}
		label, value, _ := strings.Cut(term, op)
		l := v.label(label)
		if l == "" {
			return "", false
		}
		out = append(out, l+op+value)
	}
	return strings.Join(out, ","), true
}

// listAll lists every page of a query, limit items at a time.
func listAll(ctx context.Context, t testing.TB, v version, c kubernetes.Interface, namespace, selector string, limit int64) []runtime.Object {
	t.Helper()
	var all []runtime.Object
	opts := metav1.ListOptions{FieldSelector: selector, Limit: limit}
	for {
		items, cont, err := v.list(ctx, c, namespace, opts)
		if err != nil {
			t.Fatalf("%s list %q: %v", v.name, selector, err)
		}
		all = append(all, items...)
		if cont == "" {
			return all
		}
		opts.Continue = cont
	}
}

func objectName(o *runtime.Object) string {
	m, err := meta.Accessor(*o)
	if err != nil {
		return ""
	}
	return m.GetName()
}

// TestHistory writes the fixtures, reads every selector through every
// version and content type from the live store, lets the events expire,
// and checks that history.since answers each of those lists with exactly
// the same objects, newest first; then checks kubectl, pages and refusals
// on the same server.
func TestHistory(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) { testHistory(t, engine) })
	}
}

func testHistory(t *testing.T, engine string) {
	const ttl = 8 * time.Second
	s, etcd := historyServer(t, engine, ttl)
	ctx := ctxFor(t)
	namespace := namespaceFor(t)
	c := clientset(t, s.RestConfig, runtime.ContentTypeJSON)
	create(ctx, t, c, namespace, fixtures, 0)

	type key struct{ version, contentType, selector string }
	live := map[key][]runtime.Object{}
	for _, v := range versions {
		for _, ct := range contentTypes {
			vc := clientset(t, s.RestConfig, ct)
			for _, terms := range selectors {
				selector, ok := selectorFor(v, terms)
				if !ok {
					continue
				}
				live[key{v.name, ct, selector}] = listAll(ctx, t, v, vc, namespace, selector, 0)
			}
		}
	}
	if got := len(live[key{"events.k8s.io/v1", runtime.ContentTypeJSON, ""}]); got != len(fixtures) {
		t.Fatalf("live store holds %d events, want %d", got, len(fixtures))
	}
	for selector, want := range map[string][]string{
		"regarding.ancestor=Pod/web-0":      {"e0", "e1", "l0"},
		"regarding.ancestor.uid=uid-web-1":  {"e2", "e3"},
		"regarding.ancestor=Deployment/web": {},
		"regarding.ancestor!=Node/node-1":   {"e0", "e1", "e2", "e3", "e5", "l0", "l1"},
	} {
		got := names(sortedBy(live[key{"events.k8s.io/v1", runtime.ContentTypeJSON, selector}], objectName), objectName)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("live %q, no ancestors without a cluster: the object itself (-want +got):\n%s", selector, diff)
		}
	}

	waitExpired(ctx, t, c, namespace, 4*ttl)
	waitHistory(ctx, t, c, namespace, len(fixtures), 20*time.Second)

	t.Run("every selector, version and content type answers from the archive as from the live store", func(t *testing.T) {
		for k, want := range live {
			v := versionNamed(k.version)
			vc := clientset(t, s.RestConfig, k.contentType)
			selector := withHistory(k.selector, "1h")
			var got []runtime.Object
			err := pollUntil(ctx, 20*time.Second, func() bool {
				got = listAll(ctx, t, v, vc, namespace, selector, 0)
				return len(got) >= len(want)
			})
			if err != nil {
				t.Errorf("%s %s %q: %d events from the archive, want %d", k.version, k.contentType, selector, len(got), len(want))
				continue
			}
			if diff := cmp.Diff(sortedBy(want, objectName), sortedBy(got, objectName)); diff != "" {
				t.Errorf("%s %s %q: archive answer differs from the live store's (-live +archive):\n%s", k.version, k.contentType, selector, diff)
			}
			paged := listAll(ctx, t, v, vc, namespace, selector, 2)
			if diff := cmp.Diff(names(got, objectName), names(paged, objectName)); diff != "" {
				t.Errorf("%s %s %q: pages of 2 differ from one page (-one +pages):\n%s", k.version, k.contentType, selector, diff)
			}
		}
	})

	t.Run("newest first", func(t *testing.T) {
		got := listAll(ctx, t, versions[2], c, namespace, "history.since=1h", 3)
		// Fixture i was observed at base + i seconds.
		want := []string{"l1", "l0", "e5", "e4", "e3", "e2", "e1", "e0"}
		if diff := cmp.Diff(want, names(got, objectName)); diff != "" {
			t.Errorf("order (-want +got):\n%s", diff)
		}
	})

	t.Run("a window that ends before the events holds none", func(t *testing.T) {
		got := listAll(ctx, t, versions[2], c, namespace, "history.since=1h,history.until=30m", 0)
		if len(got) != 0 {
			t.Errorf("[1h ago, 30m ago) holds %v, want nothing", names(got, objectName))
		}
		until := base.Add(3 * time.Second).UTC().Format(time.RFC3339)
		got = listAll(ctx, t, versions[2], c, namespace, "history.since=1h,history.until="+until, 0)
		if diff := cmp.Diff([]string{"e2", "e1", "e0"}, names(got, objectName)); diff != "" {
			t.Errorf("until %s (-want +got):\n%s", until, diff)
		}
	})

	t.Run("kubectl", func(t *testing.T) {
		out, errOut, err := framework.Kubectl(t, s.KubeconfigPath, "get", "events.events.k8s.io", "-n", namespace,
			"--field-selector", "regarding.name=web-0,history.since=24h", "-o", "name")
		if err != nil {
			t.Fatalf("kubectl: %v\n%s", err, errOut)
		}
		want := "event.events.k8s.io/l0\nevent.events.k8s.io/e1\nevent.events.k8s.io/e0\n"
		if out != want {
			t.Errorf("kubectl get -o name:\n%s\nwant:\n%s", out, want)
		}
		out, errOut, err = framework.Kubectl(t, s.KubeconfigPath, "get", "events.events.k8s.io", "-n", namespace,
			"--field-selector", "regarding.name=web-0,history.since=24h")
		if err != nil {
			t.Fatalf("kubectl: %v\n%s", err, errOut)
		}
		if !strings.Contains(out, "BackOff") || strings.Count(out, "\n") != 4 {
			t.Errorf("kubectl get table: want a header and 3 rows with BackOff, got:\n%s", out)
		}
	})

	t.Run("pages cross the live store and the archive without gaps or duplicates", func(t *testing.T) {
		more := []fixture{
			{name: "n0", kind: "Pod", object: "web-0", reason: "Started", eventType: "Normal", action: "Starting", controller: "kubelet", instance: "node-1"},
			{name: "n1", kind: "Pod", object: "web-1", reason: "Started", eventType: "Normal", action: "Starting", controller: "kubelet", instance: "node-2"},
			{name: "n2", kind: "Pod", object: "web-0", reason: "Started", eventType: "Normal", action: "Starting", controller: "kubelet", instance: "node-1"},
		}
		// Observed between the expired ones: e2 < n0 < e3 ...
		create(ctx, t, c, namespace, more, 2500*time.Millisecond)
		want := []string{"l1", "l0", "e5", "n2", "e4", "n1", "e3", "n0", "e2", "e1", "e0"}
		for _, limit := range []int64{1, 2, 3, 4, 100} {
			got := listAll(ctx, t, versions[2], c, namespace, "history.since=1h", limit)
			if diff := cmp.Diff(want, names(got, objectName)); diff != "" {
				t.Errorf("limit %d (-want +got):\n%s", limit, diff)
			}
		}
	})

	t.Run("an event written to between pages keeps its place", func(t *testing.T) {
		namespace := namespace + "-between"
		events := []fixture{
			{name: "x0", kind: "Pod", object: "a", reason: "R", eventType: "Normal", controller: "kubelet", instance: "node-1", legacy: true},
			{name: "x1", kind: "Pod", object: "b", reason: "R", eventType: "Normal", controller: "kubelet", instance: "node-1", legacy: true},
			{name: "x2", kind: "Pod", object: "c", reason: "R", eventType: "Normal", controller: "kubelet", instance: "node-1", legacy: true},
			{name: "x3", kind: "Pod", object: "d", reason: "R", eventType: "Normal", controller: "kubelet", instance: "node-1", legacy: true},
		}
		waitCheckpoint(ctx, t, etcd, create(ctx, t, c, namespace, events, 0))
		first, err := c.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "history.since=1h", Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		// x1, due on the next page, is observed again: its live state is
		// now after the window the first page fixed.
		patch := fmt.Sprintf(`{"count":2,"lastTimestamp":%q}`, time.Now().UTC().Add(time.Second).Format(time.RFC3339))
		if _, err := c.CoreV1().Events(namespace).Patch(ctx, "x1", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		second, err := c.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "history.since=1h", Limit: 2, Continue: first.Continue})
		if err != nil {
			t.Fatal(err)
		}
		got := append(names(first.Items, func(e *corev1.Event) string { return e.Name }),
			names(second.Items, func(e *corev1.Event) string { return e.Name })...)
		if diff := cmp.Diff([]string{"x3", "x2", "x1", "x0"}, got); diff != "" {
			t.Errorf("pages (-want +got):\n%s", diff)
		}
		if len(second.Items) > 0 && second.Items[0].Count != 1 {
			t.Errorf("x1 on the second page has count %d, want its state in the window (1)", second.Items[0].Count)
		}
	})

	t.Run("a namespace's whole retention without a selective term", func(t *testing.T) {
		list, err := c.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "type=Warning,history.since=30d", Limit: 10})
		if err != nil {
			t.Fatalf("a month of the namespace's warnings: %v", err)
		}
		for _, e := range list.Items {
			if e.Namespace != namespace || e.Type != corev1.EventTypeWarning {
				t.Errorf("%s/%s (%s) in a list of %s's warnings", e.Namespace, e.Name, e.Type, namespace)
			}
		}
	})

	t.Run("refused", func(t *testing.T) {
		page, err := c.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "history.since=1h", Limit: 2})
		if err != nil || page.Continue == "" {
			t.Fatalf("first page: %v, continue %q", err, page.Continue)
		}
		for _, tc := range []struct {
			name          string
			namespace     string
			allNamespaces bool
			opts          metav1.ListOptions
			watch         bool
			status        int32
			message       string
		}{
			{name: "watch", opts: metav1.ListOptions{FieldSelector: "history.since=1h"}, watch: true, status: http.StatusBadRequest, message: "for lists only"},
			{name: "watch with until", opts: metav1.ListOptions{FieldSelector: "reason=x,history.until=1h"}, watch: true, status: http.StatusBadRequest, message: "for lists only"},
			{name: "bad duration", opts: metav1.ListOptions{FieldSelector: "history.since=yesterday"}, status: http.StatusBadRequest, message: "fieldSelector.history.since"},
			{name: "negative duration", opts: metav1.ListOptions{FieldSelector: "history.since=-1h"}, status: http.StatusBadRequest, message: "fieldSelector.history.since"},
			{name: "bad until", opts: metav1.ListOptions{FieldSelector: "history.since=1h,history.until=2026-13-01"}, status: http.StatusBadRequest, message: "fieldSelector.history.until"},
			{name: "until without since", opts: metav1.ListOptions{FieldSelector: "history.until=1h"}, status: http.StatusBadRequest, message: "fieldSelector.history.since"},
			{name: "since after until", opts: metav1.ListOptions{FieldSelector: "history.since=1h,history.until=2h"}, status: http.StatusBadRequest, message: "must be before history.until"},
			{name: "!=", opts: metav1.ListOptions{FieldSelector: "history.since!=1h"}, status: http.StatusBadRequest, message: "only = is supported"},
			{name: "a week of every namespace without a selective term", allNamespaces: true, opts: metav1.ListOptions{FieldSelector: "reason=BackOff,history.since=7d"}, status: http.StatusBadRequest, message: "needs a term that selects one object's events"},
			{name: "garbage token", opts: metav1.ListOptions{FieldSelector: "history.since=1h", Continue: "garbage"}, status: http.StatusBadRequest, message: "continue"},
			{name: "token of another query", opts: metav1.ListOptions{FieldSelector: "reason=BackOff,history.since=1h", Continue: page.Continue}, status: http.StatusBadRequest, message: "another namespace or query"},
			{name: "token of another window", opts: metav1.ListOptions{FieldSelector: "history.since=2h", Continue: page.Continue}, status: http.StatusBadRequest, message: "another namespace or query"},
			{name: "token in another namespace", namespace: "elsewhere", opts: metav1.ListOptions{FieldSelector: "history.since=1h", Continue: page.Continue}, status: http.StatusBadRequest, message: "another namespace or query"},
			{name: "token across namespaces", allNamespaces: true, opts: metav1.ListOptions{FieldSelector: "history.since=1h", Continue: page.Continue}, status: http.StatusBadRequest, message: "another namespace or query"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ns := namespace
				switch {
				case tc.allNamespaces:
					ns = metav1.NamespaceAll
				case tc.namespace != "":
					ns = tc.namespace
				}
				var err error
				if tc.watch {
					var w interface{ Stop() }
					w, err = c.EventsV1().Events(ns).Watch(ctx, tc.opts)
					if err == nil {
						w.Stop()
					}
				} else {
					_, err = c.EventsV1().Events(ns).List(ctx, tc.opts)
				}
				status, ok := err.(apierrors.APIStatus)
				if !ok {
					t.Fatalf("got %v, want a %d", err, tc.status)
				}
				if status.Status().Code != tc.status || !strings.Contains(status.Status().Message, tc.message) {
					t.Errorf("got %d %q, want %d with %q", status.Status().Code, status.Status().Message, tc.status, tc.message)
				}
			})
		}
	})
}

func versionNamed(name string) version {
	for _, v := range versions {
		if v.name == name {
			return v
		}
	}
	panic(name)
}

// pollUntil polls cond every 250ms until it holds or within passes.
func pollUntil(ctx context.Context, within time.Duration, cond func() bool) error {
	return waitPoll(ctx, within, cond)
}
