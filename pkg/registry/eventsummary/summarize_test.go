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
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/summaries"
	"github.com/kube-events/events-apiserver/pkg/archive"
)

var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// at is base plus s seconds.
func at(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }

// backOff is a kubelet BackOff Warning about pod, observed at first.
func backOff(name, pod string, first int) core.Event {
	return core.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: "shop", Name: name},
		InvolvedObject:      core.ObjectReference{Kind: "Pod", Namespace: "shop", Name: pod},
		Type:                core.EventTypeWarning,
		Reason:              "BackOff",
		ReportingController: "kubelet",
		EventTime:           metav1.NewMicroTime(at(first)),
	}
}

// TestSummarizer checks how events are counted: one summary per
// namespace, type, reason, regarding kind and reporting controller, each
// event's occurrences (series, count, at least 1), distinct objects, the
// earliest first and the latest last observation, most occurrences first.
func TestSummarizer(t *testing.T) {
	series := backOff("web-0.a", "web-0", 10)
	series.Series = &core.EventSeries{Count: 5, LastObservedTime: metav1.NewMicroTime(at(100))}
	counted := backOff("web-1.a", "web-1", 5)
	counted.Count, counted.LastTimestamp = 3, metav1.NewTime(at(50))
	singleton := backOff("web-0.b", "web-0", 20)
	legacy := core.Event{ // core/v1: source.component, first and last timestamps
		ObjectMeta:     metav1.ObjectMeta{Namespace: "shop", Name: "web.scaled"},
		InvolvedObject: core.ObjectReference{Kind: "Deployment", Namespace: "shop", Name: "web"},
		Type:           core.EventTypeNormal, Reason: "ScalingReplicaSet",
		Source:         core.EventSource{Component: "deployment-controller"},
		FirstTimestamp: metav1.NewTime(at(1)), LastTimestamp: metav1.NewTime(at(2)), Count: 2,
	}
	otherNamespace := backOff("web-0.c", "web-0", 30)
	otherNamespace.Namespace, otherNamespace.InvolvedObject.Namespace = "bank", "bank"

	summary := func(namespace, typ, reason, kind, controller string, occurrences, events, objects int64, first, last time.Time) summaries.EventSummary {
		k := key{namespace: namespace, eventType: typ, reason: reason, regardingKind: kind, reportingController: controller}
		return summaries.EventSummary{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: nameOf(k)},
			Type:       typ, Reason: reason, RegardingKind: kind, ReportingController: controller,
			Occurrences: occurrences, Events: events, Objects: objects,
			FirstObserved: metav1.NewMicroTime(first), LastObserved: metav1.NewMicroTime(last),
		}
	}
	tests := []struct {
		name   string
		events []core.Event
		want   []summaries.EventSummary
	}{
		{name: "nothing", want: []summaries.EventSummary{}},
		{
			name:   "a series counts its occurrences",
			events: []core.Event{series},
			want:   []summaries.EventSummary{summary("shop", "Warning", "BackOff", "Pod", "kubelet", 5, 1, 1, at(10), at(100))},
		},
		{
			name:   "series, count and singleton add up; objects are distinct",
			events: []core.Event{series, counted, singleton},
			want:   []summaries.EventSummary{summary("shop", "Warning", "BackOff", "Pod", "kubelet", 9, 3, 2, at(5), at(100))},
		},
		{
			name:   "most occurrences first; a legacy event's controller is its source",
			events: []core.Event{legacy, singleton, counted},
			want: []summaries.EventSummary{
				summary("shop", "Warning", "BackOff", "Pod", "kubelet", 4, 2, 2, at(5), at(50)),
				summary("shop", "Normal", "ScalingReplicaSet", "Deployment", "deployment-controller", 2, 1, 1, at(1), at(2)),
			},
		},
		{
			name:   "namespaces are counted apart, ties by namespace",
			events: []core.Event{singleton, otherNamespace},
			want: []summaries.EventSummary{
				summary("bank", "Warning", "BackOff", "Pod", "kubelet", 1, 1, 1, at(30), at(30)),
				summary("shop", "Warning", "BackOff", "Pod", "kubelet", 1, 1, 1, at(20), at(20)),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSummarizer()
			for i := range tt.events {
				s.Add(&tt.events[i])
			}
			if diff := cmp.Diff(tt.want, s.Summaries()); diff != "" {
				t.Errorf("Summaries (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSummarizerArchived checks how the archive's rows merge with the live
// events: occurrences and events add up, first and last observations are
// the earliest and latest of both, and an object the live events and the
// archived ones both regard (a Known object of the row) counts once.
func TestSummarizerArchived(t *testing.T) {
	live := backOff("web-0.live", "web-0", 100)
	live.Count = 2
	liveOther := backOff("web-5.live", "web-5", 110)
	liveOther.Reason = "Other"
	row := func(objects int64, known ...string) archive.SummaryRow {
		r := archive.SummaryRow{
			Namespace: "shop", Type: "Warning", Reason: "BackOff", RegardingKind: "Pod", ReportingController: "kubelet",
			Events: 3, Occurrences: 7, Objects: objects, FirstObserved: at(1), LastObserved: at(50),
		}
		for _, pod := range known {
			r.Known = append(r.Known, archive.Object{Namespace: "shop", Name: pod})
		}
		return r
	}
	tests := []struct {
		name        string
		events      []core.Event
		rows        []archive.SummaryRow
		wantObjects int64
		wantFirst   time.Time
		wantLast    time.Time
		wantOcc     int64
		wantEvents  int64
	}{
		{name: "archive alone", rows: []archive.SummaryRow{row(2)}, wantObjects: 2, wantFirst: at(1), wantLast: at(50), wantOcc: 7, wantEvents: 3},
		{name: "distinct objects add up", events: []core.Event{live}, rows: []archive.SummaryRow{row(2)},
			wantObjects: 3, wantFirst: at(1), wantLast: at(100), wantOcc: 9, wantEvents: 4},
		{name: "an object both regard counts once", events: []core.Event{live}, rows: []archive.SummaryRow{row(2, "web-0")},
			wantObjects: 2, wantFirst: at(1), wantLast: at(100), wantOcc: 9, wantEvents: 4},
		{name: "an object live in another summary counts here", events: []core.Event{live, liveOther}, rows: []archive.SummaryRow{row(2, "web-5")},
			wantObjects: 3, wantFirst: at(1), wantLast: at(100), wantOcc: 9, wantEvents: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSummarizer()
			for i := range tt.rows {
				s.AddArchived(&tt.rows[i])
			}
			for i := range tt.events {
				s.Add(&tt.events[i])
			}
			var got *summaries.EventSummary
			all := s.Summaries()
			for i := range all {
				if all[i].Reason == "BackOff" {
					got = &all[i]
				}
			}
			if got == nil {
				t.Fatalf("no BackOff summary in %+v", all)
			}
			type counts struct {
				Objects, Occurrences, Events int64
				First, Last                  time.Time
			}
			want := counts{tt.wantObjects, tt.wantOcc, tt.wantEvents, tt.wantFirst, tt.wantLast}
			if diff := cmp.Diff(want, counts{got.Objects, got.Occurrences, got.Events, got.FirstObserved.Time, got.LastObserved.Time}); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNameOf checks that a summary's name is a valid, readable name that
// tells apart summaries differing in any part of their key.
func TestNameOf(t *testing.T) {
	tests := []struct {
		name string
		key  key
		want string
	}{
		{name: "readable type and reason", key: key{eventType: "Warning", reason: "BackOff", regardingKind: "Pod", reportingController: "kubelet"}, want: "warning.backoff."},
		{name: "no type or reason", key: key{}, want: "none.none."},
		{name: "characters a label cannot hold", key: key{eventType: "Normal", reason: "Scale_Up!"}, want: "normal.scale-up."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := nameOf(tt.key)
			if diff := cmp.Diff(tt.want, got[:len(got)-8]); diff != "" {
				t.Errorf("nameOf(%+v) = %q (-want +got prefix):\n%s", tt.key, got, diff)
			}
		})
	}
	a := nameOf(key{eventType: "Warning", reason: "BackOff", regardingKind: "Pod", reportingController: "kubelet"})
	b := nameOf(key{eventType: "Warning", reason: "BackOff", regardingKind: "Pod", reportingController: "kubelet-2"})
	if a == b {
		t.Errorf("two keys share the name %q", a)
	}
}

// pagedEvents is a rest.Lister of events that answers in pages of at most
// pageSize, as the events storage does, and records the options it got.
type pagedEvents struct {
	events   []core.Event
	pageSize int
	asked    []metainternalversion.ListOptions
	err      error
}

func (p *pagedEvents) NewList() runtime.Object { return &core.EventList{} }

func (p *pagedEvents) List(_ context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	p.asked = append(p.asked, *options)
	if p.err != nil {
		return nil, p.err
	}
	start := 0
	if options.Continue != "" {
		start, _ = strconv.Atoi(options.Continue)
	}
	end := min(start+p.pageSize, len(p.events))
	list := &core.EventList{Items: p.events[start:end]}
	list.ResourceVersion = "42"
	if end < len(p.events) {
		list.Continue = strconv.Itoa(end)
	}
	return list, nil
}

func (p *pagedEvents) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, nil
}

// TestListPages checks that a list counts every page of events, answers
// its own pages with limit and continue, the next pages counting with the
// first page's window in absolute times, refuses a token of another list,
// and passes the events storage's errors on.
func TestListPages(t *testing.T) {
	var events []core.Event
	for i, pod := range []string{"a", "b", "b", "c", "c", "c"} {
		e := backOff("e"+strconv.Itoa(i), pod, i)
		e.Reason = "Reason-" + pod
		events = append(events, e)
	}
	lister := &pagedEvents{events: events, pageSize: 2}
	r := NewREST(lister, allowAll, testTokens)
	r.clock = clocktesting.NewFakePassiveClock(base)
	ctx := userContext("events-reader", "shop")
	selector := fields.ParseSelectorOrDie("type=Warning,history.since=1h")

	first, err := r.List(ctx, &metainternalversion.ListOptions{FieldSelector: selector, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	page := first.(*summaries.EventSummaryList)
	if diff := cmp.Diff([]string{"Reason-c", "Reason-b"}, reasons(page)); diff != "" {
		t.Errorf("first page (-want +got):\n%s", diff)
	}
	if page.RemainingItemCount == nil || *page.RemainingItemCount != 1 || page.Continue == "" {
		t.Errorf("first page: remaining %v, continue %q; want 1 and a token", page.RemainingItemCount, page.Continue)
	}
	if got, want := len(lister.asked), 3; got != want {
		t.Errorf("the first page read %d pages of events, want %d", got, want)
	}
	wantWindow := "type=Warning,history.since=2026-03-01T11:00:00Z,history.until=2026-03-01T12:00:00Z"
	for _, options := range lister.asked {
		if diff := cmp.Diff(normalized(wantWindow), normalized(options.FieldSelector.String())); diff != "" {
			t.Errorf("events listed with (-want +got):\n%s", diff)
		}
	}

	r.clock = clocktesting.NewFakePassiveClock(base.Add(time.Hour)) // later: the window stays
	lister.asked = nil
	second, err := r.List(ctx, &metainternalversion.ListOptions{FieldSelector: selector, Limit: 2, Continue: page.Continue})
	if err != nil {
		t.Fatal(err)
	}
	page = second.(*summaries.EventSummaryList)
	if diff := cmp.Diff([]string{"Reason-a"}, reasons(page)); diff != "" {
		t.Errorf("second page (-want +got):\n%s", diff)
	}
	if page.Continue != "" || page.RemainingItemCount != nil {
		t.Errorf("last page: continue %q, remaining %v; want neither", page.Continue, page.RemainingItemCount)
	}
	if diff := cmp.Diff(normalized(wantWindow), normalized(lister.asked[0].FieldSelector.String())); diff != "" {
		t.Errorf("the next page's events listed with (-want +got):\n%s", diff)
	}

	otherSelector := fields.ParseSelectorOrDie("type=Normal,history.since=1h")
	if _, err := r.List(ctx, &metainternalversion.ListOptions{FieldSelector: otherSelector, Continue: first.(*summaries.EventSummaryList).Continue}); !apierrors.IsBadRequest(err) {
		t.Errorf("a token of another list: %v, want 400", err)
	}
	if _, err := r.List(ctx, &metainternalversion.ListOptions{FieldSelector: selector, Continue: "garbage"}); !apierrors.IsBadRequest(err) {
		t.Errorf("a garbage token: %v, want 400", err)
	}
	if _, err := r.List(ctx, &metainternalversion.ListOptions{FieldSelector: fields.ParseSelectorOrDie("history.since=soon")}); !apierrors.IsBadRequest(err) {
		t.Errorf("a bad history term: %v, want 400", err)
	}

	lister.err = apierrors.NewServiceUnavailable("the event history is unavailable")
	if _, err := r.List(ctx, &metainternalversion.ListOptions{FieldSelector: selector}); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("with the events storage failing: %v, want its 503", err)
	}
}

func reasons(list *summaries.EventSummaryList) []string {
	var out []string
	for _, s := range list.Items {
		out = append(out, s.Reason)
	}
	return out
}

// normalized is a field selector with its terms in order.
func normalized(selector string) string {
	return fields.ParseSelectorOrDie(selector).String()
}
