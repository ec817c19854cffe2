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
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

var tableNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(tableNow.Add(-d)) }

func microAgo(d time.Duration) metav1.MicroTime { return metav1.NewMicroTime(tableNow.Add(-d)) }

func TestTableColumns(t *testing.T) {
	var names []string
	var wide []string
	for _, c := range tableColumns {
		if c.Priority == 0 {
			names = append(names, c.Name)
		} else {
			wide = append(wide, c.Name)
		}
	}
	if want := []string{"Last Seen", "Type", "Reason", "Object", "Message"}; !reflect.DeepEqual(names, want) {
		t.Errorf("default columns = %v, want %v", names, want)
	}
	if want := []string{"Subobject", "Source", "First Seen", "Count", "Name", "Action", "Related", "Series"}; !reflect.DeepEqual(wide, want) {
		t.Errorf("wide columns = %v, want %v", wide, want)
	}
}

func TestEventRow(t *testing.T) {
	base := func() *core.Event {
		return &core.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "pod-a.1", Namespace: "default"},
			InvolvedObject: core.ObjectReference{Kind: "Pod", Name: "pod-a", FieldPath: "spec.containers{app}"},
			Reason:         "BackOff",
			Message:        "  Back-off restarting failed container \n",
			Type:           core.EventTypeWarning,
		}
	}
	legacyRepeated := base()
	legacyRepeated.Source = core.EventSource{Component: "kubelet", Host: "node-1"}
	legacyRepeated.FirstTimestamp, legacyRepeated.LastTimestamp, legacyRepeated.Count = ago(10*time.Minute), ago(30*time.Second), 7

	legacySingle := base()
	legacySingle.Source = core.EventSource{Component: "kubelet"}
	legacySingle.FirstTimestamp, legacySingle.LastTimestamp, legacySingle.Count = ago(2*time.Hour), ago(2*time.Hour), 1

	newSingleton := base()
	newSingleton.EventTime = microAgo(45 * time.Second)
	newSingleton.ReportingController, newSingleton.ReportingInstance = "k8s.io/kubelet", "kubelet-node-1"

	newSingleton.Action = "Pulling"

	series := base()
	series.EventTime = microAgo(5 * time.Minute)
	series.Series = &core.EventSeries{Count: 4, LastObservedTime: microAgo(20 * time.Second), State: core.EventSeriesStateFinished}
	series.ReportingController = "k8s.io/kubelet"
	series.Action = "Restarting"
	series.Related = &core.ObjectReference{Kind: "Node", Name: "node-1"}

	stateless := base()
	stateless.EventTime = microAgo(time.Minute)
	stateless.Series = &core.EventSeries{Count: 2, LastObservedTime: microAgo(time.Second)}
	stateless.Related = &core.ObjectReference{Kind: "Cluster"}

	noName := base()
	noName.InvolvedObject = core.ObjectReference{Kind: "Cluster"}

	tests := []struct {
		name  string
		event *core.Event
		want  []interface{}
	}{{
		name:  "legacy event seen 7 times",
		event: legacyRepeated,
		want:  []interface{}{"30s (x7 over 10m)", "Warning", "BackOff", "pod/pod-a", "spec.containers{app}", "kubelet, node-1", "Back-off restarting failed container", "10m", int64(7), "pod-a.1", "", "", ""},
	}, {
		name:  "legacy event seen once",
		event: legacySingle,
		want:  []interface{}{"120m", "Warning", "BackOff", "pod/pod-a", "spec.containers{app}", "kubelet", "Back-off restarting failed container", "120m", int64(1), "pod-a.1", "", "", ""},
	}, {
		name:  "events.k8s.io singleton: eventTime, count 1, reporting controller and instance",
		event: newSingleton,
		want:  []interface{}{"45s", "Warning", "BackOff", "pod/pod-a", "spec.containers{app}", "k8s.io/kubelet, kubelet-node-1", "Back-off restarting failed container", "45s", int64(1), "pod-a.1", "Pulling", "", ""},
	}, {
		name:  "series: last observed time, series count and state, action and related object",
		event: series,
		want:  []interface{}{"20s (x4 over 5m)", "Warning", "BackOff", "pod/pod-a", "spec.containers{app}", "k8s.io/kubelet", "Back-off restarting failed container", "5m", int64(4), "pod-a.1", "Restarting", "node/node-1", "x4 Finished"},
	}, {
		name:  "series stored without a state reads as Ongoing; related object without a name",
		event: stateless,
		want:  []interface{}{"1s (x2 over 60s)", "Warning", "BackOff", "pod/pod-a", "spec.containers{app}", "", "Back-off restarting failed container", "60s", int64(2), "pod-a.1", "", "cluster", "x2 Ongoing"},
	}, {
		name:  "no timestamps and an object without a name",
		event: noName,
		want:  []interface{}{"<unknown>", "Warning", "BackOff", "cluster", "", "", "Back-off restarting failed container", "<unknown>", int64(1), "pod-a.1", "", "", ""},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := eventRow(tt.event, tableNow)
			if !reflect.DeepEqual(row.Cells, tt.want) {
				t.Errorf("cells =\n %#v\nwant\n %#v", row.Cells, tt.want)
			}
			if row.Object.Object != tt.event {
				t.Error("row does not carry its event")
			}
		})
	}
}

func TestConvertToTable(t *testing.T) {
	c := TableConvertor{Now: func() time.Time { return tableNow }}
	list := &core.EventList{
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next"},
		Items:    []core.Event{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}},
	}
	table, err := c.ConvertToTable(t.Context(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 2 || table.ResourceVersion != "42" || table.Continue != "next" || len(table.ColumnDefinitions) != len(tableColumns) {
		t.Errorf("table = %d rows, rv %q, continue %q, %d columns", len(table.Rows), table.ResourceVersion, table.Continue, len(table.ColumnDefinitions))
	}

	single := &core.Event{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "7"}}
	table, err = c.ConvertToTable(t.Context(), single, &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 1 || table.ResourceVersion != "7" || table.ColumnDefinitions != nil {
		t.Errorf("single table = %d rows, rv %q, %d columns (want none: noHeaders)", len(table.Rows), table.ResourceVersion, len(table.ColumnDefinitions))
	}

	if _, err := c.ConvertToTable(t.Context(), &metav1.Status{}, nil); err == nil {
		t.Error("ConvertToTable accepted a Status")
	}
	if _, err := c.ConvertToTable(t.Context(), single, &metav1.ListOptions{}); err == nil {
		t.Error("ConvertToTable accepted ListOptions as table options")
	}
}
