package mirror_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apitypes "k8s.io/apimachinery/pkg/types"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apiserver"
	"github.com/kube-events/events-apiserver/pkg/mirror"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// restOptions builds the server's storage for events on an etcd, as the
// server does, without the rest of the server.
type restOptions struct {
	factory interface {
		NewConfig(schema.GroupResource, runtime.Object) (*storagebackend.ConfigForResource, error)
		ResourcePrefix(schema.GroupResource) string
	}
}

func (o restOptions) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	cfg, err := o.factory.NewConfig(resource, example)
	if err != nil {
		return generic.RESTOptions{}, err
	}
	return generic.RESTOptions{
		StorageConfig: cfg, Decorator: generic.UndecoratedStorage,
		ResourcePrefix: o.factory.ResourcePrefix(resource), DeleteCollectionWorkers: 1,
	}, nil
}

func startStore(t *testing.T) *eventregistry.REST {
	t.Helper()
	etcd := framework.StartEtcd(t)
	config := storagebackend.NewDefaultConfig(apiserver.DefaultEtcdPathPrefix, nil)
	config.Transport.ServerList = etcd.Endpoints
	factory := apiserver.NewStorageFactory(*config, apiserver.StorageMediaType, compatibility.DefaultBuildEffectiveVersion())
	store, err := eventregistry.NewREST(apiserver.Scheme, restOptions{factory}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Destroy)
	return store
}

func upstreamEvent(name, resourceVersion string, count int32) *corev1.Event {
	now := time.Now()
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: apitypes.UID("upstream-" + name), ResourceVersion: resourceVersion,
			CreationTimestamp: metav1.NewTime(now.Add(-time.Minute)),
		},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", APIVersion: "v1"},
		Reason:         "BackOff",
		Message:        "Back-off restarting failed container",
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: metav1.NewTime(now.Add(-time.Minute)),
		LastTimestamp:  metav1.NewTime(now),
		Count:          count,
		Type:           corev1.EventTypeWarning,
	}
}

func stored(t *testing.T, store *eventregistry.REST, name string) *core.Event {
	t.Helper()
	obj, err := store.Get(genericapirequest.WithNamespace(context.Background(), "default"), name, &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*core.Event)
}

