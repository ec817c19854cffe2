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

package core_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

// TestLastObserved checks the order in which an event's times stand for
// its last occurrence: series.lastObservedTime, lastTimestamp, eventTime,
// creationTimestamp, each only when set. An event with both eventTime and
// lastTimestamp is last observed at lastTimestamp: a core/v1 writer's last
// occurrence, where eventTime is the first.
func TestLastObserved(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	created, first, last, series := base, base.Add(time.Second), base.Add(2*time.Second), base.Add(3*time.Second)
	tests := []struct {
		name  string
		event core.Event
		want  time.Time
	}{
		{
			name: "series.lastObservedTime over every other time",
			event: core.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
				EventTime: metav1.NewMicroTime(first), LastTimestamp: metav1.NewTime(last),
				Series: &core.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(series)}},
			want: series,
		},
		{
			name: "lastTimestamp over eventTime",
			event: core.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
				EventTime: metav1.NewMicroTime(first), LastTimestamp: metav1.NewTime(last)},
			want: last,
		},
		{
			name: "a series without lastObservedTime: lastTimestamp",
			event: core.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
				EventTime: metav1.NewMicroTime(first), LastTimestamp: metav1.NewTime(last), Series: &core.EventSeries{Count: 2}},
			want: last,
		},
		{
			name: "eventTime alone",
			event: core.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
				EventTime: metav1.NewMicroTime(first)},
			want: first,
		},
		{
			name:  "no time of its own: creationTimestamp",
			event: core.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}},
			want:  created,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, core.LastObserved(&tt.event)); diff != "" {
				t.Errorf("LastObserved (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFirstObserved checks the order in which an event's times stand for
// its first occurrence: eventTime, firstTimestamp, creationTimestamp.
func TestFirstObserved(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	created, eventTime, first := base, base.Add(time.Second), base.Add(2*time.Second)
	tests := []struct {
		name  string
		event core.Event
		want  time.Time
	}{
		{
			name: "eventTime over firstTimestamp",
			event: core.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
				EventTime: metav1.NewMicroTime(eventTime), FirstTimestamp: metav1.NewTime(first)},
			want: eventTime,
		},
		{
			name: "firstTimestamp alone",
			event: core.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
				FirstTimestamp: metav1.NewTime(first)},
			want: first,
		},
		{
			name:  "no time of its own: creationTimestamp",
			event: core.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}},
			want:  created,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, core.FirstObserved(&tt.event)); diff != "" {
				t.Errorf("FirstObserved (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOccurrences checks how many occurrences an event stands for: the
// greater of its count and its series' count, at least 1.
func TestOccurrences(t *testing.T) {
	tests := []struct {
		name  string
		event core.Event
		want  int32
	}{
		{name: "singleton without a count", event: core.Event{}, want: 1},
		{name: "core/v1 count", event: core.Event{Count: 4}, want: 4},
		{name: "series without a count", event: core.Event{Series: &core.EventSeries{Count: 7}}, want: 7},
		{name: "series and the same count (folded)", event: core.Event{Count: 7, Series: &core.EventSeries{Count: 7}}, want: 7},
		{name: "count above the series' count", event: core.Event{Count: 9, Series: &core.EventSeries{Count: 7}}, want: 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, core.Occurrences(&tt.event)); diff != "" {
				t.Errorf("Occurrences (-want +got):\n%s", diff)
			}
		})
	}
}
