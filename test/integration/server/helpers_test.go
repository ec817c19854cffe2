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
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// requestTimeout bounds every request and watch of a test step.
const requestTimeout = 30 * time.Second

const (
	jsonMediaType     = runtime.ContentTypeJSON
	protobufMediaType = runtime.ContentTypeProtobuf
)

// client is an unmodified client-go clientset speaking one media type.
type client struct {
	// name is the media type's short name, for test names.
	name string
	*kubernetes.Clientset
}

// clientsFor returns a JSON and a protobuf clientset for the server. The
// protobuf one sends and accepts only protobuf; both check that every
// answer about events comes in the media type they asked for.
func clientsFor(t testing.TB, s *framework.Server) []client {
	t.Helper()
	return []client{
		{name: "json", Clientset: clientsetFor(t, s.RestConfig, jsonMediaType)},
		{name: "protobuf", Clientset: clientsetFor(t, s.RestConfig, protobufMediaType)},
	}
}

// jsonClient is the JSON clientset for the shared server.
func jsonClient(t testing.TB) *kubernetes.Clientset {
	return clientsetFor(t, shared.RestConfig, jsonMediaType)
}

func clientsetFor(t testing.TB, base *rest.Config, mediaType string) *kubernetes.Clientset {
	t.Helper()
	config := rest.CopyConfig(base)
	config.ContentType = mediaType
	config.AcceptContentTypes = mediaType
	checker := &mediaTypeChecker{want: mediaType}
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		checker.next = rt
		return checker
	})
	t.Cleanup(func() {
		if bad := checker.violations(); len(bad) > 0 {
			t.Errorf("answers not in %s:\n%s", mediaType, strings.Join(bad, "\n"))
		}
	})
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// mediaTypeChecker records answers about events whose Content-Type is not
// the one the client asked for, so that a protobuf client that silently
// got JSON fails its test.
type mediaTypeChecker struct {
	want string
	next http.RoundTripper
	mu   sync.Mutex
	bad  []string
}

func (c *mediaTypeChecker) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil || !strings.Contains(req.URL.Path, "/events") {
		return resp, err
	}
	// Watches answer "<type>;stream=watch".
	if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, c.want) {
		c.mu.Lock()
		c.bad = append(c.bad, fmt.Sprintf("%s %s: %d %s", req.Method, req.URL, resp.StatusCode, got))
		c.mu.Unlock()
	}
	return resp, err
}

func (c *mediaTypeChecker) violations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.bad...)
}

var namespaceCounter atomic.Int64

var notDNSLabel = regexp.MustCompile(`[^a-z0-9]+`)

