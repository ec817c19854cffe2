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
	"bytes"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/util/compatibility"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	"github.com/kube-events/events-apiserver/pkg/apis/events"
)

// Both events resources must land on kube-apiserver's key space and
// encoding: /registry/events/<namespace>/<name>, core/v1 protobuf.
func TestStorageFactoryStoresEveryVersionAsCoreV1Events(t *testing.T) {
	factory := NewStorageFactory(*storagebackend.NewDefaultConfig(DefaultEtcdPathPrefix, nil), StorageMediaType,
		compatibility.DefaultBuildEffectiveVersion())
	for _, resource := range []struct{ group, name string }{{core.GroupName, "events"}, {events.GroupName, "events"}} {
		gr := core.Resource(resource.name)
		if resource.group == events.GroupName {
			gr = events.Resource(resource.name)
		}
		if got := factory.ResourcePrefix(gr); got != "events" {
			t.Errorf("%v: resource prefix %q, want events", gr, got)
		}
		cfg, err := factory.NewConfig(gr, &core.Event{})
		if err != nil {
			t.Fatalf("%v: %v", gr, err)
		}
		if cfg.Prefix != "/registry" {
			t.Errorf("%v: etcd prefix %q, want /registry", gr, cfg.Prefix)
		}
		encoded, err := runtimeEncode(cfg.Codec, &core.Event{})
		if err != nil {
			t.Fatalf("%v: encode: %v", gr, err)
		}
		// Protobuf envelope magic, then the core/v1 Event type meta.
		if string(encoded[:4]) != "k8s\x00" {
			t.Errorf("%v: stored bytes start %q, want the protobuf envelope", gr, encoded[:4])
		}
		obj, gvk, err := cfg.Codec.Decode(encoded, nil, nil)
		if err != nil {
			t.Fatalf("%v: decode: %v", gr, err)
		}
		if _, ok := obj.(*core.Event); !ok || gvk.GroupVersion() != corev1.SchemeGroupVersion {
			t.Errorf("%v: decoded %T as %v, want *core.Event stored as core/v1", gr, obj, gvk)
		}
	}
}

func runtimeEncode(e runtime.Encoder, obj runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	err := e.Encode(obj, &buf)
	return buf.Bytes(), err
}
