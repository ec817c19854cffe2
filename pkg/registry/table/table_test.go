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

package table

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

// TestBuild: a row per object or list item, the list's paging metadata,
// no headers when asked, rows (none) for an empty list.
func TestBuild(t *testing.T) {
	columns := []metav1.TableColumnDefinition{{Name: "Name", Type: "string"}}
	row := func(obj runtime.Object) (metav1.TableRow, error) {
		return metav1.TableRow{Cells: []interface{}{obj.(*core.Event).Name}}, nil
	}
	event := func(name string) core.Event {
		return core.Event{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "7"}}
	}
	one := event("a")
	tests := []struct {
		name    string
		obj     runtime.Object
		options runtime.Object
		want    *metav1.Table
	}{
		{name: "one object", obj: &one, want: &metav1.Table{
			ListMeta: metav1.ListMeta{ResourceVersion: "7"}, ColumnDefinitions: columns,
			Rows: []metav1.TableRow{{Cells: []interface{}{"a"}}},
		}},
		{name: "a list", obj: &core.EventList{
			ListMeta: metav1.ListMeta{ResourceVersion: "9", Continue: "next", RemainingItemCount: ptr.To[int64](3)},
			Items:    []core.Event{event("a"), event("b")},
		}, want: &metav1.Table{
			ListMeta: metav1.ListMeta{ResourceVersion: "9", Continue: "next", RemainingItemCount: ptr.To[int64](3)}, ColumnDefinitions: columns,
			Rows: []metav1.TableRow{{Cells: []interface{}{"a"}}, {Cells: []interface{}{"b"}}},
		}},
		{name: "an empty list", obj: &core.EventList{}, want: &metav1.Table{ColumnDefinitions: columns, Rows: []metav1.TableRow{}}},
		{name: "no headers", obj: &one, options: &metav1.TableOptions{NoHeaders: true}, want: &metav1.Table{
			ListMeta: metav1.ListMeta{ResourceVersion: "7"},
			Rows:     []metav1.TableRow{{Cells: []interface{}{"a"}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Build(tt.obj, tt.options, columns, row)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("table (-want +got):\n%s", diff)
			}
		})
	}
}
