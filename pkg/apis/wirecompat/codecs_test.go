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

package wirecompat

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	k8scorev1 "k8s.io/api/core/v1"
	k8seventsv1 "k8s.io/api/events/v1"
	k8seventsv1beta1 "k8s.io/api/events/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	coreinstall "github.com/kube-events/events-apiserver/pkg/apis/core/install"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	eventsinstall "github.com/kube-events/events-apiserver/pkg/apis/events/install"
	eventsv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	eventsv1beta1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1beta1"
)

// servedVersions are the three wire versions of Event.
var servedVersions = []schema.GroupVersion{
	corev1.SchemeGroupVersion,
	eventsv1beta1.SchemeGroupVersion,
	eventsv1.SchemeGroupVersion,
}

func isEventsGroup(gv schema.GroupVersion) bool { return gv.Group == eventsv1.GroupName }

// versionName names a served version unambiguously: core/v1,
// events.k8s.io/v1beta1, events.k8s.io/v1.
func versionName(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "core/" + gv.Version
	}
	return gv.String()
}

// schemes of both sides: k8s.io/api's types (what clients use) and ours
// (what the server uses), each with its codec factory.
var (
	k8sScheme  = newK8sScheme()
	k8sCodecs  = runtimeserializer.NewCodecFactory(k8sScheme)
	ourScheme  = newOurScheme()
	ourCodecs  = runtimeserializer.NewCodecFactory(ourScheme)
	k8sJSON    = json.NewSerializerWithOptions(json.DefaultMetaFactory, k8sScheme, k8sScheme, json.SerializerOptions{})
	ourJSON    = json.NewSerializerWithOptions(json.DefaultMetaFactory, ourScheme, ourScheme, json.SerializerOptions{})
	k8sProto   = protobuf.NewSerializer(k8sScheme, k8sScheme)
	ourProto   = protobuf.NewSerializer(ourScheme, ourScheme)
	protoMagic = []byte{0x6b, 0x38, 0x73, 0x00} // "k8s\x00", the envelope prefix
)

func newK8sScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(k8scorev1.AddToScheme(s))
	utilruntime.Must(k8seventsv1beta1.AddToScheme(s))
	utilruntime.Must(k8seventsv1.AddToScheme(s))
	return s
}

func newOurScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	coreinstall.Install(s)
	eventsinstall.Install(s)
	return s
}

// encoding is one wire encoding, with the serializer each side uses for it.
type encoding struct {
	name string
	k8s  runtime.Serializer
	ours runtime.Serializer
}

var encodings = []encoding{
	{name: "json", k8s: k8sJSON, ours: ourJSON},
	{name: "protobuf", k8s: k8sProto, ours: ourProto},
}

// k8sEncode encodes a k8s.io/api object as version gv, as a client does.
func (e encoding) k8sEncode(t *testing.T, obj runtime.Object, gv schema.GroupVersion) []byte {
	t.Helper()
	data, err := runtime.Encode(k8sCodecs.EncoderForVersion(e.k8s, gv), obj)
	if err != nil {
		t.Fatalf("k8s.io/api %s encode as %s: %v", e.name, gv, err)
	}
	return data
}

// k8sDecode decodes bytes into a k8s.io/api object of version gv, as a
// client does.
func (e encoding) k8sDecode(t *testing.T, data []byte, gv schema.GroupVersion) runtime.Object {
	t.Helper()
	obj, err := runtime.Decode(k8sCodecs.DecoderToVersion(e.k8s, gv), data)
	if err != nil {
		t.Fatalf("k8s.io/api %s decode as %s: %v\n%s", e.name, gv, err, data)
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return obj
}

// encode encodes obj, a k8s.io/api object or one of ours, in its own version.
func (e encoding) encode(t *testing.T, obj runtime.Object) ([]byte, schema.GroupVersion) {
	t.Helper()
	if kinds, _, err := k8sScheme.ObjectKinds(obj); err == nil {
		return e.k8sEncode(t, obj, kinds[0].GroupVersion()), kinds[0].GroupVersion()
	}
	kinds, _, err := ourScheme.ObjectKinds(obj)
	if err != nil {
		t.Fatalf("%T is in neither scheme: %v", obj, err)
	}
	return e.ourEncode(t, obj, kinds[0].GroupVersion()), kinds[0].GroupVersion()
}

// ourDecode decodes bytes of any served version into the internal type, as
// the server does on a write.
func (e encoding) ourDecode(t *testing.T, data []byte) runtime.Object {
	t.Helper()
	obj, err := runtime.Decode(ourCodecs.DecoderToVersion(e.ours, runtime.InternalGroupVersioner), data)
	if err != nil {
		t.Fatalf("our %s decode: %v\n%s", e.name, err, data)
	}
	return obj
}

// ourEncode encodes an internal (or versioned) object as version gv, as the
// server does on a read.
func (e encoding) ourEncode(t *testing.T, obj runtime.Object, gv schema.GroupVersion) []byte {
	t.Helper()
	data, err := runtime.Encode(ourCodecs.EncoderForVersion(e.ours, gv), obj)
	if err != nil {
		t.Fatalf("our %s encode as %s: %v", e.name, gv, err)
	}
	return data
}

// ourDecodeVersioned decodes bytes into our type of their own version,
// without conversion.
func (e encoding) ourDecodeVersioned(t *testing.T, data []byte) (runtime.Object, schema.GroupVersionKind) {
	t.Helper()
	obj, gvk, err := e.ours.Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("our %s decode: %v\n%s", e.name, err, data)
	}
	return obj, *gvk
}

