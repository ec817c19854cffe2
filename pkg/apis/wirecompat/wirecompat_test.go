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
	"encoding/hex"
	"testing"

	k8scorev1 "k8s.io/api/core/v1"
	k8seventsv1 "k8s.io/api/events/v1"
	k8seventsv1beta1 "k8s.io/api/events/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	eventsv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	eventsv1beta1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1beta1"
)

// TestK8sWritesReadBackByteIdentical writes events built with k8s.io/api's
// types, in JSON and protobuf, reads each back through every served version
// and writes what it read back in the original version:
//
//	k8s.io/api bytes -> internal -> via -> internal -> original version
//
// That must give the original bytes (our extension fields aside: in JSON
// they only appear when set, so an event without a host written through
// v1beta1 comes back byte for byte; our protobuf writes them even when
// empty). The only documented exception is the reporting controller a legacy
// event gains once it has been shown through events.k8s.io.
//
// Each read through via is also decoded by k8s.io/api, which must skip our
// extension fields and re-encode exactly our bytes without them.
func TestK8sWritesReadBackByteIdentical(t *testing.T) {
	legacyWithController := func(e *k8scorev1.Event) { e.ReportingController = kubelet }
	tests := []struct {
		name  string
		write runtime.Object
		// shownThroughEvents, when set, is what write reads back as in its
		// own version once it has been read through events.k8s.io (the
		// write's own version or via).
		shownThroughEvents runtime.Object
	}{
		{name: "core/v1 event with every field", write: k8sCoreEvent(fullK8sCoreEvent)},
		{
			name:               "core/v1 event as client-go's core/v1 recorder writes it",
			write:              k8sCoreEvent(legacyK8sCoreEvent),
			shownThroughEvents: k8sCoreEvent(legacyK8sCoreEvent, legacyWithController),
		},
		{name: "core/v1 event with metadata only", write: k8sCoreEvent()},
		{
			name: "core/v1 event list",
			write: &k8scorev1.EventList{ListMeta: metav1.ListMeta{ResourceVersion: "4300", Continue: "next"},
				Items: []k8scorev1.Event{*k8sCoreEvent(fullK8sCoreEvent), *k8sCoreEvent(legacyK8sCoreEvent)}},
			shownThroughEvents: &k8scorev1.EventList{ListMeta: metav1.ListMeta{ResourceVersion: "4300", Continue: "next"},
				Items: []k8scorev1.Event{*k8sCoreEvent(fullK8sCoreEvent), *k8sCoreEvent(legacyK8sCoreEvent, legacyWithController)}},
		},
		{name: "events.k8s.io/v1beta1 event with every field", write: k8sV1beta1Event(fullK8sV1beta1Event)},
		{name: "events.k8s.io/v1beta1 event as client-go's events recorder writes it", write: k8sV1beta1Event(recorderK8sV1beta1Event)},
		{name: "events.k8s.io/v1beta1 event with metadata only", write: k8sV1beta1Event()},
		{
			name: "events.k8s.io/v1beta1 event list",
			write: &k8seventsv1beta1.EventList{ListMeta: metav1.ListMeta{ResourceVersion: "4300"},
				Items: []k8seventsv1beta1.Event{*k8sV1beta1Event(fullK8sV1beta1Event), *k8sV1beta1Event(recorderK8sV1beta1Event)}},
		},
		{name: "events.k8s.io/v1 event with every field", write: k8sV1Event(fullK8sV1Event)},
		{name: "events.k8s.io/v1 event as client-go's events recorder writes it", write: k8sV1Event(recorderK8sV1Event)},
		{name: "events.k8s.io/v1 event with metadata only", write: k8sV1Event()},
		{
			name: "events.k8s.io/v1 event with deprecatedSource.component and no reportingController",
			write: k8sV1Event(recorderK8sV1Event, func(e *k8seventsv1.Event) {
				e.ReportingController = ""
				e.DeprecatedSource.Component = kubelet
			}),
			shownThroughEvents: k8sV1Event(recorderK8sV1Event, func(e *k8seventsv1.Event) {
				e.ReportingController = kubelet
				e.DeprecatedSource.Component = kubelet
			}),
		},
		{
			name: "events.k8s.io/v1 event list",
			write: &k8seventsv1.EventList{ListMeta: metav1.ListMeta{ResourceVersion: "4300"},
				Items: []k8seventsv1.Event{*k8sV1Event(fullK8sV1Event), *k8sV1Event(recorderK8sV1Event)}},
		},
	}
	for _, tt := range tests {
		for _, enc := range encodings {
			for _, via := range servedVersions {
				t.Run(tt.name+"/"+enc.name+"/via "+versionName(via), func(t *testing.T) {
					original, writeGV := enc.encode(t, tt.write)
					want := original
					if tt.shownThroughEvents != nil && (isEventsGroup(writeGV) || isEventsGroup(via)) {
						want = enc.k8sEncode(t, tt.shownThroughEvents, writeGV)
					}

					internal := enc.ourDecode(t, original)
					read := enc.ourEncode(t, internal, via)

					// A k8s.io/api client reading through via.
					k8sRead := enc.k8sDecode(t, read, via)
					if got, want := enc.k8sEncode(t, k8sRead, via), enc.withoutExtensions(t, read); !bytes.Equal(got, want) {
						t.Errorf("k8s.io/api re-encodes our %s read differently from our bytes without extension fields:\nk8s.io/api: %s\nours:       %s", via, showBytes(got), showBytes(want))
					}

					back := enc.ourEncode(t, enc.ourDecode(t, read), writeGV)
					if got := enc.withoutExtensions(t, back); !bytes.Equal(got, want) {
						t.Errorf("written back through %s after a read through %s (extension fields aside):\ngot:  %s\nwant: %s", writeGV, via, showBytes(got), showBytes(want))
					}
					// Our JSON extension fields are omitempty: unless v1beta1 has a
					// host to show as deprecatedHost, the bytes need no stripping.
					showsDeprecatedHost := writeGV == eventsv1beta1.SchemeGroupVersion && hasHost(internal)
					if enc.name == "json" && !showsDeprecatedHost && !bytes.Equal(back, want) {
						t.Errorf("JSON without extension values must come back byte for byte:\ngot:  %s\nwant: %s", showBytes(back), showBytes(want))
					}
				})
			}
		}
	}
}

