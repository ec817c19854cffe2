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

package validation

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	eventsv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	eventsv1beta1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1beta1"
	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
)

// version is a served API version with the names it gives the fields whose
// names differ between core/v1 and events.k8s.io.
type version struct {
	gv     schema.GroupVersion
	strict bool
	eventconversion.FieldNames
	sourceUnsetDetail string
}

var (
	coreV1        = version{gv: corev1.SchemeGroupVersion, FieldNames: eventconversion.CoreV1FieldNames}
	eventsV1beta1 = version{
		gv: eventsv1beta1.SchemeGroupVersion, strict: true, FieldNames: eventconversion.EventsFieldNames,
		sourceUnsetDetail: "needs to be unset when creating an event through events.k8s.io (deprecatedHost included)",
	}
	eventsV1 = version{
		gv: eventsv1.SchemeGroupVersion, strict: true, FieldNames: eventconversion.EventsFieldNames,
		sourceUnsetDetail: "needs to be unset when creating an event through events.k8s.io",
	}
	allVersions = []version{coreV1, eventsV1beta1, eventsV1}
)

var (
	eventTime     = metav1.NewMicroTime(time.Date(2026, 3, 1, 10, 0, 0, 123456000, time.UTC))
	lastObserved  = metav1.NewMicroTime(eventTime.Add(5 * time.Minute))
	legacyTime    = metav1.NewTime(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	newLegacyTime = metav1.NewTime(legacyTime.Add(time.Minute))
)

// newStyleEvent is a singleton event as client-go's tools/events recorder
// writes it through events.k8s.io.
func newStyleEvent() *core.Event {
	return &core.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0.1829f1c2a3b4c5d6", Namespace: "shop"},
		InvolvedObject: core.ObjectReference{
			APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "web-0", UID: "6b1e7c1a-5c8e-4d5f-9a1e-0c2b3d4e5f60",
		},
		EventTime:           eventTime,
		ReportingController: "default-scheduler",
		ReportingInstance:   "default-scheduler-node-1",
		Action:              "Binding",
		Reason:              "Scheduled",
		Message:             "Successfully assigned shop/web-0 to node-1",
		Type:                core.EventTypeNormal,
	}
}

// recordEvent is an event as client-go's legacy tools/record recorder writes
// it through core/v1: no eventTime, no action, the deprecated fields set.
func recordEvent() *core.Event {
	return &core.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0.1829f1c2a3b4c5d6", Namespace: "shop"},
		InvolvedObject: core.ObjectReference{
			APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "web-0", FieldPath: "spec.containers{web}",
		},
		Reason:              "Pulled",
		Message:             `Container image "nginx:1.29" already present on machine`,
		Source:              core.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp:      legacyTime,
		LastTimestamp:       legacyTime,
		Count:               1,
		Type:                core.EventTypeNormal,
		ReportingController: "kubelet",
		ReportingInstance:   "node-1",
	}
}

// sourceOnlyEvent is a legacy event from a reporter that knows nothing of
// reportingComponent/reportingInstance.
func sourceOnlyEvent() *core.Event {
	event := recordEvent()
	event.ReportingController = ""
	event.ReportingInstance = ""
	return event
}

// with returns a copy of event changed by mutate.
func with(event *core.Event, mutate func(*core.Event)) *core.Event {
	event = event.DeepCopy()
	mutate(event)
	return event
}

func withoutEventTime(e *core.Event) { e.EventTime = metav1.MicroTime{} }

func clusterScoped(namespace string) func(*core.Event) {
	return func(e *core.Event) {
		e.Namespace = namespace
		e.InvolvedObject = core.ObjectReference{APIVersion: "v1", Kind: "Node", Name: "node-1", UID: "node-1"}
	}
}

// Expected errors, with their details spelled out so that the tests pin them.

func pathOf(s string) *field.Path { return field.NewPath(s) }

func errs(list ...*field.Error) field.ErrorList { return list }

func requiredEventTime() *field.Error {
	return field.Required(pathOf("eventTime"), "the time the event was first observed")
}

func requiredReportingController(v version) *field.Error {
	return field.Required(pathOf(v.ReportingController), "the name of the controller that emitted the event, e.g. kubernetes.io/kubelet")
}

func requiredReportingInstance() *field.Error {
	return field.Required(pathOf("reportingInstance"), "the ID of the controller instance, e.g. kubelet-xyzf")
}

func requiredAction() *field.Error {
	return field.Required(pathOf("action"), "what action was taken or failed")
}

func requiredReason() *field.Error {
	return field.Required(pathOf("reason"), "why the action was taken")
}

func tooLong(path string, limit int) *field.Error {
	e := field.TooLong(pathOf(path), "", limit) // the value is never echoed
	e.Detail = fmt.Sprintf("may not be more than %d bytes", limit)
	return e
}

func mustBeUnset(path string, value any) *field.Error {
	return field.Invalid(pathOf(path), value, "needs to be unset when creating an event through events.k8s.io")
}

func sourceMustBeUnset(v version, source core.EventSource) *field.Error {
	return field.Invalid(pathOf(v.Source), source, v.sourceUnsetDetail)
}

func namespaceMismatch(v version, regardingNamespace, detail string) *field.Error {
	return field.Invalid(pathOf(v.Regarding).Child("namespace"), regardingNamespace, detail)
}

func immutable(path string, value any) *field.Error {
	return field.Invalid(pathOf(path), value, "field is immutable")
}

