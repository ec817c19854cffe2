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

package livestore_test

// The setup shared by the tests of the live store: the example Pods of
// k8s.io/apiserver, their protobuf storage codec, an in-process etcd, and a
// live store over it configured the way k8s.io/apiserver's cacher tests
// configure the watch cache.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/kubernetes"
	"go.etcd.io/etcd/server/v3/embed"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/etcd3"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/cache"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/livestore"
)

var (
	scheme = runtime.NewScheme()
	codecs = serializer.NewCodecFactory(scheme)
	// examplev1ProtoCodec is the storage codec: example.Pod stored as
	// example/v1 protobuf, as in k8s.io/apiserver's cacher tests.
	examplev1ProtoCodec runtime.Codec
)

func init() {
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	utilruntime.Must(example.AddToScheme(scheme))
	utilruntime.Must(examplev1.AddToScheme(scheme))
	utilruntime.Must(metav1.AddMetaToScheme(scheme))
	pb := protobuf.NewSerializer(scheme, scheme)
	examplev1ProtoCodec = codecs.CodecForVersions(pb, pb, schema.GroupVersions{examplev1.SchemeGroupVersion}, nil)

	// The comparing codec's scheme also knows the lists.
	metav1.AddToGroupVersion(compareScheme, metav1.SchemeGroupVersion)
	utilruntime.Must(example.AddToScheme(compareScheme))
	utilruntime.Must(examplev1.AddToScheme(compareScheme))
	compareScheme.AddKnownTypes(example.SchemeGroupVersion, &example.PodList{})
	compareScheme.AddKnownTypes(examplev1.SchemeGroupVersion, &examplev1.PodList{})
	comparePB := protobuf.NewSerializer(compareScheme, compareScheme)
	compareCodec = serializer.NewCodecFactory(compareScheme).CodecForVersions(comparePB, comparePB, schema.GroupVersions{examplev1.SchemeGroupVersion}, nil)
}

var (
	compareScheme = runtime.NewScheme()
	// compareCodec encodes what a store returns, lists and objects, as
	// example/v1 protobuf, for byte comparisons.
	compareCodec runtime.Codec
)

const resourcePrefix = "/pods/"

func newPod() runtime.Object     { return &example.Pod{} }
func newPodList() runtime.Object { return &example.PodList{} }

// getPodAttrs gives a Pod's labels and selectable fields, as the pod
// registry does.
func getPodAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	pod, ok := obj.(*example.Pod)
	if !ok {
		return nil, nil, fmt.Errorf("not a pod: %T", obj)
	}
	return labels.Set(pod.Labels), podSelectableFields(pod), nil
}

func podSelectableFields(pod *example.Pod) fields.Set {
	return fields.Set{
		"spec.nodeName":      pod.Spec.NodeName,
		"spec.restartPolicy": string(pod.Spec.RestartPolicy),
		"status.phase":       string(pod.Status.Phase),
		"metadata.name":      pod.Name,
		"metadata.namespace": pod.Namespace,
	}
}

// nodeNameTrigger is the watch trigger on spec.nodeName, as the pod
// registry's.
func nodeNameTrigger() storage.IndexerFuncs {
	return storage.IndexerFuncs{
		"spec.nodeName": func(obj runtime.Object) string {
			pod, ok := obj.(*example.Pod)
			if !ok {
				return ""
			}
			return pod.Spec.NodeName
		},
	}
}

// nodeNameIndexers are the indexes on spec.nodeName and
// metadata.namespace, as the pod registry's.
func nodeNameIndexers() *cache.Indexers {
	return &cache.Indexers{
		"f:spec.nodeName": func(obj interface{}) ([]string, error) {
			return []string{obj.(*example.Pod).Spec.NodeName}, nil
		},
		"f:metadata.namespace": func(obj interface{}) ([]string, error) {
			return []string{obj.(*example.Pod).Namespace}, nil
		},
	}
}

