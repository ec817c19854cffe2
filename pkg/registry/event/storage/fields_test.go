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

package storage

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
	"github.com/kube-events/events-apiserver/pkg/storedevent"
)

// The packed set GetAttrs gives the watch cache selects exactly as the
// plain set of storedevent.SelectableFields: every label, = and !=, on the
// value the event has, on "" and on another value.
func TestPackedFieldsSelectAsThePlainSet(t *testing.T) {
	long := strings.Repeat("x", 300) // a length that takes two uvarint bytes
	withOddValues := fullEvent()
	withOddValues.Reason = "with\x00nul"
	withOddValues.InvolvedObject.FieldPath = long
	withOddValues.Series = nil
	withoutRelated := fullEvent()
	withoutRelated.Related = nil
	stateless := fullEvent()
	stateless.Series.State = ""

	for _, tt := range []struct {
		name  string
		event *core.Event
	}{
		{name: "every field set", event: fullEvent()},
		{name: "no field set", event: &core.Event{}},
		{name: "no related object", event: withoutRelated},
		{name: "series without state", event: stateless},
		{name: "NUL, 300-byte value, no series", event: withOddValues},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plain := storedevent.SelectableFields(tt.event)
			_, packed, err := GetAttrs(tt.event)
			if err != nil {
				t.Fatal(err)
			}
			for _, label := range storedevent.SelectableLabels {
				if got, want := unpacked(packed).Get(label), plain.Get(label); got != want {
					t.Errorf("Get(%q) = %q, want %q", label, got, want)
				}
				if label == eventconversion.FieldAncestor {
					continue // no equality: see TestAncestorTerms
				}
				for _, value := range []string{plain.Get(label), "", "other", long} {
					for _, selector := range []fields.Selector{
						fields.OneTermEqualSelector(label, value),
						fields.OneTermNotEqualSelector(label, value),
						fields.AndSelectors(fields.OneTermEqualSelector(label, value), fields.OneTermNotEqualSelector("type", "Nope")),
					} {
						want := selector.Matches(plain)
						predicate := Matcher(labels.Everything(), selector)
						if got := predicate.MatchesObjectAttributes(nil, packed); got != want {
							t.Errorf("%s on the packed set: %v, on the plain set: %v", selector, got, want)
						}
						if got, err := predicate.Matches(tt.event); err != nil || got != want {
							t.Errorf("%s on the event: %v (%v), want %v", selector, got, err, want)
						}
						if got := predicate.MatchesObjectAttributes(nil, plain); got != want {
							t.Errorf("%s given a plain set: %v, want %v", selector, got, want)
						}
					}
				}
			}
		})
	}
}

// A selector transformed or copied by the generic machinery still reads
// packed sets.
func TestPackedSelectorSurvivesTransformAndCopy(t *testing.T) {
	event := fullEvent()
	_, packed, err := GetAttrs(event)
	if err != nil {
		t.Fatal(err)
	}
	selector := Matcher(labels.Everything(), fields.OneTermEqualSelector("involvedObject.name", "pod-a")).Field
	transformed, err := selector.Transform(func(label, value string) (string, string, error) { return label, value, nil })
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]fields.Selector{"transformed": transformed, "copied": selector.DeepCopySelector()} {
		if !s.Matches(packed) {
			t.Errorf("%s selector %s does not match the packed set of an event it selects", name, s)
		}
		if value, ok := s.RequiresExactMatch("involvedObject.name"); !ok || value != "pod-a" {
			t.Errorf("%s selector RequiresExactMatch = %q, %v; the watch cache's index and trigger need pod-a, true", name, value, ok)
		}
	}
}

