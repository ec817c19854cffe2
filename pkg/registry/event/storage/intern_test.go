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
	"fmt"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/core/install"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
)

// storageCodec is the codec the store is given: core/v1 protobuf in etcd,
// the internal Event in memory.
func storageCodec(t *testing.T) runtime.Codec {
	t.Helper()
	scheme := runtime.NewScheme()
	install.Install(scheme)
	codecs := serializer.NewCodecFactory(scheme)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	return codecs.CodecForVersions(info.Serializer, info.Serializer, corev1.SchemeGroupVersion, core.SchemeGroupVersion)
}

// sameMemory reports whether a and b are one copy of their bytes.
func sameMemory(a, b string) bool {
	return unsafe.StringData(a) == unsafe.StringData(b) //nolint:gosec // compares the pointers, reads nothing
}

// roundTrip encodes event with codec and decodes it back.
func roundTrip(t *testing.T, codec runtime.Codec, event *core.Event) *core.Event {
	t.Helper()
	data, err := runtime.Encode(codec, event)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := runtime.Decode(codec, data)
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*core.Event)
}

func TestInternCodecSharesRepeatingStrings(t *testing.T) {
	plain := storageCodec(t)
	codec := internCodec{Codec: plain, table: newStringTable()}
	decode := func(event *core.Event) *core.Event { return roundTrip(t, codec, event) }
	first, second := fullEvent(), fullEvent()
	second.Name, second.Message = "pod-a.2", "another message"
	a, b := decode(first), decode(second)

	// Decoding changes no value.
	for _, tt := range []struct {
		name           string
		want, original *core.Event
	}{{"first", a, first}, {"second", b, second}} {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.original.DeepCopy()
			want.ResourceVersion = tt.want.ResourceVersion
			if diff := cmp.Diff(want, tt.want); diff != "" {
				t.Errorf("decoded event differs (-encoded +decoded):\n%s", diff)
			}
		})
	}
	shared := map[string][2]string{
		"namespace":           {a.Namespace, b.Namespace},
		"involvedObject.kind": {a.InvolvedObject.Kind, b.InvolvedObject.Kind},
		"involvedObject.name": {a.InvolvedObject.Name, b.InvolvedObject.Name},
		"involvedObject.uid":  {string(a.InvolvedObject.UID), string(b.InvolvedObject.UID)},
		"related.name":        {a.Related.Name, b.Related.Name},
		"reason":              {a.Reason, b.Reason},
		"type":                {a.Type, b.Type},
		"source.host":         {a.Source.Host, b.Source.Host},
		"reportingController": {a.ReportingController, b.ReportingController},
		"reportingInstance":   {a.ReportingInstance, b.ReportingInstance},
	}
	for field, values := range shared {
		if !sameMemory(values[0], values[1]) {
			t.Errorf("%s: the two events hold separate copies of %q", field, values[0])
		}
	}
	// The events' own names are not kept: the table would grow with every event.
	if _, kept := codec.table.strings[a.Name]; kept {
		t.Errorf("the table keeps the event name %q", a.Name)
	}

	// The plain codec shares nothing.
	c := roundTrip(t, plain, first)
	if sameMemory(c.InvolvedObject.Name, a.InvolvedObject.Name) {
		t.Error("a plain decode shares the interned copy")
	}
}

func TestStringTableIsBounded(t *testing.T) {
	table := newStringTable()
	for i := range maxInternedStrings + 10 {
		table.intern(fmt.Sprintf("value-%d", i))
	}
	if got := len(table.strings); got > maxInternedStrings {
		t.Errorf("table holds %d strings, want at most %d", got, maxInternedStrings)
	}
	if got := table.intern(""); got != "" {
		t.Errorf("intern(\"\") = %q", got)
	}
	if len(table.strings) > maxInternedStrings {
		t.Error("the empty string was kept")
	}
}