func namespaceKeyFunc(obj runtime.Object) (string, error) {
	return storage.NamespaceKeyFunc(resourcePrefix, obj)
}

func clusterScopedKeyFunc(obj runtime.Object) (string, error) {
	return storage.NoNamespaceKeyFunc(resourcePrefix, obj)
}

func podKey(pod *example.Pod) string {
	return fmt.Sprintf("/pods/%s/%s", pod.Namespace, pod.Name)
}

// setupOptions are the choices a test makes for its etcd, its etcd storage
// and its live store.
type setupOptions struct {
	etcdConfig   func(testing.TB) *embed.Config
	transformer  value.Transformer
	keyFunc      func(runtime.Object) (string, error)
	historyBytes int
	listErrors   int32
}

type setupOption func(*setupOptions)

func withTransformer(transformer value.Transformer) setupOption {
	return func(o *setupOptions) { o.transformer = transformer }
}

func withClusterScopedKeyFunc(o *setupOptions) { o.keyFunc = clusterScopedKeyFunc }

func withHistoryBytes(n int) setupOption {
	return func(o *setupOptions) { o.historyBytes = n }
}

// withProgressNotifyInterval makes etcd send watch progress notifications
// every interval.
func withProgressNotifyInterval(interval time.Duration) setupOption {
	return func(o *setupOptions) {
		o.etcdConfig = func(t testing.TB) *embed.Config {
			cfg := testserver.NewTestConfig(t)
			cfg.WatchProgressNotifyInterval = interval
			return cfg
		}
	}
}

// testEnv is one live store over one etcd.
type testEnv struct {
	ctx   context.Context
	store *livestore.Store
	// etcd is the client of the etcd under the store; its Kubernetes
	// interface is a storagetesting.KubernetesRecorder.
	etcd *kubernetes.Client
	// storage is the etcd storage.Interface the store writes through.
	storage storage.Interface
}

func (e *testEnv) recorder() *storagetesting.KubernetesRecorder {
	return e.etcd.Kubernetes.(*storagetesting.KubernetesRecorder)
}

// newEtcd starts an in-process etcd that ends with the test.
func newEtcd(t testing.TB, cfg *embed.Config) *kubernetes.Client {
	return testserver.RunEtcd(t, cfg)
}

// newEtcdStorage is the etcd3 storage of example Pods over client, as
// k8s.io/apiserver's cacher tests make it.
func newEtcdStorage(t testing.TB, client *kubernetes.Client, transformer value.Transformer) storage.Interface {
	versioner := storage.APIObjectVersioner{}
	compactor := etcd3.NewCompactor(client.Client, 0, clock.RealClock{}, nil)
	t.Cleanup(compactor.Stop)
	s, err := etcd3.New(
		client,
		compactor,
		examplev1ProtoCodec,
		newPod,
		newPodList,
		etcd3testing.PathPrefix(),
		resourcePrefix,
		schema.GroupResource{Resource: "pods"},
		transformer,
		etcd3.NewDefaultLeaseManagerConfig(),
		etcd3.NewDefaultDecoder(examplev1ProtoCodec, versioner),
		versioner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// storeConfig is the live store's configuration over s: example Pods,
// indexed and triggered on spec.nodeName.
func storeConfig(s storage.Interface, keyFunc func(runtime.Object) (string, error), historyBytes int) livestore.Config {
	return livestore.Config{
		Storage:        s,
		Codec:          examplev1ProtoCodec,
		GroupResource:  schema.GroupResource{Resource: "pods"},
		ResourcePrefix: resourcePrefix,
		KeyFunc:        keyFunc,
		NewFunc:        newPod,
		NewListFunc:    newPodList,
		GetAttrsFunc:   getPodAttrs,
		Indexers:       nodeNameIndexers(),
		IndexerFuncs:   nodeNameTrigger(),
		HistoryBytes:   historyBytes,
	}
}

// disableListFromCacheSnapshot turns off the watch cache's snapshots for
// the test: the live store keeps none, and the storage suites' expectations
// of a cache depend on the gate.
func disableListFromCacheSnapshot(t testing.TB) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.ListFromCacheSnapshot, false)
}

