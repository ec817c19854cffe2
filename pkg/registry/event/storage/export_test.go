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

package storage

import (
	"context"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
)

// NewRESTWithClock is NewREST with the folder's clock.
var NewRESTWithClock = newREST

// Waiting is how many folded creates wait for their write.
func (f *Folder) Waiting() int32 { return f.waiting.Load() }

// InterceptWrites counts the folder's writes of live events and makes them
// fail with the error last given to fail (nil: they succeed). Call it
// before the first create.
func (f *Folder) InterceptWrites() (writes func() int32, fail func(error)) {
	s := &interceptingStore{eventStore: f.store}
	f.store = s
	return s.writes.Load, func(err error) { s.fail.Store(&err) }
}

type interceptingStore struct {
	eventStore
	fail   atomic.Pointer[error]
	writes atomic.Int32
}

func (s *interceptingStore) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	s.writes.Add(1)
	if err := s.fail.Load(); err != nil && *err != nil {
		return nil, false, *err
	}
	return s.eventStore.Update(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options)
}