// hasHost reports whether an internal event or any item of a list has a
// host, which events.k8s.io/v1beta1 shows in our deprecatedHost extension.
func hasHost(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *core.Event:
		return o.Source.Host != ""
	case *core.EventList:
		for i := range o.Items {
			if o.Items[i].Source.Host != "" {
				return true
			}
		}
	}
	return false
}

// mapping is what each served version shows for an event: edits to the
// bare event of each version (the k8s.io/api types, which is what clients
// see), plus our extension fields.
type mapping struct {
	internal func(*core.Event)
	core     func(*k8scorev1.Event)
	v1beta1  func(*k8seventsv1beta1.Event)
	v1       func(*k8seventsv1.Event)
	// deprecatedHost is what v1beta1 shows in its deprecatedHost field.
	deprecatedHost string
	// seriesState is what every version shows as series.state.
	seriesState string
}

// Rows of the field mapping table, one mapping each (some rows have several
// cases). Each is what a single written field becomes in every version.
var (
	involvedObjectIsRegarding = mapping{
		internal: func(e *core.Event) { e.InvolvedObject = internalPod() },
		core:     func(e *k8scorev1.Event) { e.InvolvedObject = k8sPod() },
		v1beta1:  func(e *k8seventsv1beta1.Event) { e.Regarding = k8sPod() },
		v1:       func(e *k8seventsv1.Event) { e.Regarding = k8sPod() },
	}
	messageIsNote = mapping{
		internal: func(e *core.Event) { e.Message = pullMessage },
		core:     func(e *k8scorev1.Event) { e.Message = pullMessage },
		v1beta1:  func(e *k8seventsv1beta1.Event) { e.Note = pullMessage },
		v1:       func(e *k8seventsv1.Event) { e.Note = pullMessage },
	}
	// The event has no reporting controller of its own: events.k8s.io shows
	// source.component as reportingController, core/v1 keeps
	// reportingComponent empty.
	componentOnly = mapping{
		internal: func(e *core.Event) { e.Source.Component = kubelet },
		core:     func(e *k8scorev1.Event) { e.Source.Component = kubelet },
		v1beta1: func(e *k8seventsv1beta1.Event) {
			e.DeprecatedSource.Component = kubelet
			e.ReportingController = kubelet
		},
		v1: func(e *k8seventsv1.Event) {
			e.DeprecatedSource.Component = kubelet
			e.ReportingController = kubelet
		},
	}
	componentAndController = mapping{
		internal: func(e *core.Event) {
			e.Source.Component = kubelet
			e.ReportingController = kubeletController
		},
		core: func(e *k8scorev1.Event) {
			e.Source.Component = kubelet
			e.ReportingController = kubeletController
		},
		v1beta1: func(e *k8seventsv1beta1.Event) {
			e.DeprecatedSource.Component = kubelet
			e.ReportingController = kubeletController
		},
		v1: func(e *k8seventsv1.Event) {
			e.DeprecatedSource.Component = kubelet
			e.ReportingController = kubeletController
		},
	}
	hostIsDeprecatedHost = mapping{
		internal:       func(e *core.Event) { e.Source.Host = node1 },
		core:           func(e *k8scorev1.Event) { e.Source.Host = node1 },
		v1beta1:        func(e *k8seventsv1beta1.Event) { e.DeprecatedSource.Host = node1 },
		v1:             func(e *k8seventsv1.Event) { e.DeprecatedSource.Host = node1 },
		deprecatedHost: node1,
	}
	reportingComponentIsReportingController = mapping{
		internal: func(e *core.Event) { e.ReportingController = kubeletController },
		core:     func(e *k8scorev1.Event) { e.ReportingController = kubeletController },
		v1beta1:  func(e *k8seventsv1beta1.Event) { e.ReportingController = kubeletController },
		v1:       func(e *k8seventsv1.Event) { e.ReportingController = kubeletController },
	}
	timestampsAreDeprecatedTimestamps = mapping{
		internal: func(e *core.Event) { e.FirstTimestamp, e.LastTimestamp = firstSeen, lastSeen },
		core:     func(e *k8scorev1.Event) { e.FirstTimestamp, e.LastTimestamp = firstSeen, lastSeen },
		v1beta1: func(e *k8seventsv1beta1.Event) {
			e.DeprecatedFirstTimestamp, e.DeprecatedLastTimestamp = firstSeen, lastSeen
		},
		v1: func(e *k8seventsv1.Event) {
			e.DeprecatedFirstTimestamp, e.DeprecatedLastTimestamp = firstSeen, lastSeen
		},
	}
	countIsDeprecatedCount = mapping{
		internal: func(e *core.Event) { e.Count = 7 },
		core:     func(e *k8scorev1.Event) { e.Count = 7 },
		v1beta1:  func(e *k8seventsv1beta1.Event) { e.DeprecatedCount = 7 },
		v1:       func(e *k8seventsv1.Event) { e.DeprecatedCount = 7 },
	}
	sameNames = mapping{
		internal: func(e *core.Event) {
			e.Related = internalNode()
			e.Action, e.Reason, e.ReportingInstance, e.Type = "Pulling", "BackOff", kubeletInstance, core.EventTypeWarning
			e.EventTime = eventTime
			e.Series = &core.EventSeries{Count: 7, LastObservedTime: observed}
		},
		core: func(e *k8scorev1.Event) {
			e.Related = k8sNode()
			e.Action, e.Reason, e.ReportingInstance, e.Type = "Pulling", "BackOff", kubeletInstance, k8scorev1.EventTypeWarning
			e.EventTime = eventTime
			e.Series = &k8scorev1.EventSeries{Count: 7, LastObservedTime: observed}
		},
		v1beta1: func(e *k8seventsv1beta1.Event) {
			e.Related = k8sNode()
			e.Action, e.Reason, e.ReportingInstance, e.Type = "Pulling", "BackOff", kubeletInstance, k8scorev1.EventTypeWarning
			e.EventTime = eventTime
			e.Series = &k8seventsv1beta1.EventSeries{Count: 7, LastObservedTime: observed}
		},
		v1: func(e *k8seventsv1.Event) {
			e.Related = k8sNode()
			e.Action, e.Reason, e.ReportingInstance, e.Type = "Pulling", "BackOff", kubeletInstance, k8scorev1.EventTypeWarning
			e.EventTime = eventTime
			e.Series = &k8seventsv1.EventSeries{Count: 7, LastObservedTime: observed}
		},
	}
)