// newTestEnv starts an etcd, its storage and a live store over it, and
// waits until the store has loaded its first list.
func newTestEnv(t testing.TB, opts ...setupOption) *testEnv {
	t.Helper()
	o := setupOptions{
		transformer: identity.NewEncryptCheckTransformer(),
		keyFunc:     namespaceKeyFunc,
		// One failed list makes the store list again before it is ready.
		listErrors: 1,
	}
	for _, opt := range opts {
		opt(&o)
	}
	disableListFromCacheSnapshot(t)

	var cfg *embed.Config
	if o.etcdConfig != nil {
		cfg = o.etcdConfig(t)
	}
	client := newEtcd(t, cfg)
	etcdStorage := newEtcdStorage(t, client, o.transformer)
	injecting := &listErrorInjector{Interface: etcdStorage}
	injecting.errors.Store(o.listErrors)

	store, err := livestore.New(storeConfig(injecting, o.keyFunc, o.historyBytes))
	if err != nil {
		t.Fatalf("livestore.New: %v", err)
	}
	t.Cleanup(store.Stop)
	waitReady(t, store)
	// The store may have loaded through a watch with initial events rather
	// than a list; the reads the tests delegate to etcd must not fail.
	injecting.errors.Store(0)

	return &testEnv{ctx: context.Background(), store: store, etcd: client, storage: etcdStorage}
}

// waitReady waits until store has loaded its first list.
func waitReady(t testing.TB, store *livestore.Store) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, wait.ForeverTestTimeout, true,
		func(context.Context) (bool, error) { return store.Ready(), nil })
	if err != nil {
		t.Fatalf("store not ready after %v: %v", wait.ForeverTestTimeout, err)
	}
}

// listErrorInjector fails the first errors GetList calls, as
// storagetesting.StorageInjectingListErrors does, and can be reset.
type listErrorInjector struct {
	storage.Interface
	errors atomic.Int32
}

func (s *listErrorInjector) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if s.errors.Add(-1) >= 0 {
		return fmt.Errorf("injected list error")
	}
	return s.Interface.GetList(ctx, key, opts, listObj)
}

// increaseRVFunc advances etcd's revision with a write outside the store's
// prefix.
func increaseRVFunc(client *kubernetes.Client) storagetesting.IncreaseRVFunc {
	return func(ctx context.Context, t *testing.T) int64 {
		resp, err := client.Put(ctx, "increaseRV", "ok")
		if err != nil {
			t.Fatalf("Could not update increaseRV: %v", err)
		}
		return resp.Header.Revision
	}
}

