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

package victorialogs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kube-events/events-apiserver/pkg/archive"
)

// TestSummaryQueries checks that the two queries of a summary, by (UID,
// resourceVersion) and by row_max, count the same.
func TestSummaryQueries(t *testing.T) {
	ctx := context.Background()
	a, err := OpenEmbedded(ctx, EmbeddedConfig{Dir: t.TempDir(), Retention: 7 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Close() }()
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	var records []archive.Record
	rv := 0
	for i := range 60 {
		uid := fmt.Sprintf("u%02d", i)
		types := []string{"Warning", "Normal"}
		for s := range 1 + i%3 {
			rv++
			records = append(records, archive.Record{
				UID: uid, Namespace: fmt.Sprintf("ns%d", i%2), Name: "ev-" + uid, ResourceVersion: fmt.Sprint(rv),
				Time:        base.Add(time.Duration(i+s*7) * time.Minute / 3),
				Occurrences: int32(s + 1), FirstObserved: base.Add(time.Duration(i) * time.Minute / 3),
				Fields: map[string]string{
					"type": types[(i+s)%2], "reason": fmt.Sprintf("R%d", i%4), "involvedObject.kind": "Pod",
					"involvedObject.namespace": fmt.Sprintf("ns%d", i%2), "involvedObject.name": fmt.Sprintf("pod-%d", i%7),
					"reportingComponent": "kubelet",
				},
			})
		}
	}
	if err := a.Append(ctx, records); err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	term := func(op selection.Operator, f, v string) fields.Requirement {
		return fields.Requirement{Operator: op, Field: f, Value: v}
	}
	tests := []struct {
		name string
		q    archive.SummaryQuery
	}{
		{name: "all", q: archive.SummaryQuery{}},
		{name: "namespace", q: archive.SummaryQuery{Namespace: "ns1"}},
		{name: "type=Warning", q: archive.SummaryQuery{Fields: fields.Requirements{term(selection.Equals, "type", "Warning")}}},
		{name: "reason!=R1,object", q: archive.SummaryQuery{Fields: fields.Requirements{
			term(selection.NotEquals, "reason", "R1"), term(selection.Equals, "involvedObject.name", "pod-3")}}},
		{name: "window", q: archive.SummaryQuery{Since: base.Add(5 * time.Minute), Until: base.Add(15 * time.Minute)}},
		{name: "except and objects", q: archive.SummaryQuery{Except: []string{"u01", "u02", "u07"},
			Objects: []archive.Object{{Namespace: "ns0", Name: "pod-2"}, {Namespace: "ns1", Name: "pod-1"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newSummaryQuery(&tc.q, 7*24*time.Hour, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			newest, duplicates, err := runSummary(ctx, a, s.newest())
			if err != nil || duplicates {
				t.Fatalf("by (UID, resourceVersion): duplicates %v, %v", duplicates, err)
			}
			exact, _, err := runSummary(ctx, a, s.exact())
			if err != nil {
				t.Fatalf("by row_max: %v", err)
			}
			for _, rows := range [][]archive.SummaryRow{newest, exact} {
				slices.SortFunc(rows, func(a, b archive.SummaryRow) int {
					return strings.Compare(a.Namespace+a.Type+a.Reason, b.Namespace+b.Type+b.Reason)
				})
			}
			if len(exact) == 0 {
				t.Fatal("no rows")
			}
			if diff := cmp.Diff(exact, newest); diff != "" {
				t.Errorf("rows (-row_max +by (UID, resourceVersion)):\n%s", diff)
			}
		})
	}
}