// seriesWithState is a series in the given state: k8s.io/api clients see the
// series without it.
func seriesWithState(state string) mapping {
	return mapping{
		internal: func(e *core.Event) {
			e.Series = &core.EventSeries{Count: 3, LastObservedTime: observed, State: core.EventSeriesState(state)}
		},
		core: func(e *k8scorev1.Event) { e.Series = &k8scorev1.EventSeries{Count: 3, LastObservedTime: observed} },
		v1beta1: func(e *k8seventsv1beta1.Event) {
			e.Series = &k8seventsv1beta1.EventSeries{Count: 3, LastObservedTime: observed}
		},
		v1:          func(e *k8seventsv1.Event) { e.Series = &k8seventsv1.EventSeries{Count: 3, LastObservedTime: observed} },
		seriesState: state,
	}
}

// TestGoldenMapping writes one field (or a pair) through one version and
// checks, in JSON and protobuf, the internal event the server holds and what
// a k8s.io/api client reads through every served version: the decoded
// object, the exact bytes (those k8s.io/api encodes for that object, our
// extension fields aside) and our extension fields. Reading back what was
// read must give the same bytes again.
func TestGoldenMapping(t *testing.T) {
	tests := []struct {
		name  string
		write runtime.Object // a k8s.io/api event, or ours where it needs our extension fields
		want  mapping
		// internal, when set, replaces want.internal: writes that carry more
		// than any version shows.
		internal func(*core.Event)
	}{
		{name: "involvedObject is regarding, written through core/v1",
			write: k8sCoreEvent(involvedObjectIsRegarding.core), want: involvedObjectIsRegarding},
		{name: "regarding is involvedObject, written through events.k8s.io/v1",
			write: k8sV1Event(involvedObjectIsRegarding.v1), want: involvedObjectIsRegarding},
		{name: "message is note, written through core/v1",
			write: k8sCoreEvent(messageIsNote.core), want: messageIsNote},
		{name: "note is message, written through events.k8s.io/v1beta1",
			write: k8sV1beta1Event(messageIsNote.v1beta1), want: messageIsNote},
		{name: "legacy source.component alone reads back as reportingController, written through core/v1",
			write: k8sCoreEvent(componentOnly.core), want: componentOnly},
		{name: "deprecatedSource.component alone reads back as reportingController, written through events.k8s.io/v1",
			write: k8sV1Event(func(e *k8seventsv1.Event) { e.DeprecatedSource.Component = kubelet }), want: componentOnly},
		{name: "deprecatedSource.component alone reads back as reportingController, written through events.k8s.io/v1beta1",
			write: k8sV1beta1Event(func(e *k8seventsv1beta1.Event) { e.DeprecatedSource.Component = kubelet }), want: componentOnly},
		{name: "source.component next to a reporting controller of its own, written through core/v1",
			write: k8sCoreEvent(componentAndController.core), want: componentAndController},
		{name: "source.component next to a reporting controller of its own, written through events.k8s.io/v1",
			write: k8sV1Event(componentAndController.v1), want: componentAndController},
		{name: "source.host is deprecatedSource.host and deprecatedHost, written through core/v1",
			write: k8sCoreEvent(hostIsDeprecatedHost.core), want: hostIsDeprecatedHost},
		{name: "deprecatedSource.host alone fills deprecatedHost, written through events.k8s.io/v1beta1",
			write: k8sV1beta1Event(hostIsDeprecatedHost.v1beta1), want: hostIsDeprecatedHost},
		{name: "deprecatedHost alone fills deprecatedSource.host, written through events.k8s.io/v1beta1",
			write: ourV1beta1Event(func(e *eventsv1beta1.Event) { e.DeprecatedHost = node1 }), want: hostIsDeprecatedHost},
		{name: "deprecatedHost equal to deprecatedSource.host, written through events.k8s.io/v1beta1",
			write: ourV1beta1Event(func(e *eventsv1beta1.Event) {
				e.DeprecatedHost = node1
				e.DeprecatedSource.Host = node1
			}), want: hostIsDeprecatedHost},
		{name: "deprecatedHost conflicting with deprecatedSource.host is carried to validation, written through events.k8s.io/v1beta1",
			write: ourV1beta1Event(func(e *eventsv1beta1.Event) {
				e.DeprecatedHost = node2
				e.DeprecatedSource.Host = node1
			}),
			want: hostIsDeprecatedHost,
			internal: func(e *core.Event) {
				e.Source.Host = node1
				e.DeprecatedHost = node2
			}},
		{name: "deprecatedSource.host is source.host, written through events.k8s.io/v1",
			write: k8sV1Event(hostIsDeprecatedHost.v1), want: hostIsDeprecatedHost},
		{name: "reportingComponent is reportingController, written through core/v1",
			write: k8sCoreEvent(reportingComponentIsReportingController.core), want: reportingComponentIsReportingController},
		{name: "reportingController is reportingComponent, written through events.k8s.io/v1beta1",
			write: k8sV1beta1Event(reportingComponentIsReportingController.v1beta1), want: reportingComponentIsReportingController},
		{name: "reportingController is reportingComponent, written through events.k8s.io/v1",
			write: k8sV1Event(reportingComponentIsReportingController.v1), want: reportingComponentIsReportingController},
		{name: "firstTimestamp and lastTimestamp are deprecatedFirstTimestamp and deprecatedLastTimestamp, written through core/v1",
			write: k8sCoreEvent(timestampsAreDeprecatedTimestamps.core), want: timestampsAreDeprecatedTimestamps},
		{name: "deprecatedFirstTimestamp and deprecatedLastTimestamp are firstTimestamp and lastTimestamp, written through events.k8s.io/v1",
			write: k8sV1Event(timestampsAreDeprecatedTimestamps.v1), want: timestampsAreDeprecatedTimestamps},
		{name: "count is deprecatedCount, written through core/v1",
			write: k8sCoreEvent(countIsDeprecatedCount.core), want: countIsDeprecatedCount},
		{name: "deprecatedCount is count, written through events.k8s.io/v1beta1",
			write: k8sV1beta1Event(countIsDeprecatedCount.v1beta1), want: countIsDeprecatedCount},
		{name: "related, action, reason, reportingInstance, eventTime, series and type keep their names, written through core/v1",
			write: k8sCoreEvent(sameNames.core), want: sameNames},
		{name: "related, action, reason, reportingInstance, eventTime, series and type keep their names, written through events.k8s.io/v1beta1",
			write: k8sV1beta1Event(sameNames.v1beta1), want: sameNames},
		{name: "related, action, reason, reportingInstance, eventTime, series and type keep their names, written through events.k8s.io/v1",
			write: k8sV1Event(sameNames.v1), want: sameNames},
		{name: "series.state Ongoing, written through core/v1",
			write: ourCoreEvent(func(e *corev1.Event) {
				e.Series = &corev1.EventSeries{Count: 3, LastObservedTime: observed, State: corev1.EventSeriesStateOngoing}
			}), want: seriesWithState("Ongoing")},
		{name: "series.state Finished, written through events.k8s.io/v1beta1",
			write: ourV1beta1Event(func(e *eventsv1beta1.Event) {
				e.Series = &eventsv1beta1.EventSeries{Count: 3, LastObservedTime: observed, State: eventsv1beta1.EventSeriesStateFinished}
			}), want: seriesWithState("Finished")},
		{name: "series.state Unknown, written through events.k8s.io/v1",
			write: ourV1Event(func(e *eventsv1.Event) {
				e.Series = &eventsv1.EventSeries{Count: 3, LastObservedTime: observed, State: eventsv1.EventSeriesStateUnknown}
			}), want: seriesWithState("Unknown")},
	}
	for _, tt := range tests {
		for _, enc := range encodings {
			t.Run(tt.name+"/"+enc.name, func(t *testing.T) {
				data, _ := enc.encode(t, tt.write)
				internal := enc.ourDecode(t, data)
				wantInternal := internalEvent(tt.want.internal)
				if tt.internal != nil {
					wantInternal = internalEvent(tt.internal)
				}
				if !equality.Semantic.DeepEqual(wantInternal, internal) {
					t.Errorf("internal event (-want +got):\n%s", diff.Diff(wantInternal, internal))
				}

				views := map[schema.GroupVersion]runtime.Object{
					corev1.SchemeGroupVersion:        k8sCoreEvent(tt.want.core),
					eventsv1beta1.SchemeGroupVersion: k8sV1beta1Event(tt.want.v1beta1),
					eventsv1.SchemeGroupVersion:      k8sV1Event(tt.want.v1),
				}
				for _, gv := range servedVersions {
					ours := enc.ourEncode(t, internal, gv)
					want := views[gv]
					if got := enc.k8sDecode(t, ours, gv); !equality.Semantic.DeepEqual(want, got) {
						t.Errorf("k8s.io/api reads through %s (-want +got):\n%s", gv, diff.Diff(want, got))
					}
					if got, want := enc.withoutExtensions(t, ours), enc.k8sEncode(t, want, gv); !bytes.Equal(got, want) {
						t.Errorf("bytes read through %s, extension fields aside:\ngot:  %s\nwant: %s", gv, showBytes(got), showBytes(want))
					}
					versioned, _ := enc.ourDecodeVersioned(t, ours)
					host, state := extensions(t, versioned)
					wantHost := ""
					if gv == eventsv1beta1.SchemeGroupVersion {
						wantHost = tt.want.deprecatedHost
					}
					if host != wantHost {
						t.Errorf("%s deprecatedHost = %q, want %q", gv, host, wantHost)
					}
					if state != tt.want.seriesState {
						t.Errorf("%s series.state = %q, want %q", gv, state, tt.want.seriesState)
					}
					if again := enc.ourEncode(t, enc.ourDecode(t, ours), gv); !bytes.Equal(again, ours) {
						t.Errorf("reading back what was read through %s changed it:\ngot:  %s\nwant: %s", gv, showBytes(again), showBytes(ours))
					}
				}
			})
		}
	}
}

