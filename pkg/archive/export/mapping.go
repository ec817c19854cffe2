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

package export

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/propagation"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
)

// The attributes of an exported state. The k8s.event.*, k8s.namespace.name,
// k8s.object.* and k8s.<kind>.name/uid ones are those of OpenTelemetry's
// semantic conventions for Kubernetes and of the Collector's k8s_events
// and k8sobjects receivers; the others are this server's additions, under
// k8s.event.
const (
	AttrEventUID        = "k8s.event.uid"
	AttrEventName       = "k8s.event.name"
	AttrEventReason     = "k8s.event.reason"
	AttrEventAction     = "k8s.event.action"
	AttrEventCount      = "k8s.event.count"
	AttrEventStartTime  = "k8s.event.start_time"
	AttrNamespace       = "k8s.namespace.name"
	AttrObjectKind      = "k8s.object.kind"
	AttrObjectName      = "k8s.object.name"
	AttrObjectUID       = "k8s.object.uid"
	AttrObjectAPIVer    = "k8s.object.api_version"
	AttrObjectFieldPath = "k8s.object.fieldpath"
	AttrObjectRV        = "k8s.object.resource_version"

	// AttrRecordUID is the record's identity, <event UID>/<resourceVersion>:
	// the same for a state sent twice, for receivers to de-duplicate.
	AttrRecordUID = "log.record.uid"
	// AttrEventRV is the resourceVersion of the state.
	AttrEventRV = "k8s.event.resource_version"
	// AttrEventType is the event's type, which also sets the severity.
	AttrEventType = "k8s.event.type"
	// AttrSeriesState is the series' state (Ongoing, Finished, Unknown),
	// for an event that stands for a series; k8s.event.count is then its
	// count of occurrences.
	AttrSeriesState = "k8s.event.series.state"
	// AttrReportingController and AttrReportingInstance name the
	// reporter.
	AttrReportingController = "k8s.event.reporting_controller"
	AttrReportingInstance   = "k8s.event.reporting_instance"
	// AttrRelated* describe the event's related object.
	AttrRelatedKind      = "k8s.event.related.kind"
	AttrRelatedName      = "k8s.event.related.name"
	AttrRelatedNamespace = "k8s.event.related.namespace"
	AttrRelatedUID       = "k8s.event.related.uid"
	AttrRelatedAPIVer    = "k8s.event.related.api_version"
	// AttrAncestors and AttrAncestorUIDs are the chain of controller
	// owners of the regarding object, nearest first, as Kind/name and as
	// UIDs: the values of the regarding.ancestor field selector. Each
	// ancestor also sets k8s.<kind>.name and k8s.<kind>.uid (a Pod's
	// event names its ReplicaSet and Deployment as the conventions do).
	AttrAncestors    = "k8s.event.regarding.ancestors"
	AttrAncestorUIDs = "k8s.event.regarding.ancestor_uids"
)

// EventName is the record's event name (OpenTelemetry's Event).
const EventName = "k8s.event"

// TraceparentAnnotation (and TracestateAnnotation) link an event to a
// trace: the W3C Trace Context headers, as a reporter that traces its work
// writes them into the event's annotations.
const (
	TraceparentAnnotation = "traceparent"
	TracestateAnnotation  = "tracestate"
)

// severities maps an event's type to its severity.
var severities = map[string]log.Severity{
	"Normal":  log.SeverityInfo,
	"Warning": log.SeverityWarn,
}

// newRecord maps an archived state of an event to its log record, and ctx
// to a context that carries the event's trace and span, if its
// annotations hold a valid traceparent (the SDK's logger takes them from
// the context). revision is the state's resourceVersion.
func newRecord(ctx context.Context, event *core.Event, revision string) (context.Context, log.Record) {
	var r log.Record
	r.SetEventName(EventName)
	last := core.LastObserved(event)
	r.SetTimestamp(last)
	// The same for a state exported twice, so that receivers see equal
	// records.
	r.SetObservedTimestamp(last)
	r.SetBody(attribute.StringValue(event.Message))
	if sev, ok := severities[event.Type]; ok {
		r.SetSeverity(sev)
	}
	r.SetSeverityText(event.Type)

	attrs := make([]attribute.KeyValue, 0, 32)
	str := func(key, value string) {
		if value != "" {
			attrs = append(attrs, attribute.String(key, value))
		}
	}
	uid := string(event.UID)
	str(AttrRecordUID, uid+"/"+revision)
	str(AttrEventUID, uid)
	str(AttrEventName, event.Name)
	str(AttrEventRV, revision)
	str(AttrNamespace, event.Namespace)
	str(AttrEventType, event.Type)
	str(AttrEventReason, event.Reason)
	str(AttrEventAction, event.Action)
	attrs = append(attrs, attribute.Int64(AttrEventCount, int64(core.Occurrences(event))))
	str(AttrEventStartTime, core.FirstObserved(event).UTC().Format(time.RFC3339Nano))
	if event.Series != nil {
		str(AttrSeriesState, string(event.Series.State))
	}
	str(AttrReportingController, event.ReportingController)
	str(AttrReportingInstance, event.ReportingInstance)

	regarding := event.InvolvedObject
	str(AttrObjectKind, regarding.Kind)
	str(AttrObjectName, regarding.Name)
	str(AttrObjectUID, string(regarding.UID))
	str(AttrObjectAPIVer, regarding.APIVersion)
	str(AttrObjectFieldPath, regarding.FieldPath)
	str(AttrObjectRV, regarding.ResourceVersion)
	kinds := map[string]bool{}
	kindAttrs := func(kind, name, uid string) {
		k := strings.ToLower(kind)
		if k == "" || kinds[k] {
			return
		}
		kinds[k] = true
		if k != "namespace" {
			// k8s.namespace.name is the event's namespace.
			str("k8s."+k+".name", name)
		}
		str("k8s."+k+".uid", uid)
	}
	kindAttrs(regarding.Kind, regarding.Name, string(regarding.UID))

	if rel := event.Related; rel != nil {
		str(AttrRelatedKind, rel.Kind)
		str(AttrRelatedName, rel.Name)
		str(AttrRelatedNamespace, rel.Namespace)
		str(AttrRelatedUID, string(rel.UID))
		str(AttrRelatedAPIVer, rel.APIVersion)
	}

	if chain, err := ownerchain.Decode(event.Annotations[ownerchain.Annotation]); err == nil && len(chain) > 0 {
		names := make([]string, 0, len(chain))
		uids := make([]string, 0, len(chain))
		for _, a := range chain {
			names = append(names, a.Kind+"/"+a.Name)
			uids = append(uids, string(a.UID))
			kindAttrs(a.Kind, a.Name, string(a.UID))
		}
		attrs = append(attrs, attribute.StringSlice(AttrAncestors, names), attribute.StringSlice(AttrAncestorUIDs, uids))
	}
	r.AddAttributes(attrs...)
	return traceContext(ctx, event), r
}

// traceContext is ctx with the trace and span of event's W3C traceparent
// annotation (and its tracestate), if it holds a valid one.
func traceContext(ctx context.Context, event *core.Event) context.Context {
	if tp := event.Annotations[TraceparentAnnotation]; tp != "" {
		carrier := propagation.MapCarrier{"traceparent": tp}
		if ts := event.Annotations[TracestateAnnotation]; ts != "" {
			carrier["tracestate"] = ts
		}
		ctx = propagation.TraceContext{}.Extract(ctx, carrier)
	}
	return ctx
}