// compactEtcd compacts etcd at the given resourceVersion: the compaction
// the cacher's tests use when the watch cache keeps no snapshots.
func compactEtcd(client *kubernetes.Client) storagetesting.Compaction {
	return func(ctx context.Context, t *testing.T, resourceVersion string) {
		rv, err := storage.APIObjectVersioner{}.ParseResourceVersion(resourceVersion)
		if err != nil {
			t.Fatal(err)
		}
		var current int64
		current, _, _, err = etcd3.Compact(ctx, client.Client, current, int64(rv))
		if err != nil {
			_, _, _, err = etcd3.Compact(ctx, client.Client, current, int64(rv))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// compactHistory compacts etcd at resourceVersion and then pushes the
// changes up to it out of the store's bounded history, by writing filler
// Pods in another namespace until a watch from just before resourceVersion
// answers 410 Expired. The store must be set up with a small HistoryBytes.
func compactHistory(store storage.Interface, client *kubernetes.Client) storagetesting.Compaction {
	return func(ctx context.Context, t *testing.T, resourceVersion string) {
		compactEtcd(client)(ctx, t, resourceVersion)
		rv, err := storage.APIObjectVersioner{}.ParseResourceVersion(resourceVersion)
		if err != nil {
			t.Fatal(err)
		}
		probeRV := fmt.Sprint(rv - 1)
		const batch, maxFillers = 16, 1024
		filler := strings.Repeat("x", 1024)
		for n := 0; n < maxFillers; n += batch {
			for i := n; i < n+batch; i++ {
				pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{
					Namespace:   "history-filler",
					Name:        fmt.Sprintf("filler-%d", i),
					Annotations: map[string]string{"filler": filler},
				}}
				if err := store.Create(ctx, podKey(pod), pod, &example.Pod{}, 0); err != nil {
					t.Fatalf("creating a filler: %v", err)
				}
			}
			if expired(ctx, t, store, probeRV) {
				return
			}
		}
		t.Fatalf("a watch from %s was still served after %d fillers", probeRV, maxFillers)
	}
}

// expired reports whether a watch of every Pod from rv answers 410 Expired,
// as an error or as its first event.
func expired(ctx context.Context, t *testing.T, store storage.Interface, rv string) bool {
	w, err := store.Watch(ctx, resourcePrefix, storage.ListOptions{ResourceVersion: rv, Predicate: storage.Everything, Recursive: true})
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return true
		}
		t.Fatalf("watch from %s: %v", rv, err)
	}
	defer w.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch from %s closed without an event", rv)
		}
		if ev.Type != watch.Error {
			return false
		}
		status, ok := ev.Object.(*metav1.Status)
		if !ok {
			t.Fatalf("watch from %s: error event with %T", rv, ev.Object)
		}
		return status.Code == 410
	case <-time.After(wait.ForeverTestTimeout):
		t.Fatalf("watch from %s: no event in %v", rv, wait.ForeverTestTimeout)
	}
	return false
}

// swappableTransformer is the etcd storage's transformer, which a test can
// replace while the storage runs.
type swappableTransformer struct {
	mu      sync.RWMutex
	current value.Transformer
}

func (s *swappableTransformer) get() value.Transformer {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.current
}

func (s *swappableTransformer) set(tr value.Transformer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current = tr
}

func (s *swappableTransformer) TransformFromStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, bool, error) {
	return s.get().TransformFromStorage(ctx, data, dataCtx)
}

func (s *swappableTransformer) TransformToStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, error) {
	return s.get().TransformToStorage(ctx, data, dataCtx)
}

// storeWithPrefixTransformer is a live store over an etcd storage whose
// transformer is a storagetesting.PrefixTransformer that the suites modify
// (storagetesting.InterfaceWithPrefixTransformer).
type storeWithPrefixTransformer struct {
	*livestore.Store
	transformer *swappableTransformer
	// base is what the modifiers modify a copy of: never in use, so
	// never copied while the storage counts its reads.
	base *storagetesting.PrefixTransformer
}

func (s *storeWithPrefixTransformer) UpdatePrefixTransformer(modifier storagetesting.PrefixTransformerModifier) func() {
	original := s.transformer.get()
	modified := *s.base
	s.transformer.set(modifier(&modified))
	return func() { s.transformer.set(original) }
}

// testPrefix is the prefix the PrefixTransformer adds to stored values.
const testPrefix = "test!"

func newPrefixTransformerEnv(t testing.TB) (*testEnv, *storeWithPrefixTransformer) {
	base := storagetesting.NewPrefixTransformer([]byte(testPrefix), false)
	inUse := *base
	tr := &swappableTransformer{current: &inUse}
	env := newTestEnv(t, withTransformer(tr))
	return env, &storeWithPrefixTransformer{Store: env.store, transformer: tr, base: base}
}

// unwrap is the object a watch event carries, without the wrapper a store
// may put around it to share its serializations (runtime.CacheableObject).
func unwrap(obj runtime.Object) runtime.Object {
	if c, ok := obj.(runtime.CacheableObject); ok {
		return c.GetObject()
	}
	return obj
}