// extensions returns our extension fields of one of our versioned events:
// v1beta1's deprecatedHost and series.state.
func extensions(t *testing.T, obj runtime.Object) (deprecatedHost, seriesState string) {
	t.Helper()
	switch e := obj.(type) {
	case *corev1.Event:
		if e.Series != nil {
			seriesState = string(e.Series.State)
		}
	case *eventsv1beta1.Event:
		deprecatedHost = e.DeprecatedHost
		if e.Series != nil {
			seriesState = string(e.Series.State)
		}
	case *eventsv1.Event:
		if e.Series != nil {
			seriesState = string(e.Series.State)
		}
	default:
		t.Fatalf("not one of our versioned events: %T", obj)
	}
	return deprecatedHost, seriesState
}

func showBytes(data []byte) string {
	if len(data) > 0 && data[0] == '{' {
		return string(data)
	}
	return "\n" + hex.Dump(data)
}

// TestEventTimeKeepsMicroseconds pins eventTime's wire precision: a
// k8s.io/api client's microseconds come back in every version, as RFC 3339
// with six fractional digits in JSON.
func TestEventTimeKeepsMicroseconds(t *testing.T) {
	const wantJSON = `"eventTime":"2026-03-01T10:00:01.123456Z"`
	write := k8sV1Event(recorderK8sV1Event)
	for _, enc := range encodings {
		data, _ := enc.encode(t, write)
		internal := enc.ourDecode(t, data).(*core.Event)
		if !internal.EventTime.Equal(&eventTime) {
			t.Errorf("%s: internal eventTime %s, want %s", enc.name, internal.EventTime.UTC().Format(metav1.RFC3339Micro), eventTime.UTC().Format(metav1.RFC3339Micro))
		}
		for _, gv := range servedVersions {
			ours := enc.ourEncode(t, internal, gv)
			if enc.name == "json" && !bytes.Contains(ours, []byte(wantJSON)) {
				t.Errorf("json read through %s has no %s: %s", versionName(gv), wantJSON, ours)
			}
			versioned, _ := enc.ourDecodeVersioned(t, ours)
			var got metav1.MicroTime
			switch e := versioned.(type) {
			case *corev1.Event:
				got = e.EventTime
			case *eventsv1beta1.Event:
				got = e.EventTime
			case *eventsv1.Event:
				got = e.EventTime
			}
			if !got.Equal(&eventTime) {
				t.Errorf("%s read through %s: eventTime %s, want %s", enc.name, versionName(gv), got.UTC().Format(metav1.RFC3339Micro), eventTime.UTC().Format(metav1.RFC3339Micro))
			}
		}
	}
}
