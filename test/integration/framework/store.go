package framework

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/util/compatibility"

	"github.com/kube-events/events-apiserver/pkg/apiserver"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
)

// StartEventStore returns the server's events store (registry, strategy,
// TTL, watch cache) on a real etcd of the envtest assets, without the rest
// of the server, for tests of in-process writers and watchers; it is
// destroyed when the test ends.
func StartEventStore(t testing.TB) *eventstorage.REST {
	t.Helper()
	etcd := StartEtcd(t)
	config := storagebackend.NewDefaultConfig(apiserver.DefaultEtcdPathPrefix, nil)
	config.Transport.ServerList = etcd.Endpoints
	factory := apiserver.NewStorageFactory(*config, apiserver.StorageMediaType, compatibility.DefaultBuildEffectiveVersion())
	store, err := eventstorage.NewREST(apiserver.Scheme, storeRESTOptions{factory}, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Destroy)
	return store
}

// storeRESTOptions builds the server's storage for events from its storage
// factory, behind a watch cache, as the server does: watchers see what the
// server's watchers see (objects wrapped for encoding, bookmarks).
type storeRESTOptions struct {
	factory interface {
		NewConfig(schema.GroupResource, runtime.Object) (*storagebackend.ConfigForResource, error)
		ResourcePrefix(schema.GroupResource) string
	}
}

func (o storeRESTOptions) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	cfg, err := o.factory.NewConfig(resource, example)
	if err != nil {
		return generic.RESTOptions{}, err
	}
	return generic.RESTOptions{
		StorageConfig: cfg, Decorator: genericregistry.StorageWithCacher(),
		ResourcePrefix: o.factory.ResourcePrefix(resource), DeleteCollectionWorkers: 1,
	}, nil
}
