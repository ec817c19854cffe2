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
	"errors"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
)

// NewRESTWithClock is NewREST with the folder's clock.
var NewRESTWithClock = newREST

// FailWrites makes the folder's writes fail until restore is called, and
// counts them. Call it before the first create.
func (f *Folder) FailWrites() (attempts func() int32, restore func()) {
	failing := &failingStore{eventStore: f.store}
	failing.failing.Store(true)
	f.store = failing
	return failing.attempts.Load, func() { failing.failing.Store(false) }
}

type failingStore struct {
	eventStore
	failing  atomic.Bool
	attempts atomic.Int32
}

var errWriteFailed = errors.New("write failed")

func (s *failingStore) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	if s.failing.Load() {
		s.attempts.Add(1)
		return nil, false, errWriteFailed
	}
	return s.eventStore.Update(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options)
}