func badSeriesState(state string) *field.Error {
	return &field.Error{Type: field.ErrorTypeNotSupported, Field: "series.state", BadValue: state,
		Detail: `supported values: "Ongoing", "Finished", "Unknown"`}
}

func deprecatedHostConflict(host string) *field.Error {
	return field.Invalid(pathOf("deprecatedHost"), host, "must equal deprecatedSource.host when both are set")
}

// recordEventStrictErrors is what a client-go tools/record event earns when
// written through events.k8s.io.
func recordEventStrictErrors(v version, source core.EventSource) field.ErrorList {
	return errs(
		requiredEventTime(),
		requiredAction(),
		mustBeUnset(v.FirstTimestamp, legacyTime),
		mustBeUnset(v.LastTimestamp, legacyTime),
		mustBeUnset(v.Count, int32(1)),
		sourceMustBeUnset(v, source),
	)
}

const qualifiedNameDetail = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"

const dnsSubdomainDetail = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"

// expectation returns the errors expected for a write through v; a nil
// expectation means none.
type expectation func(v version) field.ErrorList

func none(version) field.ErrorList { return nil }

// inAll expects the same errors from every version.
func inAll(want expectation) (legacy, strict expectation) { return want, want }

type createCase struct {
	name  string
	event *core.Event
	// legacy is what a core/v1 write gets, strict what an events.k8s.io write gets.
	legacy, strict expectation
}

