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

package app

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kube-events/events-apiserver/pkg/eventtree"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the output")

var testNow = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, {Group: "apps", Version: "v1"}, {Group: "batch", Version: "v1"}})
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "Pod"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "apps", Version: "v1", Kind: "ReplicaSet"},
		{Group: "apps", Version: "v1", Kind: "StatefulSet"},
		{Group: "batch", Version: "v1", Kind: "CronJob"},
		{Group: "batch", Version: "v1", Kind: "Job"},
	} {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	return m
}

func TestResolveRoot(t *testing.T) {
	deployment := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	for _, tc := range []struct {
		args    []string
		want    Root
		wantErr bool
	}{
		{args: []string{"deployment/web"}, want: Root{Ref: eventtree.ObjectRef{Kind: "Deployment", Name: "web"}, Resource: deployment}},
		{args: []string{"deployments", "web"}, want: Root{Ref: eventtree.ObjectRef{Kind: "Deployment", Name: "web"}, Resource: deployment}},
		{args: []string{"Deployment/web"}, want: Root{Ref: eventtree.ObjectRef{Kind: "Deployment", Name: "web"}, Resource: deployment}},
		{args: []string{"deployments.apps/web"}, want: Root{Ref: eventtree.ObjectRef{Kind: "Deployment", Name: "web"}, Resource: deployment}},
		{args: []string{"deployments.v1.apps/web"}, want: Root{Ref: eventtree.ObjectRef{Kind: "Deployment", Name: "web"}, Resource: deployment}},
		{args: []string{"cronjob/nightly"}, want: Root{Ref: eventtree.ObjectRef{Kind: "CronJob", Name: "nightly"}, Resource: schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}}},
		{args: []string{"web"}, wantErr: true},
		{args: []string{"deployment/"}, wantErr: true},
		{args: []string{"deployment/web/x"}, wantErr: true},
		{args: []string{"deployment/web", "x"}, wantErr: true},
		{args: []string{"gadget/web"}, wantErr: true},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			got, err := ResolveRoot(testMapper(), tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ResolveRoot(%q) error %v, want error %v", tc.args, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ResolveRoot(%q) (-want +got):\n%s", tc.args, diff)
			}
		})
	}
}

func TestParseSince(t *testing.T) {
	for _, tc := range []struct {
		value   string
		want    time.Time
		wantErr bool
	}{
		{value: "7d", want: testNow.Add(-7 * 24 * time.Hour)},
		{value: "1d12h", want: testNow.Add(-36 * time.Hour)},
		{value: "90m", want: testNow.Add(-90 * time.Minute)},
		{value: "2026-03-01T00:00:00Z", want: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
		{value: "2026-04-01T00:00:00Z", wantErr: true},
		{value: "0s", wantErr: true},
		{value: "-1h", wantErr: true},
		{value: "week", wantErr: true},
	} {
		t.Run(tc.value, func(t *testing.T) {
			got, err := ParseSince(tc.value, testNow)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseSince(%q) error %v, want error %v", tc.value, err, tc.wantErr)
			}
			if !got.Equal(tc.want) {
				t.Errorf("ParseSince(%q) = %v, want %v", tc.value, got, tc.want)
			}
		})
	}
}

func TestTreeSelector(t *testing.T) {
	root := eventtree.ObjectRef{Kind: "Deployment", Name: "web"}
	start := time.Date(2026, 3, 7, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		typ, want string
	}{
		{want: "regarding.ancestor=Deployment/web,history.since=2026-03-07T11:00:00Z"},
		{typ: "Warning", want: "regarding.ancestor=Deployment/web,history.since=2026-03-07T11:00:00Z,type=Warning"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			if got := TreeSelector(root, start, tc.typ).String(); got != tc.want {
				t.Errorf("TreeSelector = %q, want %q", got, tc.want)
			}
		})
	}
}

// treeObject is an object of the fixture with its controller owner.
type treeObject struct {
	apiVersion, kind, name string
	owner                  *treeObject
}

func (o *treeObject) uid() types.UID { return types.UID("uid-" + o.name) }

// chain is the object's ancestry annotation: its owners, nearest first.
func (o *treeObject) chain() string {
	var chain []ownerchain.Ancestor
	for a := o.owner; a != nil; a = a.owner {
		chain = append(chain, ownerchain.Ancestor{Kind: a.kind, Name: a.name, UID: a.uid()})
	}
	return ownerchain.Encode(chain)
}

func (o *treeObject) event(name, typ, reason string, at time.Time, count int32, last time.Time) eventsv1.Event {
	e := eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
		EventTime:  metav1.NewMicroTime(at),
		Regarding:  corev1.ObjectReference{APIVersion: o.apiVersion, Kind: o.kind, Name: o.name, Namespace: "shop", UID: o.uid()},
		Type:       typ,
		Reason:     reason,
		Action:     reason,
		Note:       reason,
	}
	if chain := o.chain(); chain != "" {
		e.Annotations = map[string]string{ownerchain.Annotation: chain}
	}
	if count > 1 {
		e.Series = &eventsv1.EventSeries{Count: count, LastObservedTime: metav1.NewMicroTime(last)}
	}
	return e
}

