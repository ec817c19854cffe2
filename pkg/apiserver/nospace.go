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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
)

// RetryAfterSeconds is the Retry-After of a request etcd refused for a
// passing reason (out of space, electing a leader, overloaded): one second,
// as kube-apiserver asks of a client it throttles. client-go waits that
// long and tries again, up to ten times, while the server's etcd
// maintenance (or the events' expiry) frees space or etcd elects a leader.
const RetryAfterSeconds = 1

// unavailableErrors is the storage of the events store's writes and of
// the reads its cache does not serve, over under, so that a request etcd
// refuses for a passing reason answers 503 Service Unavailable with a
// Retry-After instead of the 500 Internal Error the generic store makes of
// an unknown storage error: the server is fine, and the request can
// succeed once etcd can take it (see unavailable).
func unavailableErrors(under storage.Interface, resource schema.GroupResource) storage.Interface {
	return unavailableStorage{Interface: under, resource: resource}
}

// unavailableStorage converts the errors of its reads and writes that
// unavailable recognizes.
type unavailableStorage struct {
	storage.Interface
	resource schema.GroupResource
}

func (s unavailableStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	return s.convert(s.Interface.Create(ctx, key, obj, out, ttl))
}

func (s unavailableStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	return s.convert(s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cachedExistingObject))
}

func (s unavailableStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	return s.convert(s.Interface.Delete(ctx, key, out, preconditions, validateDeletion, cachedExistingObject, opts))
}

func (s unavailableStorage) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	return s.convert(s.Interface.Get(ctx, key, opts, objPtr))
}

func (s unavailableStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	return s.convert(s.Interface.GetList(ctx, key, opts, listObj))
}

// convert returns err, or the 503 it stands for when etcd refused the
// request for a passing reason.
func (s unavailableStorage) convert(err error) error {
	why := unavailable(err)
	if why == "" {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusServiceUnavailable,
		Reason:  metav1.StatusReasonServiceUnavailable,
		Message: why + ", retry later: " + err.Error(),
		Details: &metav1.StatusDetails{
			Group:             s.resource.Group,
			Kind:              s.resource.Resource,
			RetryAfterSeconds: RetryAfterSeconds,
		},
	}}
}

// unavailable says why etcd refused err's request for a passing reason, or
// "" when err is no such refusal. The reasons: its NOSPACE alarm ("mvcc:
// database space exceeded", refusing puts, transactions that put and lease
// grants; reads and deletes go on); too many requests (its applied index
// far behind its committed one); and every error etcd answers with gRPC's
// Unavailable (no leader, leader changed, request timed out, server
// stopped, unhealthy cluster: a member during an election or a restart),
// as the client hands them back (rpctypes.EtcdError) or as gRPC gives them
// when no member answers.
func unavailable(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, rpctypes.ErrNoSpace) {
		return "etcd is out of space"
	}
	if errors.Is(err, rpctypes.ErrTooManyRequests) {
		return "etcd is overloaded"
	}
	var etcdErr rpctypes.EtcdError
	if errors.As(err, &etcdErr) {
		if etcdErr.Code() == codes.Unavailable {
			return "etcd is unavailable"
		}
		return ""
	}
	if s, ok := status.FromError(err); ok && s.Code() == codes.Unavailable {
		return "etcd is unavailable"
	}
	return ""
}
