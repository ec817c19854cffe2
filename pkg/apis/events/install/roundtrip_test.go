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

package install

import (
	"math/rand"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	"k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/diff"

	corefuzzer "github.com/kube-events/events-apiserver/pkg/apis/core/fuzzer"
	coreinstall "github.com/kube-events/events-apiserver/pkg/apis/core/install"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	eventsv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	eventsv1beta1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1beta1"
)

// fuzzIters is how many random objects each round trip below checks. The
// Event types are small, so this is far above apimachinery's default of 20.
const fuzzIters = 300

func withFuzzIters(t *testing.T, n int) {
	old := *roundtrip.FuzzIters
	*roundtrip.FuzzIters = n
	t.Cleanup(func() { *roundtrip.FuzzIters = old })
}

// TestRoundTripInternalThroughEventsVersions fuzzes internal Events and
// EventLists and checks internal -> v1beta1 or v1 -> JSON and protobuf ->
// the same version -> internal gives back the same object, with the
// normalisations documented on corefuzzer.Funcs.
func TestRoundTripInternalThroughEventsVersions(t *testing.T) {
	withFuzzIters(t, fuzzIters)
	roundtrip.RoundTripProtobufTestForAPIGroup(t, Install, corefuzzer.Funcs)
}

// TestRoundTripEventsEncodings fuzzes v1beta1 and v1 Events and EventLists
// and checks version -> JSON and protobuf -> version gives back the same
// object, extension fields (series.state, deprecatedHost) included.
func TestRoundTripEventsEncodings(t *testing.T) {
	withFuzzIters(t, fuzzIters)
	scheme := runtime.NewScheme()
	Install(scheme)
	codecs := runtimeserializer.NewCodecFactory(scheme)
	f := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, corefuzzer.Funcs), rand.NewSource(rand.Int63()), codecs)
	for _, gv := range []schema.GroupVersion{eventsv1beta1.SchemeGroupVersion, eventsv1.SchemeGroupVersion} {
		for _, kind := range []string{"Event", "EventList"} {
			gvk := gv.WithKind(kind)
			t.Run(gvk.String(), func(t *testing.T) {
				roundtrip.RoundTripSpecificKind(t, gvk, scheme, codecs, f, nil)
			})
		}
	}
}

// servedVersions are the three wire versions of Event, all of which convert
// through the one internal type.
var servedVersions = []schema.GroupVersion{
	corev1.SchemeGroupVersion,
	eventsv1beta1.SchemeGroupVersion,
	eventsv1.SchemeGroupVersion,
}

// TestRoundTripAcrossVersions fuzzes an Event in each served version, writes
// it through the encoding, reads it back through every served version (the
// same one included) and writes that back in the original version:
//
//	from -> internal -> via -> internal -> from
//
// The result must equal the original after exactly the normalisations
// normalizeForReadBack documents, in JSON and in protobuf.
func TestRoundTripAcrossVersions(t *testing.T) {
	scheme := runtime.NewScheme()
	coreinstall.Install(scheme)
	Install(scheme)
	codecs := runtimeserializer.NewCodecFactory(scheme)

	seed := rand.Int63()
	t.Logf("fuzz seed %d", seed)
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), codecs)

	encodings := []struct {
		name       string
		serializer runtime.Serializer
	}{
		{"json", json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{})},
		{"protobuf", protobuf.NewSerializer(scheme, scheme)},
	}
	for _, enc := range encodings {
		for _, from := range servedVersions {
			for _, via := range servedVersions {
				name := enc.name + "/" + gvName(from) + "->" + gvName(via) + "->" + gvName(from)
				t.Run(name, func(t *testing.T) {
					toInternal := func(gv schema.GroupVersion) runtime.Codec {
						return codecs.CodecForVersions(enc.serializer, enc.serializer, gv, runtime.InternalGroupVersioner)
					}
					toFrom := codecs.CodecForVersions(enc.serializer, enc.serializer, from, from)
					for i := 0; i < fuzzIters; i++ {
						original, err := scheme.New(from.WithKind("Event"))
						if err != nil {
							t.Fatal(err)
						}
						f.Fill(original)
						want := original.DeepCopyObject()
						normalizeForReadBack(want, from, via)

						data, err := runtime.Encode(toInternal(from), original)
						if err != nil {
							t.Fatalf("encode %s: %v", from, err)
						}
						internal, err := runtime.Decode(toInternal(from), data)
						if err != nil {
							t.Fatalf("decode %s: %v", from, err)
						}
						if data, err = runtime.Encode(toInternal(via), internal); err != nil {
							t.Fatalf("encode %s: %v", via, err)
						}
						if internal, err = runtime.Decode(toInternal(via), data); err != nil {
							t.Fatalf("decode %s: %v", via, err)
						}
						if data, err = runtime.Encode(toInternal(from), internal); err != nil {
							t.Fatalf("encode %s: %v", from, err)
						}
						got, err := runtime.Decode(toFrom, data)
						if err != nil {
							t.Fatalf("decode %s: %v", from, err)
						}
						got.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
						if !equality.Semantic.DeepEqual(want, got) {
							t.Fatalf("read back through %s changed the event beyond the documented normalisations (-want +got):\n%s", via, diff.Diff(want, got))
						}
					}
				})
			}
		}
	}
}

// normalizeForReadBack turns an Event written through version from into
// what reading it back through via and writing that back through from gives:
//
//   - events.k8s.io shows a legacy event's source.component as its
//     reportingController when it has none of its own; once read that way the
//     value is the event's reporting controller in every version. Only a pure
//     core/v1 round trip never shows it.
//   - events.k8s.io/v1beta1 has two spellings of the host, deprecatedHost and
//     deprecatedSource.host; either fills the other, and when both are set and
//     differ deprecatedSource.host wins (validation rejects such writes).
func normalizeForReadBack(obj runtime.Object, from, via schema.GroupVersion) {
	showsReportingController := from != corev1.SchemeGroupVersion || via != corev1.SchemeGroupVersion
	switch e := obj.(type) {
	case *corev1.Event:
		if showsReportingController && e.ReportingController == "" {
			e.ReportingController = e.Source.Component
		}
	case *eventsv1.Event:
		if e.ReportingController == "" {
			e.ReportingController = e.DeprecatedSource.Component
		}
	case *eventsv1beta1.Event:
		if e.ReportingController == "" {
			e.ReportingController = e.DeprecatedSource.Component
		}
		if e.DeprecatedSource.Host == "" {
			e.DeprecatedSource.Host = e.DeprecatedHost
		}
		e.DeprecatedHost = e.DeprecatedSource.Host
	}
}

func gvName(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "core." + gv.Version
	}
	return gv.Version
}
