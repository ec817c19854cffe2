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

package eventtree

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-events/events-apiserver/pkg/ownerchain"
)

// outline writes a tree one node a line, indented by depth, with its
// UID, liveness and number of events.
func outline(t *Tree) string {
	var b strings.Builder
	var walk func(n *Node, depth int)
	walk = func(n *Node, depth int) {
		state := map[Liveness]string{LivenessUnknown: "", Live: " live", Deleted: " deleted"}[n.Liveness]
		fmt.Fprintf(&b, "%s%s uid=%s events=%d%s\n", strings.Repeat("  ", depth), n.Ref, n.UID, len(n.Occurrences), state)
		for _, c := range n.Children {
			walk(c, depth+1)
		}
	}
	walk(t.Root, 0)
	return b.String()
}

func TestBuild(t *testing.T) {
	deploymentChain := []ownerchain.Ancestor{deployment}
	oldChain := []ownerchain.Ancestor{oldRS, deployment}
	for _, tc := range []struct {
		name        string
		root        ObjectRef
		events      []fixtureEvent
		annotation  string // replaces the first event's chain when set
		want        string
		undecodable int
	}{{
		name: "a pod under its ReplicaSet under the Deployment, from the pod's chain alone",
		root: ObjectRef{Kind: "Deployment", Name: "web"},
		events: []fixtureEvent{
			{object: podA, ancestors: oldChain, reason: "Scheduled", at: ago(time.Hour)},
		},
		want: `Deployment/web uid=uid-deploy events=0
  ReplicaSet/web-5d8f7 uid=uid-rs-old events=0
    Pod/web-5d8f7-aaaaa uid=uid-pod-a events=1
`,
	}, {
		name: "the root's own events, and its ancestors left out",
		root: ObjectRef{Kind: "ReplicaSet", Name: "web-5d8f7"},
		events: []fixtureEvent{
			{object: oldRS, ancestors: deploymentChain, reason: "SuccessfulCreate", at: ago(time.Hour)},
			{object: podA, ancestors: oldChain, reason: "Scheduled", at: ago(time.Hour)},
		},
		want: `ReplicaSet/web-5d8f7 uid=uid-rs-old events=1
  Pod/web-5d8f7-aaaaa uid=uid-pod-a events=1
`,
	}, {
		name: "an event without a chain (standalone server) hangs under the root",
		root: ObjectRef{Kind: "Deployment", Name: "web"},
		events: []fixtureEvent{
			{object: podA, reason: "Scheduled", at: ago(time.Hour)},
		},
		want: `Deployment/web uid= events=0
  Pod/web-5d8f7-aaaaa uid=uid-pod-a events=1
`,
	}, {
		name: "an object first seen without a parent moves under the parent a later event names",
		root: ObjectRef{Kind: "Deployment", Name: "web"},
		events: []fixtureEvent{
			{object: podA, reason: "Scheduled", at: ago(2 * time.Hour)},
			{object: podA, ancestors: oldChain, reason: "Started", at: ago(time.Hour)},
		},
		want: `Deployment/web uid=uid-deploy events=0
  ReplicaSet/web-5d8f7 uid=uid-rs-old events=0
    Pod/web-5d8f7-aaaaa uid=uid-pod-a events=2
`,
	}, {
		name: "an unreadable chain is counted and its object drawn under the root",
		root: ObjectRef{Kind: "Deployment", Name: "web"},
		events: []fixtureEvent{
			{object: podA, ancestors: oldChain, reason: "Scheduled", at: ago(time.Hour)},
		},
		annotation: `["ReplicaSet/web-5d8f7"]`,
		want: `Deployment/web uid= events=0
  Pod/web-5d8f7-aaaaa uid=uid-pod-a events=1
`,
		undecodable: 1,
	}, {
		name: "children by their earliest event: the old ReplicaSet first",
		root: ObjectRef{Kind: "Deployment", Name: "web"},
		events: []fixtureEvent{
			{object: newRS, ancestors: deploymentChain, reason: "SuccessfulCreate", at: ago(time.Hour)},
			{object: oldRS, ancestors: deploymentChain, reason: "SuccessfulCreate", at: ago(2 * time.Hour)},
		},
		want: `Deployment/web uid=uid-deploy events=0
  ReplicaSet/web-5d8f7 uid=uid-rs-old events=1
  ReplicaSet/web-7c9b4 uid=uid-rs-new events=1
`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			events := make([]eventsv1.Event, len(tc.events))
			for i, f := range tc.events {
				events[i] = f.event(i)
			}
			if tc.annotation != "" {
				events[0].Annotations[ownerchain.Annotation] = tc.annotation
			}
			tree := Build(tc.root, events)
			if diff := cmp.Diff(tc.want, outline(tree)); diff != "" {
				t.Errorf("tree (-want +got):\n%s", diff)
			}
			if tree.Undecodable != tc.undecodable {
				t.Errorf("Undecodable = %d, want %d", tree.Undecodable, tc.undecodable)
			}
		})
	}
}

