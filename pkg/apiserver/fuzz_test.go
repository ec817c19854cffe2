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
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	eventsv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	eventsv1beta1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1beta1"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
)

// The fuzz targets feed arbitrary request bodies and field selectors
// through what the server does with them: decode in each served version,
// convert to the internal Event, default, validate, select and encode
// back in every version and format. None may panic. The committed corpus
// is in testdata/fuzz/<target>; hack/test.sh fuzzes each target for a few
// seconds, and every `go test` replays the corpus.

var servedVersions = []schema.GroupVersion{corev1.SchemeGroupVersion, eventsv1beta1.SchemeGroupVersion, eventsv1.SchemeGroupVersion}

var servedMediaTypes = []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf}

func FuzzDecodeJSON(f *testing.F) { fuzzDecode(f, runtime.ContentTypeJSON) }

func FuzzDecodeProtobuf(f *testing.F) { fuzzDecode(f, runtime.ContentTypeProtobuf) }

// fuzzDecode decodes data as a create body of mediaType in every served
// version, the way the generic create handler does.
func fuzzDecode(f *testing.F, mediaType string) {
	for _, gv := range servedVersions {
		seed := encode(f, sampleEvent(), gv, mediaType)
		// The seeds are bodies the server accepts.
		decoder := Codecs.DecoderToVersion(serializerFor(f, mediaType), runtime.InternalGroupVersioner)
		if obj, _, err := decoder.Decode(seed, ptr(gv.WithKind("Event")), &core.Event{}); err != nil {
			f.Fatalf("decoding the %s seed: %v", gv, err)
		} else if got := obj.(*core.Event); got.Name != sampleEvent().Name || got.Reason != sampleEvent().Reason {
			f.Fatalf("the %s seed decoded to %+v", gv, got)
		}
		f.Add(seed)
	}
	strategy := eventregistry.NewStrategy(Scheme)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, gv := range servedVersions {
			decoder := Codecs.DecoderToVersion(serializerFor(t, mediaType), runtime.InternalGroupVersioner)
			obj, _, err := decoder.Decode(data, ptr(gv.WithKind("Event")), &core.Event{})
			if err != nil {
				continue
			}
			event, ok := obj.(*core.Event)
			if !ok {
				continue
			}
			ctx := genericapirequest.WithRequestInfo(context.Background(), &genericapirequest.RequestInfo{
				IsResourceRequest: true, Verb: "create", APIGroup: gv.Group, APIVersion: gv.Version, Resource: "events",
			})
			strategy.PrepareForCreate(ctx, event)
			strategy.Validate(ctx, event)
			strategy.Canonicalize(event)
			strategy.ValidateUpdate(ctx, event, event.DeepCopy())
			if _, _, err := eventstorage.GetAttrs(event); err != nil {
				t.Errorf("selectable fields of a decoded event: %v", err)
			}
			for _, out := range servedVersions {
				for _, mt := range servedMediaTypes {
					// Errors are fine (a value one version cannot hold); panics are not.
					_, _ = runtime.Encode(Codecs.EncoderForVersion(serializerFor(t, mt), out), event)
				}
			}
		}
	})
}

// FuzzFieldSelector parses a field selector as a list or watch request
// does, converts its labels in every served version and matches it
// against an event.
func FuzzFieldSelector(f *testing.F) {
	for _, seed := range []string{
		"", "regarding.name=web-0", "involvedObject.kind!=Pod,reason=BackOff", "related.name==node-1",
		"series.state=Ongoing", "metadata.namespace=default,metadata.name=x", "action=Binding,reportingController=kubelet",
		"source=kubelet", "reportingComponent=kubelet", "type=Warning,deprecatedSource.component=kubelet",
		`note=a\,b`, "=", "a=b,", "!=z", "regarding.name=a=b",
	} {
		f.Add(seed)
	}
	event := sampleEvent()
	f.Fuzz(func(t *testing.T, s string) {
		selector, err := fields.ParseSelector(s)
		if err != nil {
			return
		}
		for _, gv := range servedVersions {
			converted, err := selector.Transform(func(label, value string) (string, string, error) {
				return Scheme.ConvertFieldLabel(gv.WithKind("Event"), label, value)
			})
			if err != nil {
				continue
			}
			predicate := eventstorage.Matcher(labels.Everything(), converted)
			if _, err := predicate.Matches(event); err != nil {
				t.Errorf("matching %q (%s) against an event: %v", s, gv, err)
			}
		}
	})
}

// sampleEvent sets every field of the internal Event.
func sampleEvent() *core.Event {
	now := metav1.NewTime(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	return &core.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "web-0.17a2b3c4d5e6f708", Namespace: "default", Labels: map[string]string{"app": "web"}},
		InvolvedObject:      core.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "default", Name: "web-0", UID: "uid-1", FieldPath: "spec.containers{app}"},
		Reason:              "BackOff",
		Message:             "Back-off restarting failed container app",
		Source:              core.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               3,
		Type:                "Warning",
		EventTime:           metav1.NewMicroTime(now.Time),
		Series:              &core.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(now.Time), State: core.EventSeriesStateOngoing},
		Action:              "Restarting",
		Related:             &core.ObjectReference{Kind: "Node", Name: "node-1"},
		ReportingController: "kubelet",
		ReportingInstance:   "node-1",
	}
}

func encode(tb testing.TB, event *core.Event, gv schema.GroupVersion, mediaType string) []byte {
	tb.Helper()
	data, err := runtime.Encode(Codecs.EncoderForVersion(serializerFor(tb, mediaType), gv), event)
	if err != nil {
		tb.Fatalf("encoding the sample event as %s %s: %v", gv, mediaType, err)
	}
	return data
}

func serializerFor(tb testing.TB, mediaType string) runtime.Serializer {
	info, ok := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		tb.Fatalf("no serializer for %s", mediaType)
	}
	return info.Serializer
}

func ptr[T any](v T) *T { return &v }