// The packed set holds the name, namespace and other mostly unique values
// as entries of their own, sharing the event's strings, and the rest
// packed: no more entries than one map group holds, but for events with
// both a related object and ancestors (the chain of a Pod's owners; the
// kubelet's events about a Pod have no related object).
func TestGetAttrsPacksTheRepeatingValues(t *testing.T) {
	if n := len(directLabels) + 1 - 1; n > maxPackedSetEntries {
		t.Fatalf("a packed set without ancestors has up to %d entries, more than the %d of one map group", n, maxPackedSetEntries)
	}
	if n := len(directLabels) + 1 - 2; n > maxPackedSetEntries {
		t.Fatalf("a packed set without a related object has up to %d entries, more than the %d of one map group", n, maxPackedSetEntries)
	}
	event := fullEvent()
	_, packed, err := GetAttrs(event)
	if err != nil {
		t.Fatal(err)
	}
	want := fields.Set{
		"metadata.name": event.Name, "metadata.namespace": event.Namespace,
		"involvedObject.name": "pod-a", "involvedObject.uid": "uid-a", "involvedObject.resourceVersion": "7",
		"related.name": "node-1", "related.uid": "uid-n",
		"involvedObject.ancestor": event.Annotations[ownerchain.Annotation],
		packedKey:                 packed[packedKey],
	}
	if diff := cmp.Diff(want, packed); diff != "" {
		t.Errorf("packed set (-want +got):\n%s", diff)
	}
	if strings.Contains(packed[packedKey], "pod-a") || strings.Contains(packed[packedKey], "uid-n") {
		t.Errorf("packed values %q repeat a value the set holds as an entry", packed[packedKey])
	}
}

// The watch cache's field sets share one copy of the packed values of
// events that differ only in the values held as entries of their own.
func TestAttrFuncSharesPackedValues(t *testing.T) {
	attrFunc := newAttrFunc(newStringTable())
	first, second := fullEvent(), fullEvent()
	second.Name, second.InvolvedObject.Name, second.InvolvedObject.UID = "pod-b.1", "pod-b", "uid-b"
	_, a, err := attrFunc(first)
	if err != nil {
		t.Fatal(err)
	}
	_, b, err := attrFunc(second)
	if err != nil {
		t.Fatal(err)
	}
	if !sameMemory(a[packedKey], b[packedKey]) {
		t.Errorf("packed values %q and %q are two copies, want one shared", a[packedKey], b[packedKey])
	}
	if got := unpacked(b).Get("involvedObject.name"); got != "pod-b" {
		t.Errorf("involvedObject.name of the second event = %q, want pod-b", got)
	}
}

// BenchmarkAttrFunc reports what the watch cache allocates for the field
// set of each event it caches (B/op), packed values shared.
func BenchmarkAttrFunc(b *testing.B) {
	attrFunc := newAttrFunc(newStringTable())
	events := make([]*core.Event, 1000)
	for i := range events {
		e := fullEvent()
		e.Name = fmt.Sprintf("pod-%d.17a2b3c4d5e6f7%03d", i, i)
		e.InvolvedObject.Name = fmt.Sprintf("pod-%d", i)
		e.InvolvedObject.UID = types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
		events[i] = e
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, _, err := attrFunc(events[i%len(events)]); err != nil {
			b.Fatal(err)
		}
	}
}

// storedevent.FieldStatelessSeries selects the series stored without a
// state, and neither singletons nor series with a state; its index holds
// the same events under "true" and no other event at all.
func TestStatelessSeriesField(t *testing.T) {
	withState := fullEvent()
	stateless := fullEvent()
	stateless.Series.State = ""
	singleton := fullEvent()
	singleton.Series = nil
	predicate := Matcher(labels.Everything(), fields.OneTermEqualSelector(storedevent.FieldStatelessSeries, "true"))
	index := (*Indexers())[storage.FieldIndex(storedevent.FieldStatelessSeries)]
	for _, tt := range []struct {
		name  string
		event *core.Event
		want  bool
	}{
		{"series without state", stateless, true},
		{"series with a state", withState, false},
		{"singleton", singleton, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := predicate.Matches(tt.event)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
			var wantIndexed []string
			if tt.want {
				wantIndexed = []string{"true"}
			}
			indexed, err := index(tt.event)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantIndexed, indexed); diff != "" {
				t.Errorf("indexed under (-want +got):\n%s", diff)
			}
		})
	}
}

