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

package validate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// observedHistory is, in the namespace ns, t0 being 12:00:00:
//
//	10 create a (observed t0+1s, red)
//	11 create b (observed t0+3s)
//	12 create c (observed t0+3s, red; after b: same time, a greater UID)
//	13 a: color red -> blue
//	14 delete b
//	15 create d (observed t0+2s)
//
// newest first: b, c, d, a; etcd's head at 20.
func observedHistory(t *testing.T) *History {
	t.Helper()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(o *Object, uid string, s int) *Object {
		o.UID, o.Observed = uid, t0.Add(time.Duration(s)*time.Second)
		return o
	}
	h := NewHistory()
	for _, c := range []Change{
		{Rev: 10, Key: "ns/a", Object: at(obj("a", "pod-1", "Started", "red"), "uid-a", 1)},
		{Rev: 11, Key: "ns/b", Object: at(obj("b", "pod-2", "Started", ""), "uid-b", 3)},
		{Rev: 12, Key: "ns/c", Object: at(obj("c", "pod-1", "Failed", "red"), "uid-c", 3)},
		{Rev: 13, Key: "ns/a", Object: at(obj("a", "pod-1", "Started", "blue"), "uid-a", 1)},
		{Rev: 14, Key: "ns/b"},
		{Rev: 15, Key: "ns/d", Object: at(obj("d", "pod-2", "Started", ""), "uid-d", 2)},
	} {
		if err := h.Append(c); err != nil {
			t.Fatal(err)
		}
	}
	h.Observe(20)
	return h
}

func TestCheckHistory(t *testing.T) {
	h := observedHistory(t)
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	page := func(watermark, head int64, cont bool, items ...Item) HistoryPage {
		return HistoryPage{Items: items, Continue: cont, Watermark: watermark, Head: head}
	}
	for _, tc := range []struct {
		name string
		list HistoryList
		want []string
	}{
		{
			name: "every live event, newest first",
			list: HistoryList{Pages: []HistoryPage{page(15, 15, false, item("c", 12), item("d", 15), item("a", 13))}},
		},
		{
			name: "in pages",
			list: HistoryList{Pages: []HistoryPage{page(15, 15, true, item("c", 12), item("d", 15)), page(15, 16, false, item("a", 13))}},
		},
		{
			name: "a deleted event's archived state among them",
			list: HistoryList{Pages: []HistoryPage{page(15, 15, false, item("b", 11), item("c", 12), item("d", 15), item("a", 13))}},
		},
		{
			name: "an event changed while the page was read may be left out",
			list: HistoryList{Pages: []HistoryPage{page(12, 15, false, item("c", 12))}},
		},
		{
			name: "events observed before since are not of the window",
			list: HistoryList{Since: t0.Add(2 * time.Second), Pages: []HistoryPage{page(15, 15, false, item("c", 12), item("d", 15))}},
		},
		{
			name: "selection",
			list: HistoryList{Sel: Selector{Field: "regarding.name=pod-1"}, Pages: []HistoryPage{page(15, 15, false, item("c", 12), item("a", 13))}},
		},
		{
			name: "etcd's revision after the page unknown: not checked for completeness",
			list: HistoryList{Pages: []HistoryPage{page(15, 0, false, item("a", 13))}},
		},
		{
			name: "a live event missing",
			list: HistoryList{Pages: []HistoryPage{page(15, 15, false, item("c", 12), item("a", 13))}},
			want: []string{KindHistory},
		},
		{
			name: "a live event missing between two pages",
			list: HistoryList{Pages: []HistoryPage{page(15, 15, true, item("c", 12)), page(15, 15, false, item("a", 13))}},
			want: []string{KindHistory},
		},
		{
			name: "a live event at an older state",
			list: HistoryList{Pages: []HistoryPage{page(15, 15, false, item("c", 12), item("d", 15), item("a", 10))}},
			want: []string{KindHistory},
		},
		{
			name: "out of order",
			list: HistoryList{Pages: []HistoryPage{page(15, 15, false, item("d", 15), item("c", 12), item("a", 13))}},
			want: []string{KindHistory},
		},
		{
			name: "out of order across pages",
			list: HistoryList{Pages: []HistoryPage{page(15, 15, true, item("c", 12), item("d", 15)), page(15, 15, false, item("c", 12), item("a", 13))}},
			want: []string{KindHistory},
		},
		{
			name: "a state etcd never stored",
			list: HistoryList{Pages: []HistoryPage{page(15, 15, false, item("c", 13), item("d", 15), item("a", 13))}},
			want: []string{KindHistory},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckHistory(h, tc.list)
			if diff := cmp.Diff(tc.want, kinds(got)); diff != "" {
				t.Errorf("violations (-want +got):\n%s\n%v", diff, got)
			}
		})
	}
}
