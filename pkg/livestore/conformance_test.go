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

// The storage conformance suites of k8s.io/apiserver
// (k8s.io/apiserver/pkg/storage/testing) run against a live store over an
// in-process etcd, with the arguments k8s.io/apiserver's cacher tests pass
// when the watch cache keeps no snapshots (ListFromCacheSnapshot off).

import (
	"context"
	"fmt"
	"path"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/kubernetes"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/kube-events/events-apiserver/pkg/livestore"
)

// checkStoredObject is the storagetesting.KeyValidation of a write: the
// value etcd holds at key decodes, without a resourceVersion or selfLink.
func checkStoredObject(client *kubernetes.Client, prefix string) storagetesting.KeyValidation {
	return func(ctx context.Context, t *testing.T, key string) {
		resp, err := client.KV.Get(ctx, path.Join(etcd3testing.PathPrefix(), key))
		if err != nil {
			t.Fatalf("etcd get %s: %v", key, err)
		}
		if len(resp.Kvs) == 0 {
			t.Fatalf("etcd has no value at %s", key)
		}
		data := resp.Kvs[0].Value
		if len(data) < len(prefix) || string(data[:len(prefix)]) != prefix {
			t.Fatalf("value at %s does not start with %q", key, prefix)
		}
		obj, err := runtime.Decode(examplev1ProtoCodec, data[len(prefix):])
		if err != nil {
			t.Fatalf("decoding the value at %s: %v", key, err)
		}
		pod := obj.(*example.Pod)
		if pod.ResourceVersion != "" {
			t.Errorf("stored object at %s has resourceVersion %q, want none", key, pod.ResourceVersion)
		}
	}
}

// noStorageCalls is the storagetesting.CallsValidation the cacher's tests
// pass: pages past the first are served by etcd.
func noStorageCalls(*testing.T, uint64, uint64) {}

// createWrapper waits, after each Create, until the store serves the
// created object from memory: the watch semantics suites expect a watch
// opened after Create to see it, as the cacher's tests arrange.
type createWrapper struct {
	*livestore.Store
}

func (c *createWrapper) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	if err := c.Store.Create(ctx, key, obj, out, ttl); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		current := &example.Pod{}
		err := c.Get(ctx, key, storage.GetOptions{ResourceVersion: "0"}, current)
		if storage.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return current.ResourceVersion == out.(*example.Pod).ResourceVersion, nil
	})
}

// failingTransformer fails reads from etcd while fail is set.
type failingTransformer struct {
	value.Transformer
	fail bool
}

func (f *failingTransformer) TransformFromStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, bool, error) {
	if f.fail {
		return nil, false, fmt.Errorf("synthetic error")
	}
	return f.Transformer.TransformFromStorage(ctx, data, dataCtx)
}

type suite struct {
	name string
	run  func(t *testing.T)
}

func runSuites(t *testing.T, suites []suite) {
	for _, s := range suites {
		t.Run(s.name, s.run)
	}
}