func (o *treeObject) live() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: o.apiVersion, Kind: o.kind},
		ObjectMeta: metav1.ObjectMeta{Name: o.name, Namespace: "shop", UID: o.uid()},
	}
	if o.owner != nil {
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: o.owner.apiVersion, Kind: o.owner.kind, Name: o.owner.name, UID: o.owner.uid(), Controller: ptr.To(true)}}
	}
	return m
}

// metadataScheme knows the fixture's kinds as object metadata, for the
// fake metadata client.
func metadataScheme() *runtime.Scheme {
	scheme := metadatafake.NewTestScheme()
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "Pod"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	} {
		scheme.AddKnownTypeWithName(gvk, &metav1.PartialObjectMetadata{})
		scheme.AddKnownTypeWithName(gvk.GroupVersion().WithKind(gvk.Kind+"List"), &metav1.PartialObjectMetadataList{})
	}
	return scheme
}

// fakeEventsServer answers event lists as the server does for the tree's
// selector, a page of at most limit events at a time, and records the
// requests.
type fakeEventsServer struct {
	events []eventsv1.Event
	// refuse are the versions that answer 400, as kube-apiserver's
	// events.k8s.io/v1 does for regarding.ancestor.
	refuse   map[string]bool
	requests []metav1.ListOptions
	versions []string
}

func (s *fakeEventsServer) list(action clienttesting.Action) (bool, runtime.Object, error) {
	opts := action.(clienttesting.ListActionImpl).ListOptions
	version := action.GetResource().Version
	s.requests = append(s.requests, opts)
	s.versions = append(s.versions, version)
	if s.refuse[version] {
		return true, nil, apierrors.NewBadRequest(`unable to parse requirement: field label not supported: regarding.ancestor`)
	}
	from := 0
	if opts.Continue != "" {
		var err error
		if from, err = strconv.Atoi(opts.Continue); err != nil {
			return true, nil, err
		}
	}
	to := len(s.events)
	if opts.Limit > 0 {
		to = min(from+int(opts.Limit), to)
	}
	list := &eventsv1.EventList{Items: s.events[from:to]}
	if to < len(s.events) {
		list.Continue = strconv.Itoa(to)
	}
	if version == "v1beta1" {
		old := &eventsv1beta1.EventList{ListMeta: list.ListMeta}
		for _, e := range list.Items {
			old.Items = append(old.Items, toV1beta1(e))
		}
		return true, old, nil
	}
	return true, list, nil
}

