package mirror

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apiserver"
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
			got, err := Convert(decoder, tt.upstream)
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tt.upstream.Name || got.Namespace != tt.upstream.Namespace {
				t.Errorf("identity = %s/%s", got.Namespace, got.Name)
			}
			if got.UID != "" || got.ResourceVersion != "" || !got.CreationTimestamp.IsZero() || got.ManagedFields != nil {
				t.Errorf("upstream server-owned metadata kept: %+v", got.ObjectMeta)
			}
			if got.Labels[LabelMirroredFrom] != SourceKubeAPIServer {
				t.Errorf("labels = %v, want %s=%s", got.Labels, LabelMirroredFrom, SourceKubeAPIServer)
			}
			if got.Annotations[AnnotationUID] != string(tt.upstream.UID) ||
				got.Annotations[AnnotationResourceVersion] != tt.upstream.ResourceVersion {
				t.Errorf("annotations = %v", got.Annotations)
			}
			if tt.upstream.Labels[LabelMirroredFrom] != "" {
				t.Errorf("Convert changed its input's labels")
			}
			tt.check(t, got)
		})
	}
}

func TestLatestTime(t *testing.T) {
	for _, tt := range []struct {
		name     string
		upstream *corev1.Event
		want     time.Time
	}{
		{"legacy: lastTimestamp", legacyEvent("a"), t1},
		{"series: lastObservedTime", seriesEvent("b"), t2},
		{"only creationTimestamp", &corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0)}}, t0},
		{"eventTime after creation", &corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0)},
			EventTime: metav1.NewMicroTime(t1)}, t1},
	} {
		if got := LatestTime(tt.upstream); !got.Equal(tt.want) {
			t.Errorf("%s: LatestTime = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestUnchanged(t *testing.T) {
	stored, err := Convert(apiserver.Codecs.UniversalDecoder(), legacyEvent("web-0.17a"))
	if err != nil {
		t.Fatal(err)
	}
	unlabelled := stored.DeepCopy()
	delete(unlabelled.Labels, LabelMirroredFrom)
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
		upstream := legacyEvent("web-0.17a")
		tt.upstream(upstream)
		if got := Unchanged(tt.stored, upstream); got != tt.want {
			t.Errorf("%s: Unchanged = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestQueue(t *testing.T) {
	ev := func(rv string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
	}
	t.Run("a new key beyond the bound is refused, an update of a waiting key takes no slot", func(t *testing.T) {
		q := newQueue(2)
		for _, step := range []struct {
			key, rv string
			want    bool
		}{{"ns/a", "1", true}, {"ns/b", "1", true}, {"ns/c", "1", false}, {"ns/a", "2", true}} {
			if got := q.add(step.key, ev(step.rv)); got != step.want {
				t.Errorf("add(%s@%s) = %v, want %v", step.key, step.rv, got, step.want)
			}
		}
		if q.len() != 2 {
			t.Errorf("len = %d, want 2", q.len())
		}
		key, got, _, _ := q.get()
		if key != "ns/a" || got.ResourceVersion != "2" {
			t.Errorf("get = %s@%s, want the latest version of the oldest key, ns/a@2", key, got.ResourceVersion)
		}
	})
	t.Run("a key in processing is not handed out again until done", func(t *testing.T) {
		q := newQueue(10)
		q.add("ns/a", ev("1"))
		key, _, _, _ := q.get()
		q.add("ns/a", ev("2"))
		q.add("ns/b", ev("1"))
		if next, _, _, _ := q.get(); next != "ns/b" {
			t.Fatalf("get = %s while ns/a is in processing, want ns/b", next)
		}
		q.done("ns/b")
		q.done(key)
		next, got, _, _ := q.get()
		if next != "ns/a" || got.ResourceVersion != "2" {
			t.Errorf("after done: get = %s@%s, want ns/a@2", next, got.ResourceVersion)
		}
	})
	t.Run("a failed version is held in a slot of its own and comes back with its failures", func(t *testing.T) {
		q := newQueue(2)
		q.add("ns/a", ev("1"))
		key, failedVersion, _, _ := q.get()
		if got := q.failed(key, failedVersion); got != failureHeld {
			t.Fatalf("failed = %v, want held", got)
		}
		q.add("ns/b", ev("1"))
		if q.add("ns/c", ev("1")) {
			t.Error("add of a third key succeeded while one is held and one waits in a queue of 2")
		}
		q.retry(key, failedVersion, 1)
		next, got, failures, _ := q.get()
		if next != "ns/b" {
			t.Fatalf("get = %s, want ns/b, queued before the retry", next)
		}
		q.done(next)
		next, got, failures, _ = q.get()
		if next != "ns/a" || got != failedVersion || failures != 1 {
			t.Errorf("get = %s@%s with %d failures, want ns/a@1 with 1", next, got.ResourceVersion, failures)
		}
	})
	t.Run("a newer version supersedes a failed one", func(t *testing.T) {
		for _, tt := range []struct {
			name         string
			newerFirst   bool // the newer version arrives while the old one is being written
			wantOutcome  failure
			wantVersions []string
		}{
			{"newer version arrives during the failed write: no retry", true, failureSuperseded, []string{"2"}},
			{"newer version arrives while held: the retry is cancelled", false, failureHeld, []string{"2"}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				q := newQueue(10)
				q.add("ns/a", ev("1"))
				key, old, _, _ := q.get()
				if tt.newerFirst {
					q.add("ns/a", ev("2"))
				}
				if got := q.failed(key, old); got != tt.wantOutcome {
					t.Fatalf("failed = %v, want %v", got, tt.wantOutcome)
				}
				if !tt.newerFirst {
					q.add("ns/a", ev("2"))
				}
				q.retry(key, old, 1)
				var versions []string
				for q.len() > 0 {
					k, e, _, _ := q.get()
					versions = append(versions, e.ResourceVersion)
					q.done(k)
				}
				if strings.Join(versions, ",") != strings.Join(tt.wantVersions, ",") {
					t.Errorf("versions handed out = %v, want %v", versions, tt.wantVersions)
				}
			})
		}
	})
	t.Run("no room to hold a failed version", func(t *testing.T) {
		q := newQueue(1)
		q.add("ns/a", ev("1"))
		key, e, _, _ := q.get()
		q.add("ns/b", ev("1"))
		if got := q.failed(key, e); got != failureQueueFull {
			t.Errorf("failed = %v, want queue full", got)
		}
	})
	t.Run("shutDown releases a blocked get", func(t *testing.T) {
		q := newQueue(1)
		result := make(chan bool)
		go func() { _, _, _, ok := q.get(); result <- ok }()
		q.shutDown()
		select {
		case ok := <-result:
			if ok {
				t.Error("get returned ok after shutDown")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("get still blocked after shutDown")
		}
	})
}

// The reflector's store never blocks: beyond the queue's bound, events are
// dropped and counted; events carrying our own label are skipped, not counted.
func TestEnqueueDropsAndCountsWhenFull(t *testing.T) {
	for _, tt := range []struct {
		name        string
		queueSize   int
		distinct    int
		ours        int
		wantQueued  int
		wantDropped float64
	}{
		{"within the bound", 5, 5, 0, 5, 0},
		{"beyond the bound", 5, 12, 0, 5, 7},
		{"our own events are skipped", 5, 3, 4, 3, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := New(nil, nil, apiserver.Codecs.UniversalDecoder(), Options{QueueSize: tt.queueSize})
			before := counterValue(t, DropQueueFull)
			store := reflectorStore{m}
			var list []any
			for i := range tt.distinct {
				list = append(list, legacyEvent(fmt.Sprintf("e-%d", i)))
			}
			for i := range tt.ours {
				e := legacyEvent(fmt.Sprintf("ours-%d", i))
				e.Labels[LabelMirroredFrom] = SourceKubeAPIServer
				list = append(list, e)
			}
			if err := store.Replace(list, "100"); err != nil {
				t.Fatal(err)
			}
			// Updates and deletes of queued keys neither add nor drop.
			if err := store.Update(legacyEvent("e-0")); err != nil {
				t.Fatal(err)
			}
			if err := store.Delete(legacyEvent("e-1")); err != nil {
				t.Fatal(err)
			}
			if got := m.queue.len(); got != tt.wantQueued {
				t.Errorf("queued = %d, want %d", got, tt.wantQueued)
			}
			if got := counterValue(t, DropQueueFull) - before; got != tt.wantDropped {
				t.Errorf("dropped{reason=queue_full} grew by %v, want %v", got, tt.wantDropped)
			}
		})
	}
}

func counterValue(t *testing.T, reason string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(droppedTotal.WithLabelValues(reason))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestOptionsDefaulted(t *testing.T) {
	got := Options{}.Defaulted()
	want := Options{QueueSize: DefaultQueueSize, QPS: DefaultQPS, Burst: DefaultBurst, Workers: DefaultWorkers,
		MaxAttempts: DefaultMaxAttempts, RetryBackoff: DefaultRetryBackoff}
	if got != want {
		t.Errorf("Defaulted = %+v, want %+v", got, want)
	}
	set := Options{QueueSize: 5, QPS: 1, Burst: 2, Workers: 1, MaxAttempts: 1, RetryBackoff: time.Millisecond}
	if got := set.Defaulted(); got != set {
		t.Errorf("Defaulted changed set options: %+v", got)
	}
}

// Pagination continues a list, it does not start one: a relist after 410
// Gone is paginated and must count once.
func TestStartsFullList(t *testing.T) {
	yes := true
	for _, tt := range []struct {
		name    string
		options metav1.ListOptions
		watch   bool
		want    bool
	}{
		{"first list from the watch cache", metav1.ListOptions{ResourceVersion: "0"}, false, true},
		{"first page of a consistent list", metav1.ListOptions{Limit: 500}, false, true},
		{"next page", metav1.ListOptions{Limit: 500, Continue: "token"}, false, false},
		{"watch-list", metav1.ListOptions{SendInitialEvents: &yes, AllowWatchBookmarks: true}, true, true},
		{"watch resumed from a resourceVersion", metav1.ListOptions{ResourceVersion: "41", AllowWatchBookmarks: true}, true, false},
	} {
		if got := StartsFullList(tt.options, tt.watch); got != tt.want {
			t.Errorf("%s: StartsFullList = %v, want %v", tt.name, got, tt.want)
		}
	}
}