func TestValidateEventCreate(t *testing.T) {
	seriesOf := func(count int32, last metav1.MicroTime, state core.EventSeriesState) func(*core.Event) {
		return func(e *core.Event) { e.Series = &core.EventSeries{Count: count, LastObservedTime: last, State: state} }
	}
	cases := []createCase{
		// Whole events as real clients send them.
		{
			name:   "new-style event as client-go tools/events sends it",
			event:  newStyleEvent(),
			legacy: none, strict: none,
		},
		{
			name:   "legacy event without eventTime as client-go tools/record sends it",
			event:  recordEvent(),
			legacy: none,
			strict: func(v version) field.ErrorList { return recordEventStrictErrors(v, recordEvent().Source) },
		},
		{
			name:   "legacy event with source only",
			event:  sourceOnlyEvent(),
			legacy: none,
			strict: func(v version) field.ErrorList {
				return append(recordEventStrictErrors(v, recordEvent().Source), requiredReportingController(v), requiredReportingInstance())
			},
		},
		{
			name: "legacy event with an oversized message and no eventTime: length limits only bind events with eventTime",
			event: with(newStyleEvent(), func(e *core.Event) {
				withoutEventTime(e)
				e.Message = strings.Repeat("x", 2000)
				e.ReportingInstance = ""
			}),
			legacy: none,
			strict: func(v version) field.ErrorList {
				return errs(requiredEventTime(), requiredReportingInstance(), tooLong(v.Note, NoteLengthLimit))
			},
		},

		// Namespace of the event vs. namespace of what it is about, with eventTime.
		{
			name:   "cluster-scoped regarding, event in default",
			event:  with(newStyleEvent(), clusterScoped(metav1.NamespaceDefault)),
			legacy: none, strict: none,
		},
		{
			name:   "cluster-scoped regarding, event in kube-system",
			event:  with(newStyleEvent(), clusterScoped(metav1.NamespaceSystem)),
			legacy: none, strict: none,
		},
		func() createCase {
			c := createCase{name: "cluster-scoped regarding, event in another namespace", event: with(newStyleEvent(), clusterScoped("shop"))}
			c.legacy, c.strict = inAll(func(v version) field.ErrorList {
				return errs(namespaceMismatch(v, "", `does not match metadata.namespace "shop": an event about a cluster-scoped object must be in namespace "default" or "kube-system"`))
			})
			return c
		}(),
		{
			name:   "namespaced regarding in another namespace is not compared when eventTime is set (as upstream)",
			event:  with(newStyleEvent(), func(e *core.Event) { e.InvolvedObject.Namespace = "web" }),
			legacy: none, strict: none,
		},

		// Namespace rules without eventTime.
		{
			name:   "no eventTime: cluster-scoped regarding, event in default",
			event:  with(newStyleEvent(), func(e *core.Event) { clusterScoped(metav1.NamespaceDefault)(e); withoutEventTime(e) }),
			legacy: none,
			strict: func(version) field.ErrorList { return errs(requiredEventTime()) },
		},
		{
			name:   "no eventTime: cluster-scoped regarding, event without namespace",
			event:  with(newStyleEvent(), func(e *core.Event) { clusterScoped("")(e); withoutEventTime(e) }),
			legacy: none,
			strict: func(version) field.ErrorList {
				return errs(requiredEventTime(), field.Required(pathOf("metadata").Child("namespace"), ""))
			},
		},
		func() createCase {
			c := createCase{
				name:  "no eventTime: cluster-scoped regarding, event in kube-system",
				event: with(newStyleEvent(), func(e *core.Event) { clusterScoped(metav1.NamespaceSystem)(e); withoutEventTime(e) }),
			}
			mismatch := func(v version) *field.Error {
				return namespaceMismatch(v, "", `does not match metadata.namespace "kube-system": an event about a cluster-scoped object must be in namespace "default"`)
			}
			c.legacy = func(v version) field.ErrorList { return errs(mismatch(v)) }
			c.strict = func(v version) field.ErrorList { return errs(requiredEventTime(), mismatch(v)) }
			return c
		}(),
		func() createCase {
			c := createCase{
				name:  "no eventTime: namespaced regarding in another namespace",
				event: with(recordEvent(), func(e *core.Event) { e.InvolvedObject.Namespace = "web" }),
			}
			mismatch := func(v version) *field.Error {
				return namespaceMismatch(v, "web", `does not match metadata.namespace "shop"`)
			}
			c.legacy = func(v version) field.ErrorList { return errs(mismatch(v)) }
			c.strict = func(v version) field.ErrorList {
				return append(recordEventStrictErrors(v, recordEvent().Source), mismatch(v))
			}
			return c
		}(),

		// Metadata: only events.k8s.io writes get ValidateObjectMeta (as upstream).
		{
			name:   "name that is not a DNS subdomain",
			event:  with(newStyleEvent(), func(e *core.Event) { e.Name = "Web_0.1829" }),
			legacy: none,
			strict: func(version) field.ErrorList {
				return errs(field.Invalid(pathOf("metadata").Child("name"), "Web_0.1829", dnsSubdomainDetail))
			},
		},

		// eventTime.
		{
			name:   "eventTime missing on an otherwise new-style event",
			event:  with(newStyleEvent(), withoutEventTime),
			legacy: none,
			strict: func(version) field.ErrorList { return errs(requiredEventTime()) },
		},

		// reportingController.
		func() createCase {
			c := createCase{name: "reportingController missing", event: with(newStyleEvent(), func(e *core.Event) { e.ReportingController = "" })}
			c.legacy, c.strict = inAll(func(v version) field.ErrorList { return errs(requiredReportingController(v)) })
			return c
		}(),
		func() createCase {
			c := createCase{name: "reportingController not a qualified name", event: with(newStyleEvent(), func(e *core.Event) { e.ReportingController = "default scheduler" })}
			c.legacy, c.strict = inAll(func(v version) field.ErrorList {
				return errs(field.Invalid(pathOf(v.ReportingController), "default scheduler", qualifiedNameDetail))
			})
			return c
		}(),
		{
			name:   "reportingController a prefixed qualified name",
			event:  with(newStyleEvent(), func(e *core.Event) { e.ReportingController = "example.com/scheduler" }),
			legacy: none, strict: none,
		},

		// reportingInstance, action, reason: required, at the limit, one over.
		func() createCase {
			c := createCase{name: "reportingInstance missing", event: with(newStyleEvent(), func(e *core.Event) { e.ReportingInstance = "" })}
			c.legacy, c.strict = inAll(func(version) field.ErrorList { return errs(requiredReportingInstance()) })
			return c
		}(),
		{
			name:   "reportingInstance at the limit",
			event:  with(newStyleEvent(), func(e *core.Event) { e.ReportingInstance = strings.Repeat("i", 128) }),
			legacy: none, strict: none,
		},
		func() createCase {
			c := createCase{name: "reportingInstance one over the limit", event: with(newStyleEvent(), func(e *core.Event) { e.ReportingInstance = strings.Repeat("i", 129) })}
			c.legacy, c.strict = inAll(func(version) field.ErrorList { return errs(tooLong("reportingInstance", 128)) })
			return c
		}(),
		func() createCase {
			c := createCase{name: "action missing", event: with(newStyleEvent(), func(e *core.Event) { e.Action = "" })}
			c.legacy, c.strict = inAll(func(version) field.ErrorList { return errs(requiredAction()) })
			return c
		}(),
		{
			name:   "action at the limit",
			event:  with(newStyleEvent(), func(e *core.Event) { e.Action = strings.Repeat("a", 128) }),
			legacy: none, strict: none,
		},
		func() createCase {
			c := createCase{name: "action one over the limit", event: with(newStyleEvent(), func(e *core.Event) { e.Action = strings.Repeat("a", 129) })}
			c.legacy, c.strict = inAll(func(version) field.ErrorList { return errs(tooLong("action", 128)) })
			return c
		}(),
		func() createCase {
			c := createCase{name: "reason missing", event: with(newStyleEvent(), func(e *core.Event) { e.Reason = "" })}
			c.legacy, c.strict = inAll(func(version) field.ErrorList { return errs(requiredReason()) })
			return c
		}(),
		{
			name:   "reason at the limit",
			event:  with(newStyleEvent(), func(e *core.Event) { e.Reason = strings.Repeat("r", 128) }),
			legacy: none, strict: none,
		},
		func() createCase {
			c := createCase{name: "reason one over the limit", event: with(newStyleEvent(), func(e *core.Event) { e.Reason = strings.Repeat("r", 129) })}
			c.legacy, c.strict = inAll(func(version) field.ErrorList { return errs(tooLong("reason", 128)) })
			return c
		}(),

		// note (message), in bytes.
		{
			name:   "note of exactly 1024 bytes",
			event:  with(newStyleEvent(), func(e *core.Event) { e.Message = strings.Repeat("n", 1024) }),
			legacy: none, strict: none,
		},
		func() createCase {
			c := createCase{name: "note of 1025 bytes", event: with(newStyleEvent(), func(e *core.Event) { e.Message = strings.Repeat("n", 1025) })}
			c.legacy, c.strict = inAll(func(v version) field.ErrorList { return errs(tooLong(v.Note, NoteLengthLimit)) })
			return c
		}(),
		{
			name:   "note of 512 two-byte characters is 1024 bytes",
			event:  with(newStyleEvent(), func(e *core.Event) { e.Message = strings.Repeat("é", 512) }),
			legacy: none, strict: none,
		},
		func() createCase {
			c := createCase{name: "note of 513 two-byte characters is over the limit", event: with(newStyleEvent(), func(e *core.Event) { e.Message = strings.Repeat("é", 513) })}
			c.legacy, c.strict = inAll(func(v version) field.ErrorList { return errs(tooLong(v.Note, NoteLengthLimit)) })
			return c
		}(),

		// type.
		{
			name:   "type Warning",
			event:  with(newStyleEvent(), func(e *core.Event) { e.Type = core.EventTypeWarning }),
			legacy: none, strict: none,
		},
		{
			name:   "type missing",
			event:  with(newStyleEvent(), func(e *core.Event) { e.Type = "" }),
			legacy: none,
			strict: func(version) field.ErrorList {
				return errs(field.Required(pathOf("type"), `must be "Normal" or "Warning"`))
			},
		},
		{
			name:   "type neither Normal nor Warning",
			event:  with(newStyleEvent(), func(e *core.Event) { e.Type = "Info" }),
			legacy: none,
			strict: func(version) field.ErrorList {
				return errs(&field.Error{Type: field.ErrorTypeNotSupported, Field: "type", BadValue: "Info", Detail: `supported values: "Normal", "Warning"`})
			},
		},

		// series.
		{
			name:   "series of count 2",
			event:  with(newStyleEvent(), seriesOf(2, lastObserved, "")),
			legacy: none, strict: none,
		},
		{
			name:  "series of count 1",
			event: with(newStyleEvent(), seriesOf(1, lastObserved, "")),
			legacy: func(version) field.ErrorList {
				return errs(field.Invalid(pathOf("series").Child("count"), int32(1), "must be at least 2: an event observed once is a singleton and has no series"))
			},
			strict: func(version) field.ErrorList {
				return errs(field.Invalid(pathOf("series").Child("count"), int32(1), "must be at least 2: a series stands for two or more occurrences"))
			},
		},
		{
			name:  "series without count and lastObservedTime",
			event: with(newStyleEvent(), seriesOf(0, metav1.MicroTime{}, "")),
			legacy: func(version) field.ErrorList {
				return errs(
					field.Invalid(pathOf("series").Child("count"), int32(0), "must be at least 2: an event observed once is a singleton and has no series"),
					field.Required(pathOf("series").Child("lastObservedTime"), "a series must say when it was last observed"),
				)
			},
			strict: func(version) field.ErrorList {
				return errs(
					field.Invalid(pathOf("series").Child("count"), int32(0), "must be at least 2: a series stands for two or more occurrences"),
					field.Required(pathOf("series").Child("lastObservedTime"), "the time the last occurrence of the series was observed"),
				)
			},
		},
		{
			// The event policy's strict clock refuses it, not validation:
			// Kubernetes' conformance tests write such series.
			name:   "series last observed before its eventTime",
			event:  with(newStyleEvent(), seriesOf(2, metav1.NewMicroTime(eventTime.Add(-time.Second)), "")),
			legacy: none, strict: none,
		},
		{
			name:   "series Ongoing",
			event:  with(newStyleEvent(), seriesOf(2, lastObserved, core.EventSeriesStateOngoing)),
			legacy: none, strict: none,
		},
		{
			name:   "series Finished",
			event:  with(newStyleEvent(), seriesOf(5, lastObserved, core.EventSeriesStateFinished)),
			legacy: none, strict: none,
		},
		{
			name:   "series Unknown",
			event:  with(newStyleEvent(), seriesOf(5, lastObserved, core.EventSeriesStateUnknown)),
			legacy: none, strict: none,
		},
		func() createCase {
			c := createCase{name: "series with an unknown state", event: with(newStyleEvent(), seriesOf(2, lastObserved, "Done"))}
			c.legacy, c.strict = inAll(func(version) field.ErrorList { return errs(badSeriesState("Done")) })
			return c
		}(),
		func() createCase {
			c := createCase{
				name:  "legacy event with an unknown series state and no eventTime",
				event: with(recordEvent(), seriesOf(1, metav1.MicroTime{}, "ongoing")),
			}
			c.legacy = func(version) field.ErrorList {
				return errs(badSeriesState("ongoing"),
					field.Invalid(pathOf("series").Child("count"), int32(1), "must be at least 2: an event observed once is a singleton and has no series"),
					field.Required(pathOf("series").Child("lastObservedTime"), "a series must say when it was last observed"),
				)
			}
			c.strict = func(v version) field.ErrorList {
				return append(recordEventStrictErrors(v, recordEvent().Source),
					badSeriesState("ongoing"),
					field.Invalid(pathOf("series").Child("count"), int32(1), "must be at least 2: a series stands for two or more occurrences"),
					field.Required(pathOf("series").Child("lastObservedTime"), "the time the last occurrence of the series was observed"),
				)
			}
			return c
		}(),

		// Deprecated fields, one at a time.
		{
			name:   "deprecatedFirstTimestamp set",
			event:  with(newStyleEvent(), func(e *core.Event) { e.FirstTimestamp = legacyTime }),
			legacy: none,
			strict: func(v version) field.ErrorList { return errs(mustBeUnset(v.FirstTimestamp, legacyTime)) },
		},
		{
			name:   "deprecatedLastTimestamp set",
			event:  with(newStyleEvent(), func(e *core.Event) { e.LastTimestamp = legacyTime }),
			legacy: none,
			strict: func(v version) field.ErrorList { return errs(mustBeUnset(v.LastTimestamp, legacyTime)) },
		},
		{
			name:   "deprecatedCount set",
			event:  with(newStyleEvent(), func(e *core.Event) { e.Count = 3 }),
			legacy: none,
			strict: func(v version) field.ErrorList { return errs(mustBeUnset(v.Count, int32(3))) },
		},
		{
			name:   "deprecatedSource.component set",
			event:  with(newStyleEvent(), func(e *core.Event) { e.Source.Component = "kubelet" }),
			legacy: none,
			strict: func(v version) field.ErrorList {
				return errs(sourceMustBeUnset(v, core.EventSource{Component: "kubelet"}))
			},
		},
		{
			name:   "deprecatedSource.host (or v1beta1 deprecatedHost) set",
			event:  with(newStyleEvent(), func(e *core.Event) { e.Source.Host = "node-1" }),
			legacy: none,
			strict: func(v version) field.ErrorList {
				return errs(sourceMustBeUnset(v, core.EventSource{Host: "node-1"}))
			},
		},

		// v1beta1 deprecatedHost disagreeing with deprecatedSource.host, as
		// conversion hands it over.
		func() createCase {
			c := createCase{name: "deprecatedHost conflict on a legacy event", event: with(recordEvent(), func(e *core.Event) { e.DeprecatedHost = "node-2" })}
			c.legacy = func(version) field.ErrorList { return errs(deprecatedHostConflict("node-2")) }
			c.strict = func(v version) field.ErrorList {
				return append(recordEventStrictErrors(v, recordEvent().Source), deprecatedHostConflict("node-2"))
			}
			return c
		}(),
		func() createCase {
			c := createCase{
				name:  "deprecatedHost conflict on a new-style event",
				event: with(newStyleEvent(), func(e *core.Event) { e.Source.Host = "node-1"; e.DeprecatedHost = "node-2" }),
			}
			c.legacy = func(version) field.ErrorList { return errs(deprecatedHostConflict("node-2")) }
			c.strict = func(v version) field.ErrorList {
				return errs(sourceMustBeUnset(v, core.EventSource{Host: "node-1"}), deprecatedHostConflict("node-2"))
			}
			return c
		}(),
	}

	for _, tc := range cases {
		for _, v := range allVersions {
			t.Run(v.gv.String()+"/"+tc.name, func(t *testing.T) {
				want := tc.legacy
				if v.strict {
					want = tc.strict
				}
				event := tc.event.DeepCopy()
				got := ValidateEventCreate(event, v.gv)
				assertErrors(t, got, want(v))
				if !reflect.DeepEqual(event, tc.event) {
					t.Errorf("validation changed the event")
				}
			})
		}
	}
}