func toV1beta1(e eventsv1.Event) eventsv1beta1.Event {
	out := eventsv1beta1.Event{
		ObjectMeta: e.ObjectMeta, EventTime: e.EventTime, Reason: e.Reason, Regarding: e.Regarding, Note: e.Note, Type: e.Type,
		DeprecatedFirstTimestamp: e.DeprecatedFirstTimestamp, DeprecatedLastTimestamp: e.DeprecatedLastTimestamp, DeprecatedCount: e.DeprecatedCount,
	}
	if e.Series != nil {
		out.Series = &eventsv1beta1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}

func TestCommandGolden(t *testing.T) {
	minute, day := time.Minute, 24*time.Hour
	ago := func(d time.Duration) time.Time { return testNow.Add(-d) }
	web := &treeObject{apiVersion: "apps/v1", kind: "Deployment", name: "web"}
	oldRS := &treeObject{apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-5d8f7", owner: web}
	newRS := &treeObject{apiVersion: "apps/v1", kind: "ReplicaSet", name: "web-7c9b4", owner: web}
	crashed := &treeObject{apiVersion: "v1", kind: "Pod", name: "web-5d8f7-aaaaa", owner: oldRS}
	replaced := &treeObject{apiVersion: "v1", kind: "Pod", name: "web-5d8f7-bbbbb", owner: oldRS}
	running := &treeObject{apiVersion: "v1", kind: "Pod", name: "web-7c9b4-ccccc", owner: newRS}
	quiet := &treeObject{apiVersion: "v1", kind: "Pod", name: "web-7c9b4-ddddd", owner: newRS}
	other := &treeObject{apiVersion: "v1", kind: "Pod", name: "api-0"}

	// Newest first, as a history list answers.
	events := []eventsv1.Event{
		running.event("e9", "Normal", "Started", ago(2*day-minute), 1, time.Time{}),
		running.event("e8", "Normal", "Scheduled", ago(2*day), 1, time.Time{}),
		oldRS.event("e7", "Normal", "SuccessfulDelete", ago(2*day), 1, time.Time{}),
		newRS.event("e6", "Normal", "SuccessfulCreate", ago(2*day), 1, time.Time{}),
		web.event("e5", "Normal", "ScalingReplicaSet", ago(2*day), 1, time.Time{}),
		crashed.event("e4", "Warning", "BackOff", ago(5*day), 57, ago(2*day+minute)),
		replaced.event("e3", "Normal", "Killing", ago(4*day), 1, time.Time{}),
		crashed.event("e2", "Normal", "Scheduled", ago(5*day), 1, time.Time{}),
		oldRS.event("e1", "Normal", "SuccessfulCreate", ago(5*day), 2, ago(5*day-minute)),
		web.event("e0", "Normal", "ScalingReplicaSet", ago(5*day), 1, time.Time{}),
	}
	server := &fakeEventsServer{events: events}
	clientset := fake.NewClientset()
	clientset.PrependReactor("list", "events", server.list)
	live := metadatafake.NewSimpleMetadataClient(metadataScheme(),
		web.live(), oldRS.live(), newRS.live(), running.live(), quiet.live(), other.live())

	for _, tc := range []struct {
		name     string
		since    string
		typ      string
		live     bool
		width    int
		terminal int // a terminal of this width; 0: no terminal
		noColor  bool
		// refuseV1: events.k8s.io/v1 is kube-apiserver's, which refuses the
		// selector; the command reads v1beta1, and draws the same tree.
		refuseV1 bool
		golden   string
	}{
		{name: "deployment-web", since: "7d", live: true, width: 100},
		{name: "deployment-web-events-only", since: "7d", width: 100},
		{name: "deployment-web-terminal", since: "7d", live: true, terminal: 90},
		{name: "deployment-web-terminal-no-color", since: "7d", live: true, terminal: 90, noColor: true},
		{name: "v1-refused-read-from-v1beta1", since: "7d", live: true, width: 100, refuseV1: true, golden: "deployment-web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server.requests, server.versions = nil, nil
			server.refuse = map[string]bool{"v1": tc.refuseV1}
			var out, errOut bytes.Buffer
			o := NewOptions(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
			o.Since, o.Type, o.Live, o.Width, o.NoColor, o.PageSize = tc.since, tc.typ, tc.live, tc.width, tc.noColor, 4
			o.Now = func() time.Time { return testNow }
			o.Clients = &Clients{Mapper: testMapper(), Events: clientset.EventsV1(), EventsV1beta1: clientset.EventsV1beta1(), Metadata: live, Namespace: "shop"}
			o.IsTerminal = func(io.Writer) (int, bool) { return tc.terminal, tc.terminal > 0 }
			if err := o.Run(context.Background(), []string{"deployment/web"}); err != nil {
				t.Fatal(err)
			}
			if errOut.Len() > 0 {
				t.Errorf("stderr: %s", errOut.String())
			}
			goldenName := tc.name
			if tc.golden != "" {
				goldenName = tc.golden
			}
			golden(t, filepath.Join("testdata", goldenName+".golden"), out.String())

			wantSelector := "regarding.ancestor=Deployment/web,history.since=2026-03-07T12:00:00Z"
			var want []metav1.ListOptions
			var wantVersions []string
			if tc.refuseV1 {
				want = append(want, metav1.ListOptions{FieldSelector: wantSelector, Limit: 4})
				wantVersions = append(wantVersions, "v1")
			}
			for _, token := range []string{"", "4", "8"} {
				want = append(want, metav1.ListOptions{FieldSelector: wantSelector, Limit: 4, Continue: token})
				if tc.refuseV1 {
					wantVersions = append(wantVersions, "v1beta1")
				} else {
					wantVersions = append(wantVersions, "v1")
				}
			}
			if diff := cmp.Diff(want, server.requests); diff != "" {
				t.Errorf("list requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantVersions, server.versions); diff != "" {
				t.Errorf("versions asked (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCommandRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		set  func(*Options)
	}{
		{name: "type", args: []string{"deployment/web"}, set: func(o *Options) { o.Type = "Error" }},
		{name: "since", args: []string{"deployment/web"}, set: func(o *Options) { o.Since = "yesterday" }},
		{name: "object", args: []string{"web"}, set: func(*Options) {}},
		{name: "api-version", args: []string{"deployment/web"}, set: func(o *Options) { o.APIVersion = "v2" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions(genericiooptions.IOStreams{Out: io.Discard, ErrOut: io.Discard})
			o.Clients = &Clients{Mapper: testMapper(), Events: fake.NewClientset().EventsV1(), Namespace: "shop"}
			tc.set(o)
			if err := o.Run(context.Background(), tc.args); err == nil {
				t.Error("Run succeeded, want an error")
			}
		})
	}
}

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}