// TestConformanceWrites runs the write suites: the store writes through
// to etcd, and reads its own writes from memory where a suite reads.
func TestConformanceWrites(t *testing.T) {
	plain := func(f func(context.Context, *testing.T, storage.Interface)) func(*testing.T) {
		return func(t *testing.T) {
			env := newTestEnv(t)
			f(env.ctx, t, env.store)
		}
	}
	runSuites(t, []suite{
		{"Create", func(t *testing.T) {
			env := newTestEnv(t)
			storagetesting.RunTestCreate(env.ctx, t, env.store, checkStoredObject(env.etcd, ""))
		}},
		{"CreateWithTTL", plain(storagetesting.RunTestCreateWithTTL)},
		{"CreateWithKeyExist", plain(storagetesting.RunTestCreateWithKeyExist)},
		{"UnconditionalDelete", plain(storagetesting.RunTestUnconditionalDelete)},
		{"ConditionalDelete", plain(storagetesting.RunTestConditionalDelete)},
		{"DeleteWithSuggestion", plain(storagetesting.RunTestDeleteWithSuggestion)},
		{"DeleteWithSuggestionAndConflict", plain(storagetesting.RunTestDeleteWithSuggestionAndConflict)},
		{"DeleteWithSuggestionOfDeletedObject", plain(storagetesting.RunTestDeleteWithSuggestionOfDeletedObject)},
		{"ValidateDeletionWithSuggestion", plain(storagetesting.RunTestValidateDeletionWithSuggestion)},
		{"ValidateDeletionWithOnlySuggestionValid", plain(storagetesting.RunTestValidateDeletionWithOnlySuggestionValid)},
		{"DeleteWithConflict", plain(storagetesting.RunTestDeleteWithConflict)},
		{"PreconditionalDeleteWithSuggestion", plain(storagetesting.RunTestPreconditionalDeleteWithSuggestion)},
		{"PreconditionalDeleteWithOnlySuggestionPass", plain(storagetesting.RunTestPreconditionalDeleteWithOnlySuggestionPass)},
		{"DeleteWithSuggestionAndMissingExpectedTransformOrDecodeError", func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
			env := newTestEnv(t)
			storagetesting.RunTestDeleteWithSuggestionAndMissingExpectedTransformOrDecodeError(env.ctx, t, env.store)
		}},
		{"DeleteWithConflictAndExpectedTransformError", func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
			tr := &swappableTransformer{current: identity.NewEncryptCheckTransformer()}
			env := newTestEnv(t, withTransformer(tr))
			storagetesting.RunTestDeleteExpectedTransformOrDecodeError(env.ctx, t, env.store, func(fail bool) {
				if fail {
					tr.set(&failingTransformer{Transformer: identity.NewEncryptCheckTransformer(), fail: true})
				} else {
					tr.set(identity.NewEncryptCheckTransformer())
				}
			})
		}},
		{"GuaranteedUpdate", func(t *testing.T) {
			env, store := newPrefixTransformerEnv(t)
			storagetesting.RunTestGuaranteedUpdate(env.ctx, t, store, checkStoredObject(env.etcd, testPrefix))
		}},
		{"GuaranteedUpdateWithTTL", plain(storagetesting.RunTestGuaranteedUpdateWithTTL)},
		{"GuaranteedUpdateWithConflict", plain(storagetesting.RunTestGuaranteedUpdateWithConflict)},
		{"GuaranteedUpdateWithSuggestionAndConflict", plain(storagetesting.RunTestGuaranteedUpdateWithSuggestionAndConflict)},
		{"KeySchema", plain(storagetesting.RunTestKeySchema)},
		{"Stats", func(t *testing.T) {
			for _, sizeBased := range []bool{true, false} {
				t.Run(fmt.Sprintf("SizeBasedListCostEstimate=%v", sizeBased), func(t *testing.T) {
					featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.SizeBasedListCostEstimate, sizeBased)
					env := newTestEnv(t)
					storagetesting.RunTestStats(env.ctx, t, env.store, examplev1ProtoCodec, identity.NewEncryptCheckTransformer(), sizeBased)
				})
			}
		}},
	})
}

// TestConformanceReads runs the get and list suites.
func TestConformanceReads(t *testing.T) {
	plain := func(f func(context.Context, *testing.T, storage.Interface)) func(*testing.T) {
		return func(t *testing.T) {
			env := newTestEnv(t)
			f(env.ctx, t, env.store)
		}
	}
	paged := func(f func(context.Context, *testing.T, storage.Interface, storagetesting.CallsValidation)) func(*testing.T) {
		return func(t *testing.T) {
			env := newTestEnv(t)
			f(env.ctx, t, env.store, noStorageCalls)
		}
	}
	runSuites(t, []suite{
		{"Get", plain(storagetesting.RunTestGet)},
		{"List", func(t *testing.T) {
			env := newTestEnv(t)
			storagetesting.RunTestList(env.ctx, t, env.store, compactEtcd(env.etcd), true, env.recorder())
		}},
		{"ListPaging", plain(storagetesting.RunTestListPaging)},
		{"ConsistentList", func(t *testing.T) {
			env := newTestEnv(t)
			// cacheEnabled, consistentReadsSupported, and no snapshots.
			storagetesting.RunTestConsistentList(env.ctx, t, env.store, increaseRVFunc(env.etcd), true, true, false)
		}},
		{"GetListNonRecursive", func(t *testing.T) {
			env := newTestEnv(t)
			storagetesting.RunTestGetListNonRecursive(env.ctx, t, increaseRVFunc(env.etcd), env.store)
		}},
		{"GetListRecursivePrefix", plain(storagetesting.RunTestGetListRecursivePrefix)},
		{"ListContinuation", paged(storagetesting.RunTestListContinuation)},
		{"ListPaginationRareObject", paged(storagetesting.RunTestListPaginationRareObject)},
		{"ListContinuationWithFilter", paged(storagetesting.RunTestListContinuationWithFilter)},
		{"NamespaceScopedList", plain(storagetesting.RunTestNamespaceScopedList)},
	})
}

