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

// Package eventstore starts the server's events store (registry,
// strategy, TTL, optionally the watch cache) on a real etcd of the envtest
// assets, without the rest of the server, for tests of in-process writers
// and watchers. Unit tests under pkg/ use it instead of the integration
// framework.
package eventstore

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/util/compatibility"

	"github.com/kube-events/events-apiserver/pkg/apiserver"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
	"github.com/kube-events/events-apiserver/test/harness"
)

// Start returns the server's events store on a new etcd, destroyed when
// the test ends. With watchCache, it is behind a watch cache as in the
// server: watchers see what the server's watchers see (objects wrapped for
// encoding, bookmarks); without, every read goes to etcd.
func Start(t testing.TB, watchCache bool) *eventstorage.REST {
	t.Helper()
	etcd := harness.StartTestEtcd(t)
	config := storagebackend.NewDefaultConfig(apiserver.DefaultEtcdPathPrefix, nil)
	config.Transport.ServerList = etcd.Endpoints
	factory := apiserver.NewStorageFactory(*config, apiserver.StorageMediaType, compatibility.DefaultBuildEffectiveVersion())
	cache := eventstorage.NoStoreCache
	if watchCache {
		cache = eventstorage.WatchCache
	}
	store, err := eventstorage.NewREST(eventregistry.NewStrategy(apiserver.Scheme), eventstorage.Options{
		RESTOptions: restOptions{factory: factory}, TTL: time.Hour, Cache: cache,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Destroy)
	return store
}

// restOptions builds the server's storage for events from its storage
// factory, as the server does.
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
		StorageConfig:  cfg,
		ResourcePrefix: o.factory.ResourcePrefix(resource), DeleteCollectionWorkers: 1,
	}, nil
}
