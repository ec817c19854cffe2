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
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"

	corefuzzer "github.com/kube-events/events-apiserver/pkg/apis/core/fuzzer"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
)

// fuzzIters is how many random objects each round trip below checks. The
// Event types are small, so this is far above apimachinery's default of 20.
const fuzzIters = 300

func withFuzzIters(t *testing.T, n int) {
	old := *roundtrip.FuzzIters
	*roundtrip.FuzzIters = n
	t.Cleanup(func() { *roundtrip.FuzzIters = old })
}

// TestRoundTripInternalThroughCoreV1 fuzzes internal Events and EventLists
// and checks internal -> core/v1 -> JSON and protobuf -> core/v1 -> internal
// gives back the same object, with the normalisations documented on
// corefuzzer.Funcs.
func TestRoundTripInternalThroughCoreV1(t *testing.T) {
	withFuzzIters(t, fuzzIters)
	roundtrip.RoundTripProtobufTestForAPIGroup(t, Install, corefuzzer.Funcs)
}

// TestRoundTripCoreV1Encodings fuzzes core/v1 Events and EventLists and
// checks core/v1 -> JSON and protobuf -> core/v1 gives back the same object.
func TestRoundTripCoreV1Encodings(t *testing.T) {
	withFuzzIters(t, fuzzIters)
	scheme := runtime.NewScheme()
	Install(scheme)
	codecs := runtimeserializer.NewCodecFactory(scheme)
	f := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, corefuzzer.Funcs), rand.NewSource(rand.Int63()), codecs)
	for _, kind := range []string{"Event", "EventList"} {
		gvk := corev1.SchemeGroupVersion.WithKind(kind)
		t.Run(kind, func(t *testing.T) {
			roundtrip.RoundTripSpecificKind(t, gvk, scheme, codecs, f, nil)
		})
	}
}
