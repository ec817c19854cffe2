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

package apiserver

import (
	"context"
	"errors"
	"net/http"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// NoSpaceRetryAfterSeconds is the Retry-After of a write refused because
// etcd is out of space: one second, as kube-apiserver asks of a client it
// throttles. client-go waits that long and tries again, up to ten times,
// while the server's etcd maintenance (or the events' expiry) frees space.
const NoSpaceRetryAfterSeconds = 1

// noSpaceUnavailable builds its getter's storage so that a write etcd
// refuses for lack of space (its NOSPACE alarm, "mvcc: database space
// exceeded") answers 503 Service Unavailable with a Retry-After instead of
// the 500 Internal Error the generic store makes of an unknown storage
// error: the server is fine, and the write can succeed once space is back.
type noSpaceUnavailable struct {
	generic.RESTOptionsGetter
}

func (g noSpaceUnavailable) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	options, err := g.RESTOptionsGetter.GetRESTOptions(resource, example)
	if err != nil {
		return options, err
	}
	decorate := options.Decorator
	if decorate == nil {
		decorate = generic.UndecoratedStorage
	}
	options.Decorator = func(config *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, attrFunc storage.AttrFunc, trigger storage.IndexerFuncs, indexers *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		s, destroy, err := decorate(config, resourcePrefix, keyFunc, newFunc, newListFunc, attrFunc, trigger, indexers)
		if err != nil {
			return s, destroy, err
		}
		return noSpaceStorage{Interface: s, resource: config.GroupResource}, destroy, nil
	}
	return options, nil
}

// noSpaceStorage converts the NOSPACE errors of its writes (etcd refuses
// puts, transactions that put and lease grants; reads and deletes go on).
type noSpaceStorage struct {
	storage.Interface
	resource schema.GroupResource
}

func (s noSpaceStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	return s.convert(s.Interface.Create(ctx, key, obj, out, ttl))
}

func (s noSpaceStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	return s.convert(s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cachedExistingObject))
}

func (s noSpaceStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	return s.convert(s.Interface.Delete(ctx, key, out, preconditions, validateDeletion, cachedExistingObject, opts))
}

// convert returns err, or the 503 it stands for when it is etcd's NOSPACE.
func (s noSpaceStorage) convert(err error) error {
	if err == nil || !errors.Is(err, rpctypes.ErrNoSpace) {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusServiceUnavailable,
		Reason:  metav1.StatusReasonServiceUnavailable,
		Message: "etcd is out of space, retry later: " + err.Error(),
		Details: &metav1.StatusDetails{
			Group:             s.resource.Group,
			Kind:              s.resource.Resource,
			RetryAfterSeconds: NoSpaceRetryAfterSeconds,
		},
	}}
}