// namespaceFor returns a namespace no other test uses, named after t.
// Namespaces need no object on this server: they are where events live.
func namespaceFor(t testing.TB) string {
	name := strings.Trim(notDNSLabel.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 40 {
		name = strings.Trim(name[len(name)-40:], "-")
	}
	return fmt.Sprintf("%s-%d", name, namespaceCounter.Add(1))
}

// ctxFor returns a context that ends after requestTimeout or with the test.
func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// now is the current time at the precision every encoding keeps:
// metav1.Time is serialized in whole seconds.
func now() time.Time { return time.Now().UTC().Truncate(time.Second) }

// microNow is the current time at metav1.MicroTime's precision.
func microNow() metav1.MicroTime {
	return metav1.NewMicroTime(time.Now().UTC().Truncate(time.Microsecond))
}

// eventView is an event in the terms common to every served version, so
// that the same event read through different versions can be compared.
// reportingController is core/v1's reportingComponent; times are RFC 3339
// in UTC.
type eventView struct {
	Name, Namespace, UID, ResourceVersion string

	Regarding           corev1.ObjectReference
	Related             *corev1.ObjectReference
	Note                string
	Reason              string
	Action              string
	Type                string
	ReportingController string
	ReportingInstance   string
	EventTime           string
	Series              *seriesView

	SourceComponent, SourceHost string
	Count                       int32
	FirstTimestamp              string
	LastTimestamp               string
}

type seriesView struct {
	Count            int32
	LastObservedTime string
}

func timeString(t metav1.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func microTimeString(t metav1.MicroTime) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func viewOfCore(e *corev1.Event) eventView {
	v := eventView{
		Name: e.Name, Namespace: e.Namespace, UID: string(e.UID), ResourceVersion: e.ResourceVersion,
		Regarding: e.InvolvedObject, Related: e.Related, Note: e.Message, Reason: e.Reason, Action: e.Action,
		Type: e.Type, ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance,
		EventTime:       microTimeString(e.EventTime),
		SourceComponent: e.Source.Component, SourceHost: e.Source.Host, Count: e.Count,
		FirstTimestamp: timeString(e.FirstTimestamp), LastTimestamp: timeString(e.LastTimestamp),
	}
	if e.Series != nil {
		v.Series = &seriesView{Count: e.Series.Count, LastObservedTime: microTimeString(e.Series.LastObservedTime)}
	}
	return v
}

func viewOfV1(e *eventsv1.Event) eventView {
	v := eventView{
		Name: e.Name, Namespace: e.Namespace, UID: string(e.UID), ResourceVersion: e.ResourceVersion,
		Regarding: e.Regarding, Related: e.Related, Note: e.Note, Reason: e.Reason, Action: e.Action,
		Type: e.Type, ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance,
		EventTime:       microTimeString(e.EventTime),
		SourceComponent: e.DeprecatedSource.Component, SourceHost: e.DeprecatedSource.Host, Count: e.DeprecatedCount,
		FirstTimestamp: timeString(e.DeprecatedFirstTimestamp), LastTimestamp: timeString(e.DeprecatedLastTimestamp),
	}
	if e.Series != nil {
		v.Series = &seriesView{Count: e.Series.Count, LastObservedTime: microTimeString(e.Series.LastObservedTime)}
	}
	return v
}

func viewOfV1beta1(e *eventsv1beta1.Event) eventView {
	v := eventView{
		Name: e.Name, Namespace: e.Namespace, UID: string(e.UID), ResourceVersion: e.ResourceVersion,
		Regarding: e.Regarding, Related: e.Related, Note: e.Note, Reason: e.Reason, Action: e.Action,
		Type: e.Type, ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance,
		EventTime:       microTimeString(e.EventTime),
		SourceComponent: e.DeprecatedSource.Component, SourceHost: e.DeprecatedSource.Host, Count: e.DeprecatedCount,
		FirstTimestamp: timeString(e.DeprecatedFirstTimestamp), LastTimestamp: timeString(e.DeprecatedLastTimestamp),
	}
	if e.Series != nil {
		v.Series = &seriesView{Count: e.Series.Count, LastObservedTime: microTimeString(e.Series.LastObservedTime)}
	}
	return v
}

// apiVersion is one served version of events, through the typed clients.
type apiVersion struct {
	name string
	// create writes the event in v through this version.
	create func(ctx context.Context, c client, v eventView) (eventView, error)
	get    func(ctx context.Context, c client, namespace, name string) (eventView, error)
	list   func(ctx context.Context, c client, namespace string, opts metav1.ListOptions) (items []eventView, meta metav1.ListMeta, err error)
	watch  func(ctx context.Context, c client, namespace string, opts metav1.ListOptions) (watch.Interface, error)
	// view converts an object from this version's watch.
	view func(runtime.Object) (eventView, bool)
	// legacy is true for core/v1, which shows reportingComponent as
	// stored, where events.k8s.io falls back to source.component.
	legacy bool
}

// typedEvents is what the typed clients of every version offer for events.
type typedEvents[E, L any] interface {
	Create(ctx context.Context, event *E, opts metav1.CreateOptions) (*E, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*E, error)
	List(ctx context.Context, opts metav1.ListOptions) (*L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// newAPIVersion builds an apiVersion from one version's typed client and its
// conversions to and from eventView.
func newAPIVersion[E, L any](
	name string,
	legacy bool,
	events func(c client, namespace string) typedEvents[E, L],
	eventOf func(eventView) *E,
	viewOf func(*E) eventView,
	itemsOf func(*L) ([]E, metav1.ListMeta),
) apiVersion {
	return apiVersion{
		name:   name,
		legacy: legacy,
		create: func(ctx context.Context, c client, v eventView) (eventView, error) {
			e, err := events(c, v.Namespace).Create(ctx, eventOf(v), metav1.CreateOptions{})
			if err != nil {
				return eventView{}, err
			}
			return viewOf(e), nil
		},
		get: func(ctx context.Context, c client, namespace, name string) (eventView, error) {
			e, err := events(c, namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return eventView{}, err
			}
			return viewOf(e), nil
		},
		list: func(ctx context.Context, c client, namespace string, opts metav1.ListOptions) ([]eventView, metav1.ListMeta, error) {
			l, err := events(c, namespace).List(ctx, opts)
			if err != nil {
				return nil, metav1.ListMeta{}, err
			}
			items, meta := itemsOf(l)
			var views []eventView
			for i := range items {
				views = append(views, viewOf(&items[i]))
			}
			return views, meta, nil
		},
		watch: func(ctx context.Context, c client, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
			return events(c, namespace).Watch(ctx, opts)
		},
		view: func(obj runtime.Object) (eventView, bool) {
			e, ok := any(obj).(*E)
			if !ok {
				return eventView{}, false
			}
			return viewOf(e), true
		},
	}
}

var (
	coreV1 = newAPIVersion("core/v1", true,
		func(c client, ns string) typedEvents[corev1.Event, corev1.EventList] { return c.CoreV1().Events(ns) },
		coreEventOf, viewOfCore,
		func(l *corev1.EventList) ([]corev1.Event, metav1.ListMeta) { return l.Items, l.ListMeta })
	eventsV1beta1 = newAPIVersion("events.k8s.io/v1beta1", false,
		func(c client, ns string) typedEvents[eventsv1beta1.Event, eventsv1beta1.EventList] {
			return c.EventsV1beta1().Events(ns)
		},
		v1beta1EventOf, viewOfV1beta1,
		func(l *eventsv1beta1.EventList) ([]eventsv1beta1.Event, metav1.ListMeta) { return l.Items, l.ListMeta })
	eventsV1 = newAPIVersion("events.k8s.io/v1", false,
		func(c client, ns string) typedEvents[eventsv1.Event, eventsv1.EventList] {
			return c.EventsV1().Events(ns)
		},
		v1EventOf, viewOfV1,
		func(l *eventsv1.EventList) ([]eventsv1.Event, metav1.ListMeta) { return l.Items, l.ListMeta })

	allVersions = []apiVersion{coreV1, eventsV1beta1, eventsV1}
)

func parseTime(s string) metav1.Time {
	if s == "" {
		return metav1.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return metav1.NewTime(t)
}

func parseMicroTime(s string) metav1.MicroTime {
	return metav1.MicroTime(parseTime(s))
}

func coreEventOf(v eventView) *corev1.Event {
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: v.Name, Namespace: v.Namespace, ResourceVersion: v.ResourceVersion},
		InvolvedObject: v.Regarding, Related: v.Related, Message: v.Note, Reason: v.Reason, Action: v.Action,
		Type: v.Type, ReportingController: v.ReportingController, ReportingInstance: v.ReportingInstance,
		EventTime: parseMicroTime(v.EventTime),
		Source:    corev1.EventSource{Component: v.SourceComponent, Host: v.SourceHost}, Count: v.Count,
		FirstTimestamp: parseTime(v.FirstTimestamp), LastTimestamp: parseTime(v.LastTimestamp),
	}
	if v.Series != nil {
		e.Series = &corev1.EventSeries{Count: v.Series.Count, LastObservedTime: parseMicroTime(v.Series.LastObservedTime)}
	}
	return e
}

func v1EventOf(v eventView) *eventsv1.Event {
	e := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: v.Name, Namespace: v.Namespace, ResourceVersion: v.ResourceVersion},
		Regarding:  v.Regarding, Related: v.Related, Note: v.Note, Reason: v.Reason, Action: v.Action,
		Type: v.Type, ReportingController: v.ReportingController, ReportingInstance: v.ReportingInstance,
		EventTime:        parseMicroTime(v.EventTime),
		DeprecatedSource: corev1.EventSource{Component: v.SourceComponent, Host: v.SourceHost}, DeprecatedCount: v.Count,
		DeprecatedFirstTimestamp: parseTime(v.FirstTimestamp), DeprecatedLastTimestamp: parseTime(v.LastTimestamp),
	}
	if v.Series != nil {
		e.Series = &eventsv1.EventSeries{Count: v.Series.Count, LastObservedTime: parseMicroTime(v.Series.LastObservedTime)}
	}
	return e
}

func v1beta1EventOf(v eventView) *eventsv1beta1.Event {
	e := &eventsv1beta1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: v.Name, Namespace: v.Namespace, ResourceVersion: v.ResourceVersion},
		Regarding:  v.Regarding, Related: v.Related, Note: v.Note, Reason: v.Reason, Action: v.Action,
		Type: v.Type, ReportingController: v.ReportingController, ReportingInstance: v.ReportingInstance,
		EventTime:        parseMicroTime(v.EventTime),
		DeprecatedSource: corev1.EventSource{Component: v.SourceComponent, Host: v.SourceHost}, DeprecatedCount: v.Count,
		DeprecatedFirstTimestamp: parseTime(v.FirstTimestamp), DeprecatedLastTimestamp: parseTime(v.LastTimestamp),
	}
	if v.Series != nil {
		e.Series = &eventsv1beta1.EventSeries{Count: v.Series.Count, LastObservedTime: parseMicroTime(v.Series.LastObservedTime)}
	}
	return e
}

