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

package event

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// InternalWriteContext is the request context of a write that the server
// makes itself, in-process, on the store (the mirror, the series sweeper
// and controller, ...): the event's namespace, and request info naming gv,
// so that the strategy holds the write to gv's rules exactly as it holds a
// client's write through gv. Such writes skip authentication, authorization
// and admission, never the strategy.
func InternalWriteContext(ctx context.Context, namespace string, gv schema.GroupVersion) context.Context {
	prefix := "apis"
	if gv.Group == "" {
		prefix = "api"
	}
	ctx = genericapirequest.WithNamespace(ctx, namespace)
	ctx = context.WithValue(ctx, internalWriteKey{}, true)
	return genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true,
		APIPrefix:         prefix,
		APIGroup:          gv.Group,
		APIVersion:        gv.Version,
		Namespace:         namespace,
		Resource:          "events",
		Verb:              "update",
	})
}

// internalWriteKey marks a context made by InternalWriteContext.
type internalWriteKey struct{}

// IsInternalWrite tells whether ctx is that of an in-process writer (made by
// InternalWriteContext) rather than of a client's request. Such writes copy
// or maintain events that were already admitted once (the mirror copies
// what kube-apiserver stored), so the store never folds them: every one is
// stored as written.
func IsInternalWrite(ctx context.Context) bool {
	internal, _ := ctx.Value(internalWriteKey{}).(bool)
	return internal
}