func TestMergeLive(t *testing.T) {
	tree := Build(ObjectRef{Kind: "Deployment", Name: "web"}, rolloutEvents())
	kinds, objects := liveRollout()
	// A pod of the same name as a deleted one, recreated: another UID.
	objects = append(objects, LiveObject{Ref: ObjectRef{Kind: "Pod", Name: podB.Name}, UID: "uid-pod-b-again",
		Owner: ObjectRef{Kind: "ReplicaSet", Name: oldRS.Name}, OwnerUID: oldRS.UID})
	tree.MergeLive(kinds, objects)
	tree.Sort()
	want := `Deployment/web uid=uid-deploy events=4 live
  ReplicaSet/web-5d8f7 uid=uid-rs-old events=3 live
    Pod/web-5d8f7-aaaaa uid=uid-pod-a events=4 deleted
    Pod/web-5d8f7-bbbbb uid=uid-pod-b events=3 deleted
    Pod/web-5d8f7-ccccc uid=uid-pod-c events=3 deleted
  ReplicaSet/web-7c9b4 uid=uid-rs-new events=1 live
    Pod/web-7c9b4-ddddd uid=uid-pod-d events=2 live
    Pod/web-7c9b4-eeeee uid=uid-pod-e events=3 live
    Pod/web-7c9b4-fffff uid=uid-pod-f events=0 live
`
	if diff := cmp.Diff(want, outline(tree)); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
}

func TestOccurrenceOf(t *testing.T) {
	at := metav1.NewMicroTime(ago(time.Hour))
	later := metav1.NewMicroTime(ago(time.Minute))
	for _, tc := range []struct {
		name  string
		event eventsv1.Event
		want  Occurrence
	}{{
		name:  "a single event at its eventTime",
		event: eventsv1.Event{EventTime: at, Type: "Normal", Reason: "Pulled"},
		want:  Occurrence{Type: "Normal", Reason: "Pulled", First: at.Time, Last: at.Time, Count: 1},
	}, {
		name:  "a series from eventTime to lastObservedTime",
		event: eventsv1.Event{EventTime: at, Type: "Warning", Reason: "BackOff", Series: &eventsv1.EventSeries{Count: 7, LastObservedTime: later}},
		want:  Occurrence{Type: "Warning", Reason: "BackOff", First: at.Time, Last: later.Time, Count: 7},
	}, {
		name: "a deduplicated core/v1 event: the deprecated timestamps and count",
		event: eventsv1.Event{Reason: "Unhealthy", DeprecatedCount: 5,
			DeprecatedFirstTimestamp: metav1.NewTime(at.Time), DeprecatedLastTimestamp: metav1.NewTime(later.Time)},
		want: Occurrence{Reason: "Unhealthy", First: at.Time, Last: later.Time, Count: 5},
	}, {
		name: "both counts: the greater",
		event: eventsv1.Event{EventTime: at, DeprecatedCount: 9,
			Series: &eventsv1.EventSeries{Count: 4, LastObservedTime: later}},
		want: Occurrence{First: at.Time, Last: later.Time, Count: 9},
	}, {
		name:  "no time but the creation's",
		event: eventsv1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(at.Time)}},
		want:  Occurrence{First: at.Time, Last: at.Time, Count: 1},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, OccurrenceOf(&tc.event)); diff != "" {
				t.Errorf("OccurrenceOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShortDuration(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{7 * day, "7d"},
		{5*day + 6*time.Hour + 30*time.Minute, "5d6h"},
		{day + 30*time.Minute, "1d"},
		{100 * time.Minute, "1h40m"},
		{45 * time.Second, "45s"},
		{time.Millisecond, "<1s"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := shortDuration(tc.in); got != tc.want {
				t.Errorf("shortDuration(%v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
