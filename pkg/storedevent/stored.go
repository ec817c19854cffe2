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

package storedevent

import (
	"context"
	"fmt"
	"path"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage/value"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

// PlainValue is what the store wrote at kv, read by a client whose keys
// are under storagePrefix, decrypted with transformer (nil when the store
// does not encrypt): the full key is part of what the encryption
// authenticates.
func PlainValue(ctx context.Context, transformer value.Transformer, storagePrefix string, kv *mvccpb.KeyValue) ([]byte, error) {
	if transformer == nil {
		return kv.Value, nil
	}
	key := path.Join("/", storagePrefix, string(kv.Key))
	plain, _, err := transformer.TransformFromStorage(ctx, kv.Value, value.DefaultContext(key))
	if err != nil {
		return nil, fmt.Errorf("decrypting: %w", err)
	}
	return plain, nil
}

// Decode decodes an event's plain stored bytes (or an archived
// state's) with decoder into the internal Event.
func Decode(decoder runtime.Decoder, data []byte) (*core.Event, error) {
	obj, err := runtime.Decode(decoder, data)
	if err != nil {
		return nil, err
	}
	event, ok := obj.(*core.Event)
	if !ok {
		return nil, fmt.Errorf("decoded %T, not an event", obj)
	}
	return event, nil
}
