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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-events/events-apiserver/pkg/apis/summaries"
)

// TestConvertToTable checks the cells of a summary's row, in the order of
// the columns, and that a list's paging fields carry over.
func TestConvertToTable(t *testing.T) {
	now := base.Add(time.Hour)
	remaining := int64(3)
	list := &summaries.EventSummaryList{
		ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "next", RemainingItemCount: &remaining},
		Items: []summaries.EventSummary{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "warning.backoff.1a2b3c4d"},
			Type:       "Warning", Reason: "BackOff", RegardingKind: "Pod", ReportingController: "kubelet",
			Occurrences: 12, Events: 3, Objects: 2,
			FirstObserved: metav1.NewMicroTime(base), LastObserved: metav1.NewMicroTime(now.Add(-90 * time.Second)),
		}},
	}
	table, err := TableConvertor{Now: func() time.Time { return now }}.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if diff := cmp.Diff([]string{"Type", "Reason", "Kind", "Controller", "Occurrences", "Objects", "First", "Last", "Events", "Name"}, names); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	want := []interface{}{"Warning", "BackOff", "Pod", "kubelet", int64(12), int64(2), "60m", "90s", int64(3), "warning.backoff.1a2b3c4d"}
	if diff := cmp.Diff(want, table.Rows[0].Cells); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
	if table.ResourceVersion != "7" || table.Continue != "next" || table.RemainingItemCount == nil || *table.RemainingItemCount != 3 {
		t.Errorf("list meta: %q %q %v; want 7, next, 3", table.ResourceVersion, table.Continue, table.RemainingItemCount)
	}

	noHeaders, err := TableConvertor{}.ConvertToTable(context.Background(), &list.Items[0], &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(noHeaders.ColumnDefinitions) != 0 || len(noHeaders.Rows) != 1 {
		t.Errorf("one summary without headers: %d columns, %d rows; want 0 and 1", len(noHeaders.ColumnDefinitions), len(noHeaders.Rows))
	}
}
