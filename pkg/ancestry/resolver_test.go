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

package ancestry

import (
	"context"
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The resolver itself is tested against a real kube-apiserver in
// test/integration/ancestry; here, how its failures are told apart.
func TestReasonOf(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want string
	}{
		{"forbidden", context.Background(), apierrors.NewForbidden(pods, "p", errors.New("no")), ReasonForbidden},
		{"unauthorized", context.Background(), apierrors.NewUnauthorized("who"), ReasonForbidden},
		{"not found", context.Background(), apierrors.NewNotFound(pods, "p"), ReasonNotFound},
		{"no kind", context.Background(), &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Widget"}}, ReasonNoKind},
		{"server timeout", context.Background(), apierrors.NewServerTimeout(pods, "get", 1), ReasonTimeout},
		{"deadline, wrapped", context.Background(), fmt.Errorf("get: %w", context.DeadlineExceeded), ReasonTimeout},
		{"budget spent, whatever the error", expired, apierrors.NewNotFound(pods, "p"), ReasonTimeout},
		{"other", context.Background(), apierrors.NewInternalError(errors.New("boom")), ReasonError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reasonOf(tc.ctx, tc.err); got != tc.want {
				t.Errorf("reasonOf(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}