// withoutExtensions returns our encoding of an object without the fields this
// server adds to the upstream types: series.state in every version and
// deprecatedHost in v1beta1. What remains must be byte for byte what
// k8s.io/api encodes for the same event.
//
// Protobuf: the fields are cut out of the bytes (our generated code always
// writes them, even when empty, as it does every non-pointer field). JSON:
// they are omitempty, so the object is decoded into our type, the fields are
// cleared and it is encoded again.
func (e encoding) withoutExtensions(t *testing.T, data []byte) []byte {
	t.Helper()
	if e.name == "json" {
		obj, _ := e.ourDecodeVersioned(t, data)
		clearExtensions(t, obj)
		var buf bytes.Buffer
		if err := e.ours.Encode(obj, &buf); err != nil {
			t.Fatalf("our json encode: %v", err)
		}
		return buf.Bytes()
	}
	if !bytes.HasPrefix(data, protoMagic) {
		t.Fatalf("protobuf encoding without the k8s envelope prefix: %q", data)
	}
	_, gvk := e.ourDecodeVersioned(t, data)
	spec, ok := protoExtensions[gvk]
	if !ok {
		t.Fatalf("no protobuf extension fields known for %s", gvk)
	}
	// runtime.Unknown: field 2 (raw) holds the object.
	envelope := fieldSpec{2: spec}
	return append(append([]byte{}, protoMagic...), stripProtoFields(t, data[len(protoMagic):], envelope)...)
}

func clearExtensions(t *testing.T, obj runtime.Object) {
	t.Helper()
	switch o := obj.(type) {
	case *corev1.Event:
		if o.Series != nil {
			o.Series.State = ""
		}
	case *corev1.EventList:
		for i := range o.Items {
			clearExtensions(t, &o.Items[i])
		}
	case *eventsv1beta1.Event:
		o.DeprecatedHost = ""
		if o.Series != nil {
			o.Series.State = ""
		}
	case *eventsv1beta1.EventList:
		for i := range o.Items {
			clearExtensions(t, &o.Items[i])
		}
	case *eventsv1.Event:
		if o.Series != nil {
			o.Series.State = ""
		}
	case *eventsv1.EventList:
		for i := range o.Items {
			clearExtensions(t, &o.Items[i])
		}
	default:
		t.Fatalf("no extension fields known for %T", obj)
	}
}

// fieldSpec names protobuf fields of a message: a nil value drops the field,
// a non-nil one descends into the embedded message it holds.
type fieldSpec map[protowire.Number]fieldSpec

// Protobuf field numbers of our extensions, the same as in generated.proto.
var (
	seriesExtensions = fieldSpec{3: nil} // EventSeries.state
	coreV1Extensions = fieldSpec{
		11: seriesExtensions, // Event.series
	}
	v1beta1Extensions = fieldSpec{
		3:  seriesExtensions, // Event.series
		16: nil,              // Event.deprecatedHost
	}
	v1Extensions = fieldSpec{
		3: seriesExtensions, // Event.series
	}
	protoExtensions = map[schema.GroupVersionKind]fieldSpec{
		corev1.SchemeGroupVersion.WithKind("Event"):            coreV1Extensions,
		corev1.SchemeGroupVersion.WithKind("EventList"):        {2: coreV1Extensions}, // items
		eventsv1beta1.SchemeGroupVersion.WithKind("Event"):     v1beta1Extensions,
		eventsv1beta1.SchemeGroupVersion.WithKind("EventList"): {2: v1beta1Extensions},
		eventsv1.SchemeGroupVersion.WithKind("Event"):          v1Extensions,
		eventsv1.SchemeGroupVersion.WithKind("EventList"):      {2: v1Extensions},
	}
)

// stripProtoFields rewrites a protobuf message without the fields spec drops,
// keeping every other field's bytes and order.
func stripProtoFields(t *testing.T, msg []byte, spec fieldSpec) []byte {
	t.Helper()
	var out []byte
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			t.Fatalf("bad protobuf tag: %v", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, msg[n:])
		if m < 0 {
			t.Fatalf("bad protobuf field %d: %v", num, protowire.ParseError(m))
		}
		field := msg[:n+m]
		msg = msg[n+m:]
		sub, listed := spec[num]
		switch {
		case !listed:
			out = append(out, field...)
		case sub == nil:
			// dropped
		default:
			if typ != protowire.BytesType {
				t.Fatalf("protobuf field %d is not an embedded message", num)
			}
			value, _ := protowire.ConsumeBytes(field[n:])
			out = protowire.AppendTag(out, num, typ)
			out = protowire.AppendBytes(out, stripProtoFields(t, value, sub))
		}
	}
	return out
}