// A write whose version the server does not know (no request info, say) is
// held to the strict rules under events.k8s.io names.
func TestValidateEventCreateUnknownVersionIsStrict(t *testing.T) {
	for _, gv := range []schema.GroupVersion{{}, {Group: "events.k8s.io", Version: "v2"}} {
		t.Run(gv.String(), func(t *testing.T) {
			got := ValidateEventCreate(recordEvent(), gv)
			assertErrors(t, got, recordEventStrictErrors(eventsV1, recordEvent().Source))
		})
	}
}

type updateCase struct {
	name string
	// old defaults to storedSeries().
	old            *core.Event
	new            func(*core.Event)
	legacy, strict expectation
}

// storedSeries is a new-style event as stored after it became a series.
func storedSeries() *core.Event {
	return with(newStyleEvent(), func(e *core.Event) {
		e.ResourceVersion = "7"
		e.UID = "2c0d1f7e-8a7b-4b7e-9d52-6a1c4f8e2b10"
		e.Series = &core.EventSeries{Count: 2, LastObservedTime: lastObserved, State: core.EventSeriesStateOngoing}
	})
}

func storedRecordEvent() *core.Event {
	return with(recordEvent(), func(e *core.Event) { e.ResourceVersion = "7" })
}

func TestValidateEventUpdate(t *testing.T) {
	// identityChange changes what upstream keeps as reported: events.k8s.io
	// refuses it for every event, core/v1 lets it be.
	identityChange := func(name string, mutate func(*core.Event), path func(version) string, value func(*core.Event) any) updateCase {
		return updateCase{
			name:   name,
			new:    mutate,
			legacy: none,
			strict: func(v version) field.ErrorList {
				return errs(immutable(path(v), value(with(storedSeries(), mutate))))
			},
		}
	}
	// seriesIdentityChange changes what makes the events of a series
	// isomorphic: refused in every version, core/v1 saying why.
	seriesIdentityChange := func(name string, mutate func(*core.Event), path func(version) string, value func(*core.Event) any, legacy *field.Error) updateCase {
		c := identityChange(name, mutate, path, value)
		c.legacy = func(version) field.ErrorList { return errs(legacy) }
		return c
	}
	identityErr := func(path string, value any) *field.Error {
		return field.Invalid(pathOf(path), value, SeriesIdentityDetail)
	}
	relatedAdded := field.Forbidden(pathOf("related"), "may not be added: "+SeriesIdentityDetail)
	finished := with(storedSeries(), func(e *core.Event) { e.Series.State = core.EventSeriesStateFinished })
	finishedIsFinal := func(path *field.Path, value any, detail string) *field.Error {
		return field.Invalid(path, value, detail+": "+FinishedIsFinalDetail)
	}
	fixed := func(path string) func(version) string { return func(version) string { return path } }

	cases := []updateCase{
		// Series changes that are allowed.
		{
			name: "series heartbeat: count and lastObservedTime advance",
			new: func(e *core.Event) {
				e.Series.Count = 9
				e.Series.LastObservedTime = metav1.NewMicroTime(lastObserved.Add(30 * time.Minute))
			},
			legacy: none, strict: none,
		},
		{
			name:   "series finishes",
			new:    func(e *core.Event) { e.Series.State = core.EventSeriesStateFinished },
			legacy: none, strict: none,
		},
		{
			name:   "singleton becomes a series",
			old:    with(storedSeries(), func(e *core.Event) { e.Series = nil }),
			new:    func(e *core.Event) { e.Series = &core.EventSeries{Count: 2, LastObservedTime: lastObserved} },
			legacy: none, strict: none,
		},
		{
			name:   "labels change, series untouched",
			new:    func(e *core.Event) { e.Labels = map[string]string{"team": "shop"} },
			legacy: none, strict: none,
		},

		{
			name:   "Unknown series back to Ongoing: its reporter is back",
			old:    with(storedSeries(), func(e *core.Event) { e.Series.State = core.EventSeriesStateUnknown }),
			new:    func(e *core.Event) { e.Series.State = core.EventSeriesStateOngoing },
			legacy: none, strict: none,
		},
		{
			name:   "Finished series: the same final write again",
			old:    finished,
			new:    func(e *core.Event) { e.Labels = map[string]string{"team": "shop"} },
			legacy: none, strict: none,
		},

		// Series changes that are re-validated.
		{
			name: "series.count lowered to 1",
			new:  func(e *core.Event) { e.Series.Count = 1 },
			legacy: func(version) field.ErrorList {
				return errs(field.Invalid(pathOf("series").Child("count"), int32(1), "must be at least 2: an event observed once is a singleton and has no series"),
					field.Invalid(pathOf("series").Child("count"), int32(1), "may not decrease (was 2)"))
			},
			strict: func(version) field.ErrorList {
				return errs(field.Invalid(pathOf("series").Child("count"), int32(1), "must be at least 2: a series stands for two or more occurrences"),
					field.Invalid(pathOf("series").Child("count"), int32(1), "may not decrease (was 2)"))
			},
		},
		{
			name: "series.lastObservedTime cleared",
			new:  func(e *core.Event) { e.Series.LastObservedTime = metav1.MicroTime{} },
			legacy: func(version) field.ErrorList {
				return errs(field.Required(pathOf("series").Child("lastObservedTime"), "a series must say when it was last observed"),
					field.Invalid(pathOf("series").Child("lastObservedTime"), "0001-01-01T00:00:00.000000Z", "may not move backwards (was 2026-03-01T10:05:00.123456Z)"))
			},
			strict: func(version) field.ErrorList {
				return errs(field.Required(pathOf("series").Child("lastObservedTime"), "the time the last occurrence of the series was observed"),
					field.Invalid(pathOf("series").Child("lastObservedTime"), "0001-01-01T00:00:00.000000Z", "may not move backwards (was 2026-03-01T10:05:00.123456Z)"))
			},
		},
		func() updateCase {
			c := updateCase{name: "series.lastObservedTime before eventTime", new: func(e *core.Event) {
				e.Series.Count = 3
				e.Series.LastObservedTime = metav1.NewMicroTime(eventTime.Add(-time.Second))
			}}
			c.legacy, c.strict = inAll(func(version) field.ErrorList {
				return errs(field.Invalid(pathOf("series").Child("lastObservedTime"), "2026-03-01T09:59:59.123456Z", "may not move backwards (was 2026-03-01T10:05:00.123456Z)"))
			})
			return c
		}(),
		{
			name: "singleton becomes a series of one",
			old:  with(storedSeries(), func(e *core.Event) { e.Series = nil }),
			new:  func(e *core.Event) { e.Series = &core.EventSeries{Count: 1, LastObservedTime: lastObserved} },
			legacy: func(version) field.ErrorList {
				return errs(field.Invalid(pathOf("series").Child("count"), int32(1), "must be at least 2: an event observed once is a singleton and has no series"))
			},
			strict: func(version) field.ErrorList {
				return errs(field.Invalid(pathOf("series").Child("count"), int32(1), "must be at least 2: a series stands for two or more occurrences"))
			},
		},
		func() updateCase {
			c := updateCase{name: "Finished series to Unknown", old: finished, new: func(e *core.Event) { e.Series.State = core.EventSeriesStateUnknown }}
			c.legacy, c.strict = inAll(func(version) field.ErrorList {
				return errs(finishedIsFinal(pathOf("series").Child("state"), "Unknown", "may not change once the series is Finished"))
			})
			return c
		}(),
		func() updateCase {
			c := updateCase{name: "series removed", new: func(e *core.Event) { e.Series = nil }}
			c.legacy, c.strict = inAll(func(version) field.ErrorList {
				return errs(field.Required(pathOf("series"), "may not be removed from an event series (was count 2, state Ongoing)"))
			})
			return c
		}(),
		func() updateCase {
			c := updateCase{name: "Finished series back to Ongoing", old: finished, new: func(e *core.Event) { e.Series.State = core.EventSeriesStateOngoing }}
			c.legacy, c.strict = inAll(func(version) field.ErrorList {
				return errs(finishedIsFinal(pathOf("series").Child("state"), "Ongoing", "may not change once the series is Finished"))
			})
			return c
		}(),
		func() updateCase {
			c := updateCase{name: "Finished series counts on", old: finished, new: func(e *core.Event) {
				e.Series.Count = 3
				e.Series.LastObservedTime = metav1.NewMicroTime(lastObserved.Add(time.Minute))
			}}
			c.legacy, c.strict = inAll(func(version) field.ErrorList {
				return errs(finishedIsFinal(pathOf("series").Child("count"), int32(3), "may not change once the series is Finished (was 2)"),
					finishedIsFinal(pathOf("series").Child("lastObservedTime"), "2026-03-01T10:06:00.123456Z",
						"may not change once the series is Finished (was 2026-03-01T10:05:00.123456Z)"))
			})
			return c
		}(),
		{
			name:   "a stored series of count 1 is not re-validated when the series is untouched",
			old:    with(storedSeries(), func(e *core.Event) { e.Series.Count = 1 }),
			new:    func(e *core.Event) { e.Labels = map[string]string{"team": "shop"} },
			legacy: none, strict: none,
		},
		func() updateCase {
			c := updateCase{name: "series state set to an unknown state", new: func(e *core.Event) { e.Series.State = "Stopped" }}
			c.legacy, c.strict = inAll(func(version) field.ErrorList { return errs(badSeriesState("Stopped")) })
			return c
		}(),

		// The series identity, one field at a time.
		seriesIdentityChange("regarding changed", func(e *core.Event) { e.InvolvedObject.Name = "web-1" },
			func(v version) string { return v.Regarding }, func(e *core.Event) any { return e.InvolvedObject },
			identityErr("involvedObject.name", "web-1")),
		seriesIdentityChange("related added", func(e *core.Event) { e.Related = &core.ObjectReference{APIVersion: "v1", Kind: "Node", Name: "node-1"} },
			fixed("related"), func(e *core.Event) any { return e.Related }, relatedAdded),
		seriesIdentityChange("related changed",
			func(e *core.Event) { e.Related = &core.ObjectReference{APIVersion: "v1", Kind: "Node", Name: "node-2"} },
			fixed("related"), func(e *core.Event) any { return e.Related }, relatedAdded),
		{
			name: "related removed",
			old:  with(storedSeries(), func(e *core.Event) { e.Related = &core.ObjectReference{APIVersion: "v1", Kind: "Node", Name: "node-1"} }),
			new:  func(e *core.Event) { e.Related = nil },
			legacy: func(version) field.ErrorList {
				return errs(field.Required(pathOf("related"), "may not be removed: "+SeriesIdentityDetail))
			},
			strict: func(version) field.ErrorList { return errs(immutable("related", (*core.ObjectReference)(nil))) },
		},
		seriesIdentityChange("action changed", func(e *core.Event) { e.Action = "Preempting" },
			fixed("action"), func(e *core.Event) any { return e.Action }, identityErr("action", "Preempting")),
		seriesIdentityChange("reason changed", func(e *core.Event) { e.Reason = "Preempted" },
			fixed("reason"), func(e *core.Event) any { return e.Reason }, identityErr("reason", "Preempted")),
		seriesIdentityChange("reportingController changed", func(e *core.Event) { e.ReportingController = "other-scheduler" },
			func(v version) string { return v.ReportingController }, func(e *core.Event) any { return e.ReportingController },
			identityErr("reportingComponent", "other-scheduler")),
		seriesIdentityChange("reportingInstance changed", func(e *core.Event) { e.ReportingInstance = "default-scheduler-node-2" },
			fixed("reportingInstance"), func(e *core.Event) any { return e.ReportingInstance },
			identityErr("reportingInstance", "default-scheduler-node-2")),
		seriesIdentityChange("type changed", func(e *core.Event) { e.Type = core.EventTypeWarning },
			fixed("type"), func(e *core.Event) any { return e.Type }, identityErr("type", core.EventTypeWarning)),
		{
			name: "legacy reporter of a series changed (core/v1 names source.component)",
			old: with(storedSeries(), func(e *core.Event) {
				e.EventTime = metav1.MicroTime{}
				e.ReportingController = ""
				e.Source.Component = "default-scheduler"
			}),
			new:    func(e *core.Event) { e.Source.Component = "other-scheduler" },
			legacy: func(version) field.ErrorList { return errs(identityErr("source.component", "other-scheduler")) },
			strict: func(v version) field.ErrorList {
				return errs(immutable(v.ReportingController, "other-scheduler"), immutable(v.Source, core.EventSource{Component: "other-scheduler"}))
			},
		},

		// What upstream also keeps as reported.
		identityChange("note changed", func(e *core.Event) { e.Message = "Successfully assigned shop/web-0 to node-2" },
			func(v version) string { return v.Note }, func(e *core.Event) any { return e.Message }),
		identityChange("deprecatedSource changed", func(e *core.Event) { e.Source = core.EventSource{Component: "kubelet"} },
			func(v version) string { return v.Source }, func(e *core.Event) any { return e.Source }),
		identityChange("deprecatedFirstTimestamp changed", func(e *core.Event) { e.FirstTimestamp = legacyTime },
			func(v version) string { return v.FirstTimestamp }, func(e *core.Event) any { return e.FirstTimestamp }),
		identityChange("deprecatedLastTimestamp changed", func(e *core.Event) { e.LastTimestamp = legacyTime },
			func(v version) string { return v.LastTimestamp }, func(e *core.Event) any { return e.LastTimestamp }),
		identityChange("deprecatedCount changed", func(e *core.Event) { e.Count = 4 },
			func(v version) string { return v.Count }, func(e *core.Event) any { return e.Count }),
		identityChange("eventTime changed by a microsecond", func(e *core.Event) { e.EventTime = metav1.NewMicroTime(eventTime.Add(time.Microsecond)) },
			fixed("eventTime"), func(e *core.Event) any { return e.EventTime }),
		identityChange("eventTime changed by a second", func(e *core.Event) { e.EventTime = metav1.NewMicroTime(eventTime.Add(time.Second)) },
			fixed("eventTime"), func(e *core.Event) any { return e.EventTime }),
		{
			name:   "eventTime changed below a microsecond is tolerated",
			old:    with(storedSeries(), func(e *core.Event) { e.EventTime = metav1.NewMicroTime(eventTime.Add(100 * time.Nanosecond)) }),
			new:    func(e *core.Event) { e.EventTime = metav1.NewMicroTime(eventTime.Add(900 * time.Nanosecond)) },
			legacy: none, strict: none,
		},
		{
			name:   "eventTime in another time zone is the same instant",
			new:    func(e *core.Event) { e.EventTime = metav1.NewMicroTime(eventTime.In(time.FixedZone("CET", 3600))) },
			legacy: none, strict: none,
		},

		// Metadata.
		{
			name:   "metadata.name changed",
			new:    func(e *core.Event) { e.Name = "web-0.other" },
			legacy: none,
			strict: func(version) field.ErrorList {
				return errs(immutable("metadata.name", "web-0.other"))
			},
		},
		{
			name:   "update without resourceVersion",
			new:    func(e *core.Event) { e.ResourceVersion = "" },
			legacy: none,
			strict: func(version) field.ErrorList {
				return errs(field.Invalid(pathOf("metadata").Child("resourceVersion"), "", "must be specified for an update"))
			},
		},

		// Legacy rules hold for every update.
		func() updateCase {
			c := updateCase{name: "reason cleared on an event with eventTime", new: func(e *core.Event) { e.Reason = "" }}
			c.legacy = func(version) field.ErrorList { return errs(requiredReason(), identityErr("reason", "")) }
			c.strict = func(version) field.ErrorList { return errs(requiredReason(), immutable("reason", "")) }
			return c
		}(),
		func() updateCase {
			c := updateCase{name: "deprecatedHost conflict", old: storedRecordEvent(), new: func(e *core.Event) { e.DeprecatedHost = "node-2" }}
			c.legacy, c.strict = inAll(func(version) field.ErrorList { return errs(deprecatedHostConflict("node-2")) })
			return c
		}(),

		// Legacy events.
		{
			name: "legacy count and lastTimestamp patch as client-go tools/record sends it",
			old:  storedRecordEvent(),
			new: func(e *core.Event) {
				e.Count = 2
				e.LastTimestamp = newLegacyTime
			},
			legacy: none,
			strict: func(v version) field.ErrorList {
				return errs(immutable(v.LastTimestamp, newLegacyTime), immutable(v.Count, int32(2)))
			},
		},
		func() updateCase {
			c := updateCase{
				name: "legacy event moved to an object in another namespace",
				old:  storedRecordEvent(),
				new:  func(e *core.Event) { e.InvolvedObject.Namespace = "web" },
			}
			mismatch := func(v version) *field.Error {
				return namespaceMismatch(v, "web", `does not match metadata.namespace "shop"`)
			}
			c.legacy = func(v version) field.ErrorList { return errs(mismatch(v)) }
			c.strict = func(v version) field.ErrorList {
				return errs(mismatch(v), immutable(v.Regarding, with(recordEvent(), func(e *core.Event) { e.InvolvedObject.Namespace = "web" }).InvolvedObject))
			}
			return c
		}(),
		{
			name:   "legacy event read back through events.k8s.io (reportingController from source.component) and written unchanged",
			old:    with(sourceOnlyEvent(), func(e *core.Event) { e.ResourceVersion = "7" }),
			new:    func(e *core.Event) { e.ReportingController = e.Source.Component },
			legacy: none, strict: none,
		},
		{
			name:   "legacy event given a reportingController other than its source.component",
			old:    with(sourceOnlyEvent(), func(e *core.Event) { e.ResourceVersion = "7" }),
			new:    func(e *core.Event) { e.ReportingController = "kubelet-2" },
			legacy: none,
			strict: func(v version) field.ErrorList { return errs(immutable(v.ReportingController, "kubelet-2")) },
		},
	}

	for _, tc := range cases {
		for _, v := range allVersions {
			t.Run(v.gv.String()+"/"+tc.name, func(t *testing.T) {
				want := tc.legacy
				if v.strict {
					want = tc.strict
				}
				old := tc.old
				if old == nil {
					old = storedSeries()
				}
				newEvent := with(old, tc.new)
				got := ValidateEventUpdate(newEvent, old, v.gv)
				assertErrors(t, got, want(v))
			})
		}
	}
}

// comparableError is what the tests pin of a field error.
type comparableError struct {
	Type     field.ErrorType
	Field    string
	Detail   string
	BadValue any
}

func (e comparableError) String() string {
	return fmt.Sprintf("%s %s: %#v: %s", e.Field, e.Type, e.BadValue, e.Detail)
}

func normalize(list field.ErrorList) []comparableError {
	out := make([]comparableError, 0, len(list))
	for _, err := range list {
		out = append(out, comparableError{Type: err.Type, Field: err.Field, Detail: err.Detail, BadValue: err.BadValue})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// assertErrors compares field path, type, detail and value of every error,
// in any order.
func assertErrors(t *testing.T, got, want field.ErrorList) {
	t.Helper()
	g, w := normalize(got), normalize(want)
	if reflect.DeepEqual(g, w) {
		return
	}
	t.Errorf("got %d errors, want %d", len(g), len(w))
	for _, e := range g {
		t.Errorf("  got:  %s", e)
	}
	for _, e := range w {
		t.Errorf("  want: %s", e)
	}
}