// The series state index holds each series under its stored state, the
// value series.state selects it by, and events without a state under no
// value: an indexed list of a state reads the same events as a full scan.
func TestSeriesStateIndex(t *testing.T) {
	ongoing := fullEvent()
	ongoing.Series.State = core.EventSeriesStateOngoing
	finished := fullEvent()
	finished.Series.State = core.EventSeriesStateFinished
	stateless := fullEvent()
	stateless.Series.State = ""
	singleton := fullEvent()
	singleton.Series = nil
	index := (*Indexers())[storage.FieldIndex(IndexSeriesState)]
	for _, tt := range []struct {
		name  string
		event *core.Event
		want  []string
	}{
		{"Ongoing", ongoing, []string{"Ongoing"}},
		{"Finished", finished, []string{"Finished"}},
		{"series without state", stateless, nil},
		{"singleton", singleton, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			indexed, err := index(tt.event)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, indexed); diff != "" {
				t.Errorf("indexed under (-want +got):\n%s", diff)
			}
			for _, state := range []string{"Ongoing", "Finished"} {
				predicate := Matcher(labels.Everything(), fields.OneTermEqualSelector(IndexSeriesState, state))
				selected, err := predicate.Matches(tt.event)
				if err != nil {
					t.Fatal(err)
				}
				if indexedUnder := slices.Contains(indexed, state); selected != indexedUnder {
					t.Errorf("series.state=%s selects it: %v, indexed under %s: %v", state, selected, state, indexedUnder)
				}
			}
		})
	}
}

// An ancestor term selects the events whose regarding object is the object
// it names, by Kind/name or UID, or has it in its chain of ancestors; on
// packed and plain sets and objects alike, ANDed with the other terms.
func TestAncestorTerms(t *testing.T) {
	withChain := fullEvent()
	withChain.Annotations = map[string]string{ownerchain.Annotation: ownerchain.Encode([]ownerchain.Ancestor{
		{Kind: "ReplicaSet", Name: "web-7d4f9", UID: "uid-rs"},
		{Kind: "Deployment", Name: "web", UID: "uid-deploy"},
	})}
	withoutChain := fullEvent()
	for _, tc := range []struct {
		name     string
		selector string
		// with and without: whether it selects the event with a chain and
		// the one without.
		with, without bool
	}{
		{"the object itself", "involvedObject.ancestor=Pod/pod-a", true, true},
		{"the object itself by UID", "involvedObject.ancestor=uid-a", true, true},
		{"its ReplicaSet", "involvedObject.ancestor=ReplicaSet/web-7d4f9", true, false},
		{"its Deployment", "involvedObject.ancestor=Deployment/web", true, false},
		{"its Deployment by UID", "involvedObject.ancestor=uid-deploy", true, false},
		{"==", "involvedObject.ancestor==Deployment/web", true, false},
		{"another Deployment", "involvedObject.ancestor=Deployment/api", false, false},
		{"a name's prefix", "involvedObject.ancestor=Deployment/we", false, false},
		{"not of the Deployment", "involvedObject.ancestor!=Deployment/web", false, true},
		{"not of another", "involvedObject.ancestor!=Deployment/api", true, true},
		{"and a reason it has", "involvedObject.ancestor=Deployment/web,reason=Started", true, false},
		{"and a reason it lacks", "involvedObject.ancestor=Deployment/web,reason=BackOff", false, false},
		{"two ancestors", "involvedObject.ancestor=Deployment/web,involvedObject.ancestor=uid-rs", true, false},
		{"an ancestor and not another", "involvedObject.ancestor=Deployment/web,involvedObject.ancestor!=Deployment/api", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			selector, err := fields.ParseSelector(tc.selector)
			if err != nil {
				t.Fatal(err)
			}
			predicate := Matcher(labels.Everything(), selector)
			for _, c := range []struct {
				event *core.Event
				want  bool
			}{{withChain, tc.with}, {withoutChain, tc.without}} {
				_, packed, err := GetAttrs(c.event)
				if err != nil {
					t.Fatal(err)
				}
				if got := predicate.MatchesObjectAttributes(nil, packed); got != c.want {
					t.Errorf("on the packed set of %v: %v, want %v", c.event.Annotations, got, c.want)
				}
				if got := predicate.MatchesObjectAttributes(nil, storedevent.SelectableFields(c.event)); got != c.want {
					t.Errorf("on the plain set of %v: %v, want %v", c.event.Annotations, got, c.want)
				}
				if got, err := predicate.Matches(c.event); err != nil || got != c.want {
					t.Errorf("on %v: %v (%v), want %v", c.event.Annotations, got, err, c.want)
				}
			}
		})
	}
}
