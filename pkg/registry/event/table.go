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

package event

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/core/validation"
	"github.com/kube-events/events-apiserver/pkg/registry/table"
)

// tableColumns are kube-apiserver's columns for events, in its order, then
// the columns of what only events.k8s.io describes: action, related object
// and series. The priority 1 columns are the ones kubectl shows only with
// -o wide; ours come last so that kube-apiserver's keep their positions.
var tableColumns = []metav1.TableColumnDefinition{
	{Name: "Last Seen", Type: "string", Description: "The time at which the most recent occurrence of this event was recorded, with the number of occurrences and the time since the first when it happened more than once."},
	{Name: "Type", Type: "string", Description: "Type of this event (Normal, Warning), new types could be added in the future."},
	{Name: "Reason", Type: "string", Description: "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."},
	{Name: "Object", Type: "string", Description: "The object that this event is about."},
	{Name: "Subobject", Type: "string", Priority: 1, Description: "The part of the object this event is about, e.g. spec.containers{name}."},
	{Name: "Source", Type: "string", Priority: 1, Description: "The component reporting this event, and the host or instance it runs on."},
	{Name: "Message", Type: "string", Description: "A human-readable description of the status of this operation."},
	{Name: "First Seen", Type: "string", Priority: 1, Description: "The time at which the event was first recorded."},
	{Name: "Count", Type: "string", Priority: 1, Description: "The number of times this event has occurred."},
	{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: "Name must be unique within a namespace."},
	{Name: "Action", Type: "string", Priority: 1, Description: "What action was taken or failed regarding the object."},
	{Name: "Related", Type: "string", Priority: 1, Description: "The secondary object of more complex actions, e.g. the node a pod was scheduled to."},
	{Name: "Series", Type: "string", Priority: 1, Description: "For a series, its count and state: x<count> Ongoing, Finished or Unknown."},
}

// TableConvertor prints events the way kubectl users know them: the columns
// of kube-apiserver's event printer, with the LAST SEEN of a repeated event
// or series written as kubectl's events printer does, "5s (x3 over 2m)".
type TableConvertor struct {
	// Now is the clock that ages are measured against; time.Now if nil.
	Now func() time.Time
}

var _ rest.TableConvertor = TableConvertor{}

// ConvertToTable converts an Event or EventList to a table. Every column is
// filled in; clients hide the priority 1 ones unless asked for wide output.
func (c TableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	at := now()
	return table.Build(obj, tableOptions, tableColumns, func(item runtime.Object) (metav1.TableRow, error) {
		event, ok := item.(*core.Event)
		if !ok {
			return metav1.TableRow{}, fmt.Errorf("no table printer for %T", item)
		}
		return eventRow(event, at), nil
	})
}

// eventRow is one event's row; the cells are in tableColumns' order.
func eventRow(event *core.Event, now time.Time) metav1.TableRow {
	firstSeen := since(now, event.FirstTimestamp.Time)
	if event.FirstTimestamp.IsZero() {
		firstSeen = since(now, event.EventTime.Time)
	}
	lastSeen := since(now, event.LastTimestamp.Time)
	if event.LastTimestamp.IsZero() {
		lastSeen = firstSeen
	}

	count := event.Count
	if event.Series != nil {
		lastSeen = since(now, event.Series.LastObservedTime.Time)
		count = event.Series.Count
	} else if count == 0 {
		// Singleton events written through events.k8s.io carry no count.
		count = 1
	}
	// kubectl's events printer: a series or a repeated legacy event reads
	// "<last> (x<count> over <since first>)", first being eventTime if set.
	if event.Series != nil || event.Count > 1 {
		over := since(now, event.EventTime.Time)
		if event.EventTime.IsZero() {
			over = since(now, event.FirstTimestamp.Time)
		}
		lastSeen = fmt.Sprintf("%s (x%d over %s)", lastSeen, count, over)
	}

	related, series := "", ""
	if event.Related != nil {
		related = objectColumn(event.Related)
	}
	if event.Series != nil {
		series = fmt.Sprintf("x%d %s", event.Series.Count, validation.EffectiveSeriesState(event.Series.State))
	}

	return metav1.TableRow{
		Object: runtime.RawExtension{Object: event},
		Cells: []interface{}{
			lastSeen,
			event.Type,
			event.Reason,
			objectColumn(&event.InvolvedObject),
			event.InvolvedObject.FieldPath,
			eventSource(event),
			strings.TrimSpace(event.Message),
			firstSeen,
			int64(count),
			event.Name,
			event.Action,
			related,
			series,
		},
	}
}

// objectColumn is "kind/name", as kubectl names objects, or the kind alone
// for a reference without a name.
func objectColumn(ref *core.ObjectReference) string {
	object := strings.ToLower(ref.Kind)
	if ref.Name != "" {
		object += "/" + ref.Name
	}
	return object
}

// eventSource is "component, host": the legacy source, each part falling
// back to the new reportingController and reportingInstance.
func eventSource(event *core.Event) string {
	component := event.Source.Component
	if component == "" {
		component = event.ReportingController
	}
	instance := event.Source.Host
	if instance == "" {
		instance = event.ReportingInstance
	}
	if instance == "" {
		return component
	}
	return component + ", " + instance
}

// since is the human-readable age of t, or <unknown> for the zero time.
func since(now, t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}