// metricValue reads a counter (or gauge) sample of the legacy registry,
// which the server's /metrics serves.
func metricValue(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
	samples:
		for _, m := range family.GetMetric() {
			for _, pair := range m.GetLabel() {
				if labels[pair.GetName()] != pair.GetValue() {
					continue samples
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// Sync against the real registry store on etcd: create, no rewrite of an
// unchanged upstream version, update on a new one, invalid events counted.
func TestSyncUpsertsIntoTheStore(t *testing.T) {
	store := startStore(t)
	m := mirror.New(nil, store, apiserver.Codecs.UniversalDecoder(), mirror.Options{})
	ctx := context.Background()
	writes := func(operation string) float64 {
		return metricValue(t, "events_apiserver_mirror_writes_total", map[string]string{"operation": operation})
	}
	creates, updates := writes(mirror.OperationCreate), writes(mirror.OperationUpdate)

	for _, step := range []struct {
		name                     string
		upstream                 *corev1.Event
		wantCreates, wantUpdates float64
		wantCount                int32
		wantUpstreamRV           string
		wantOurRVChanged         bool
	}{
		{"first sight creates", upstreamEvent("web-0.1", "100", 1), 1, 0, 1, "100", true},
		{"same upstream version again (a relist) writes nothing", upstreamEvent("web-0.1", "100", 1), 0, 0, 1, "100", false},
		{"an upstream update (count) updates ours", upstreamEvent("web-0.1", "105", 2), 0, 1, 2, "105", true},
	} {
		var before string
		if step.wantCreates == 0 {
			before = stored(t, store, "web-0.1").ResourceVersion
		}
		if err := m.Sync(ctx, step.upstream); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		got := stored(t, store, "web-0.1")
		if got.Count != step.wantCount || got.Annotations[mirror.AnnotationResourceVersion] != step.wantUpstreamRV ||
			got.Labels[mirror.LabelMirroredFrom] != mirror.SourceKubeAPIServer ||
			got.Annotations[mirror.AnnotationUID] != string(step.upstream.UID) {
			t.Errorf("%s: stored count %d, labels %v, annotations %v", step.name, got.Count, got.Labels, got.Annotations)
		}
		if got.UID == step.upstream.UID || got.UID == "" {
			t.Errorf("%s: stored uid %q, want one of our own", step.name, got.UID)
		}
		if before != "" && (got.ResourceVersion != before) != step.wantOurRVChanged {
			t.Errorf("%s: our resourceVersion %s -> %s, want changed=%v", step.name, before, got.ResourceVersion, step.wantOurRVChanged)
		}
		if c, u := writes(mirror.OperationCreate)-creates, writes(mirror.OperationUpdate)-updates; c != step.wantCreates || u != step.wantUpdates {
			t.Errorf("%s: writes grew by create %v update %v, want %v and %v", step.name, c, u, step.wantCreates, step.wantUpdates)
		}
		creates, updates = writes(mirror.OperationCreate), writes(mirror.OperationUpdate)
	}

	// The legacy rules apply: an event in another namespace than the
	// object it is about is invalid, and not stored.
	invalid := upstreamEvent("web-0.2", "200", 1)
	invalid.InvolvedObject.Namespace = "other"
	if err := m.Sync(ctx, invalid); err == nil {
		t.Error("Sync of an event in the wrong namespace succeeded")
	}
	// Legacy rules, not the events.k8s.io ones: an event without eventTime,
	// action or reportingController is valid.
	if ev := stored(t, store, "web-0.1"); ev.Action != "" || !ev.EventTime.IsZero() {
		t.Errorf("stored legacy event gained events.k8s.io fields: %+v", ev)
	}
}

// failingStore is the real store whose first creates fail with a server
// timeout, as when etcd is briefly unreachable.
type failingStore struct {
	*eventregistry.REST
	mu       sync.Mutex
	failures int // creates still to fail
	creates  int // creates attempted
}

func (s *failingStore) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	s.mu.Lock()
	s.creates++
	fail := s.failures > 0
	if fail {
		s.failures--
	}
	s.mu.Unlock()
	if fail {
		return nil, apierrors.NewServerTimeout(core.Resource("events"), "create", 1)
	}
	return s.REST.Create(ctx, obj, validate, options)
}

// A failed write is retried with a backoff and counted as dropped only
// after the last attempt; an invalid event is not retried.
func TestWorkersRetryFailedWrites(t *testing.T) {
	store := startStore(t)
	for _, tt := range []struct {
		name                  string
		failures, maxAttempts int
		invalid               bool
		wantStored            bool
		wantCreates           int
		wantDropped           map[string]float64
	}{
		{name: "two failures, then stored", failures: 2, maxAttempts: 5, wantStored: true, wantCreates: 3},
		{name: "fails every attempt: dropped as error", failures: 100, maxAttempts: 3, wantCreates: 3,
			wantDropped: map[string]float64{mirror.DropError: 1}},
		{name: "invalid: dropped at once", invalid: true, maxAttempts: 5, wantCreates: 1,
			wantDropped: map[string]float64{mirror.DropInvalid: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			failing := &failingStore{REST: store, failures: tt.failures}
			m := mirror.New(nil, failing, apiserver.Codecs.UniversalDecoder(), mirror.Options{
				Workers: 2, MaxAttempts: tt.maxAttempts, RetryBackoff: 10 * time.Millisecond,
			})
			dropped := func(reason string) float64 {
				return metricValue(t, "events_apiserver_mirror_dropped_total", map[string]string{"reason": reason})
			}
			before := map[string]float64{}
			for _, reason := range []string{mirror.DropError, mirror.DropInvalid, mirror.DropQueueFull} {
				before[reason] = dropped(reason)
			}
			ctx, cancel := context.WithCancel(context.Background())
			wait := m.RunWorkers(ctx)
			defer func() { cancel(); wait() }()

			name := "retry-" + strings.ReplaceAll(tt.name, " ", "-")
			name = strings.NewReplacer(",", "", ":", "").Replace(name)
			event := upstreamEvent(name, "300", 1)
			if tt.invalid {
				event.InvolvedObject.Namespace = "other"
			}
			m.Enqueue(event)

			deadline := time.Now().Add(10 * time.Second)
			for {
				failing.mu.Lock()
				creates := failing.creates
				failing.mu.Unlock()
				settled := creates >= tt.wantCreates
				for reason, want := range tt.wantDropped {
					settled = settled && dropped(reason)-before[reason] >= want
				}
				if settled || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond) // no further attempt may follow
			failing.mu.Lock()
			if failing.creates != tt.wantCreates {
				t.Errorf("creates attempted = %d, want %d", failing.creates, tt.wantCreates)
			}
			failing.mu.Unlock()
			for _, reason := range []string{mirror.DropError, mirror.DropInvalid, mirror.DropQueueFull} {
				if got := dropped(reason) - before[reason]; got != tt.wantDropped[reason] {
					t.Errorf("dropped{reason=%s} grew by %v, want %v", reason, got, tt.wantDropped[reason])
				}
			}
			_, err := store.Get(genericapirequest.WithNamespace(context.Background(), "default"), name, &metav1.GetOptions{})
			if stored := err == nil; stored != tt.wantStored {
				t.Errorf("stored = %v (%v), want %v", stored, err, tt.wantStored)
			}
		})
	}
}
