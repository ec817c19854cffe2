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

package eventsummary

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/kube-events/events-apiserver/pkg/apis/summaries"
	"github.com/kube-events/events-apiserver/pkg/registry/table"
)

// tableColumns are what kubectl get eventsummaries prints; the priority 1
// ones only with -o wide.
var tableColumns = []metav1.TableColumnDefinition{
	{Name: "Type", Type: "string", Description: "Type of the counted events (Normal, Warning)."},
	{Name: "Reason", Type: "string", Description: "Reason of the counted events."},
	{Name: "Kind", Type: "string", Description: "Kind of the objects the counted events regard."},
	{Name: "Controller", Type: "string", Description: "Reporting controller of the counted events."},
	{Name: "Occurrences", Type: "integer", Description: "How many occurrences the counted events stand for: series and repeated events count each occurrence."},
	{Name: "Objects", Type: "integer", Description: "How many distinct objects the counted events regard."},
	{Name: "First", Type: "string", Description: "How long ago the first occurrence was observed."},
	{Name: "Last", Type: "string", Description: "How long ago the last occurrence was observed."},
	{Name: "Events", Type: "integer", Priority: 1, Description: "How many events were counted."},
	{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: "Name of the summary."},
}

// TableConvertor prints event summaries as kubectl get shows them.
type TableConvertor struct {
	// Now is the clock that ages are measured against; time.Now if nil.
	Now func() time.Time
}

var _ rest.TableConvertor = TableConvertor{}

// ConvertToTable converts an EventSummary or EventSummaryList to a table.
func (c TableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	at := now()
	return table.Build(obj, tableOptions, tableColumns, func(item runtime.Object) (metav1.TableRow, error) {
		summary, ok := item.(*summaries.EventSummary)
		if !ok {
			return metav1.TableRow{}, fmt.Errorf("no table printer for %T", item)
		}
		return summaryRow(summary, at), nil
	})
}

// summaryRow is one summary's row; the cells are in tableColumns' order.
func summaryRow(s *summaries.EventSummary, now time.Time) metav1.TableRow {
	return metav1.TableRow{
		Object: runtime.RawExtension{Object: s},
		Cells: []interface{}{
			s.Type,
			s.Reason,
			s.RegardingKind,
			s.ReportingController,
			s.Occurrences,
			s.Objects,
			age(now, s.FirstObserved),
			age(now, s.LastObserved),
			s.Events,
			s.Name,
		},
	}
}

// age is how long before now t was, as kubectl writes ages, or <unknown>
// for the zero time.
func age(now time.Time, t metav1.MicroTime) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}