// legacyEvent is an event as client-go's tools/record writes it through
// core/v1: source, count and timestamps, no eventTime.
func legacyEvent(namespace, name string) eventView {
	at := now()
	return eventView{
		Name: name, Namespace: namespace,
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: "pod-" + name, UID: types.UID("uid-" + name),
			APIVersion: "v1", ResourceVersion: "42", FieldPath: "spec.containers{app}"},
		Note: "Back-off restarting failed container app", Reason: "BackOff", Type: corev1.EventTypeWarning,
		SourceComponent: "kubelet", SourceHost: "node-1", Count: 3,
		FirstTimestamp: timeString(metav1.NewTime(at.Add(-time.Minute))), LastTimestamp: timeString(metav1.NewTime(at)),
	}
}

// newEvent is an event as client-go's tools/events writes it through
// events.k8s.io: eventTime, reporting controller and instance, action,
// related, and a series.
func newEvent(namespace, name string) eventView {
	at := microNow()
	return eventView{
		Name: name, Namespace: namespace,
		Regarding: corev1.ObjectReference{Kind: "Deployment", Namespace: namespace, Name: "deploy-" + name,
			UID: types.UID("uid-" + name), APIVersion: "apps/v1", ResourceVersion: "7"},
		Related: &corev1.ObjectReference{Kind: "ReplicaSet", Namespace: namespace, Name: "rs-" + name,
			UID: types.UID("rs-uid-" + name), APIVersion: "apps/v1"},
		Note: "Scaled up replica set rs-" + name + " to 3", Reason: "ScalingReplicaSet", Action: "Scale",
		Type: corev1.EventTypeNormal, ReportingController: "example.com/deployment-controller", ReportingInstance: "controller-0",
		EventTime: microTimeString(metav1.NewMicroTime(at.Add(-2 * time.Minute))),
		Series:    &seriesView{Count: 4, LastObservedTime: microTimeString(at)},
	}
}

// postJSON sends body to path with the shared server's admin credentials
// and returns the result, for requests typed clients cannot make.
func postJSON(ctx context.Context, t testing.TB, path string, body any) rest.Result {
	t.Helper()
	data, ok := body.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	return jsonClient(t).CoreV1().RESTClient().Post().AbsPath(path).
		SetHeader("Content-Type", jsonMediaType).Body(data).Do(ctx)
}

// nextEvent returns the next watch event, failing the test after
// requestTimeout.
func nextEvent(t testing.TB, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case e, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return e
	case <-time.After(requestTimeout):
		t.Fatal("no watch event in time")
	}
	return watch.Event{}
}

// eventually polls cond every 100ms until it returns true or timeout.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	var lastErr error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		lastErr = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %v (last error: %v)", what, timeout, lastErr)
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