// TestConformanceWatch runs the watch suites.
func TestConformanceWatch(t *testing.T) {
	plain := func(f func(context.Context, *testing.T, storage.Interface), opts ...setupOption) func(*testing.T) {
		return func(t *testing.T) {
			env := newTestEnv(t, opts...)
			f(env.ctx, t, env.store)
		}
	}
	semantics := func(f func(context.Context, *testing.T, storage.Interface)) func(*testing.T) {
		return func(t *testing.T) {
			env := newTestEnv(t)
			f(env.ctx, t, &createWrapper{Store: env.store})
		}
	}
	runSuites(t, []suite{
		{"Watch", plain(storagetesting.RunTestWatch)},
		{"WatchFromZero", func(t *testing.T) {
			// A small history, so that the compaction can push the
			// compacted changes out of it.
			env := newTestEnv(t, withHistoryBytes(16<<10))
			storagetesting.RunTestWatchFromZero(env.ctx, t, env.store, compactHistory(env.store, env.etcd))
		}},
		{"DeleteTriggerWatch", plain(storagetesting.RunTestDeleteTriggerWatch)},
		{"WatchFromNonZero", plain(storagetesting.RunTestWatchFromNonZero)},
		{"DelayedWatchDelivery", plain(storagetesting.RunTestDelayedWatchDelivery)},
		{"WatchContextCancel", plain(storagetesting.RunTestWatchContextCancel)},
		{"WatcherTimeout", plain(storagetesting.RunTestWatcherTimeout)},
		{"WatchDeleteEventObjectHaveLatestRV", plain(storagetesting.RunTestWatchDeleteEventObjectHaveLatestRV)},
		{"WatchInitializationSignal", func(t *testing.T) {
			env := newTestEnv(t)
			// The suite waits, without a bound, for the watch to signal
			// its initialization to API Priority and Fairness
			// (flowcontrol.WatchInitialized): a store that never signals
			// would hang the run. The suite runs in its own goroutine,
			// left blocked if it never returns.
			done := make(chan struct{})
			go func() {
				defer close(done)
				storagetesting.RunTestWatchInitializationSignal(env.ctx, t, env.store)
			}()
			select {
			case <-done:
			case <-time.After(wait.ForeverTestTimeout):
				t.Errorf("the watch did not signal its initialization (flowcontrol.WatchInitialized) in %v", wait.ForeverTestTimeout)
			}
		}},
		{"ProgressNotify", func(t *testing.T) {
			env := newTestEnv(t, withProgressNotifyInterval(time.Second))
			storagetesting.RunOptionalTestProgressNotify(env.ctx, t, env.store, increaseRVFunc(env.etcd))
		}},
		{"ClusterScopedWatch", plain(storagetesting.RunTestClusterScopedWatch, withClusterScopedKeyFunc)},
		{"NamespaceScopedWatch", plain(storagetesting.RunTestNamespaceScopedWatch)},
		{"WatchDispatchBookmarkEvents", func(t *testing.T) {
			env := newTestEnv(t)
			storagetesting.RunTestWatchDispatchBookmarkEvents(env.ctx, t, env.store, true)
		}},
		{"WatchBookmarksWithCorrectResourceVersion", plain(storagetesting.RunTestOptionalWatchBookmarksWithCorrectResourceVersion)},
		{"SendInitialEventsBackwardCompatibility", plain(storagetesting.RunSendInitialEventsBackwardCompatibility)},
		{"WatchSemantics", semantics(storagetesting.RunWatchSemantics)},
		{"WatchSemanticInitialEventsExtended", semantics(storagetesting.RunWatchSemanticInitialEventsExtended)},
		{"WatchListMatchSingle", semantics(storagetesting.RunWatchListMatchSingle)},
	})
}
