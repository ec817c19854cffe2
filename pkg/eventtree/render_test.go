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
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-events/events-apiserver/pkg/ownerchain"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the output")

// fixtureNow is the "now" of every fixture: times are relative to it, so
// the drawings do not depend on when the tests run.
var fixtureNow = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return fixtureNow.Add(-d) }

const day = 24 * time.Hour

// fixtureEvent is an event about object, with ancestors (nearest first)
// in the ancestry annotation.
type fixtureEvent struct {
	object    ownerchain.Ancestor
	ancestors []ownerchain.Ancestor
	typ       string
	reason    string
	at        time.Time
	// seriesCount and seriesLast make a series; dedupCount and dedupLast a
	// deduplicated event (deprecatedCount, deprecatedLastTimestamp).
	seriesCount int32
	seriesLast  time.Time
	dedupCount  int32
	dedupLast   time.Time
}

func (f fixtureEvent) event(i int) eventsv1.Event {
	typ := f.typ
	if typ == "" {
		typ = "Normal"
	}
	e := eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      f.object.Name + "." + string(rune('a'+i%26)),
			Namespace: "shop",
		},
		EventTime: metav1.NewMicroTime(f.at),
		Regarding: corev1Ref(f.object),
		Reason:    f.reason,
		Type:      typ,
		Note:      f.reason + " " + f.object.Name,
	}
	if chain := ownerchain.Encode(f.ancestors); chain != "" {
		e.Annotations = map[string]string{ownerchain.Annotation: chain}
	}
	if f.seriesCount > 0 {
		e.Series = &eventsv1.EventSeries{Count: f.seriesCount, LastObservedTime: metav1.NewMicroTime(f.seriesLast)}
	}
	if f.dedupCount > 0 {
		e.EventTime = metav1.MicroTime{}
		e.DeprecatedCount = f.dedupCount
		e.DeprecatedFirstTimestamp = metav1.NewTime(f.at)
		e.DeprecatedLastTimestamp = metav1.NewTime(f.dedupLast)
	}
	return e
}

func object(kind, name, uid string) ownerchain.Ancestor {
	return ownerchain.Ancestor{Kind: kind, Name: name, UID: types.UID(uid)}
}

var (
	deployment = object("Deployment", "web", "uid-deploy")
	oldRS      = object("ReplicaSet", "web-5d8f7", "uid-rs-old")
	newRS      = object("ReplicaSet", "web-7c9b4", "uid-rs-new")
	podA       = object("Pod", "web-5d8f7-aaaaa", "uid-pod-a")
	podB       = object("Pod", "web-5d8f7-bbbbb", "uid-pod-b")
	podC       = object("Pod", "web-5d8f7-ccccc", "uid-pod-c")
	podD       = object("Pod", "web-7c9b4-ddddd", "uid-pod-d")
	podE       = object("Pod", "web-7c9b4-eeeee", "uid-pod-e")
)

// rolloutEvents is a week of a Deployment: its first ReplicaSet's pods
// crash-loop and one is replaced, then a rollout to a second ReplicaSet
// scales the first down and deletes its pods.
func rolloutEvents() []eventsv1.Event {
	oldChain := []ownerchain.Ancestor{oldRS, deployment}
	newChain := []ownerchain.Ancestor{newRS, deployment}
	deploymentChain := []ownerchain.Ancestor{deployment}
	fixtures := []fixtureEvent{
		{object: deployment, reason: "ScalingReplicaSet", at: ago(6 * day)},
		{object: oldRS, ancestors: deploymentChain, reason: "SuccessfulCreate", at: ago(6 * day), dedupCount: 2, dedupLast: ago(6*day - time.Minute)},
		{object: podA, ancestors: oldChain, reason: "Scheduled", at: ago(6 * day)},
		{object: podA, ancestors: oldChain, reason: "Pulled", at: ago(6*day - time.Minute)},
		{object: podA, ancestors: oldChain, reason: "Started", at: ago(6*day - time.Minute)},
		{object: podA, ancestors: oldChain, typ: "Warning", reason: "BackOff", at: ago(6*day - 2*time.Minute), seriesCount: 42, seriesLast: ago(4 * day)},
		{object: podB, ancestors: oldChain, reason: "Scheduled", at: ago(6 * day)},
		{object: podB, ancestors: oldChain, reason: "Started", at: ago(6*day - time.Minute)},
		{object: podB, ancestors: oldChain, reason: "Killing", at: ago(2 * day)},
		{object: oldRS, ancestors: deploymentChain, reason: "SuccessfulCreate", at: ago(4 * day)},
		{object: podC, ancestors: oldChain, reason: "Scheduled", at: ago(4 * day)},
		{object: podC, ancestors: oldChain, typ: "Warning", reason: "BackOff", at: ago(4*day - 5*time.Minute), seriesCount: 30, seriesLast: ago(2*day + time.Hour)},
		{object: podC, ancestors: oldChain, reason: "Killing", at: ago(2 * day)},
		{object: deployment, reason: "ScalingReplicaSet", at: ago(2*day + time.Hour)},
		{object: newRS, ancestors: deploymentChain, reason: "SuccessfulCreate", at: ago(2*day + time.Hour), dedupCount: 2, dedupLast: ago(2*day + 50*time.Minute)},
		{object: deployment, reason: "ScalingReplicaSet", at: ago(2 * day)},
		{object: oldRS, ancestors: deploymentChain, reason: "SuccessfulDelete", at: ago(2 * day), dedupCount: 2, dedupLast: ago(2 * day)},
		{object: podD, ancestors: newChain, reason: "Scheduled", at: ago(2*day + time.Hour)},
		{object: podD, ancestors: newChain, reason: "Started", at: ago(2*day + 59*time.Minute)},
		{object: podE, ancestors: newChain, reason: "Scheduled", at: ago(2*day + time.Hour)},
		{object: podE, ancestors: newChain, reason: "Started", at: ago(2*day + 59*time.Minute)},
		{object: podE, ancestors: newChain, typ: "Warning", reason: "Unhealthy", at: ago(day), dedupCount: 5, dedupLast: ago(20 * time.Hour)},
		// A series older than the window: only its last observations show.
		{object: deployment, typ: "Warning", reason: "ProgressDeadlineExceeded", at: ago(9 * day), seriesCount: 3, seriesLast: ago(5 * day)},
	}
	events := make([]eventsv1.Event, len(fixtures))
	for i, f := range fixtures {
		events[i] = f.event(i)
	}
	return events
}

func corev1Ref(a ownerchain.Ancestor) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: a.Kind, Name: a.Name, Namespace: "shop", UID: a.UID}
}

// liveRollout is the cluster after the rollout: both ReplicaSets (the old
// one scaled to zero), the new pods, one of which has no events yet.
func liveRollout() (map[string]bool, []LiveObject) {
	owned := func(o, owner ownerchain.Ancestor) LiveObject {
		return LiveObject{Ref: ObjectRef{Kind: o.Kind, Name: o.Name}, UID: o.UID, Owner: ObjectRef{Kind: owner.Kind, Name: owner.Name}, OwnerUID: owner.UID}
	}
	return map[string]bool{"Deployment": true, "ReplicaSet": true, "Pod": true}, []LiveObject{
		{Ref: ObjectRef{Kind: "Deployment", Name: "web"}, UID: deployment.UID},
		owned(oldRS, deployment),
		owned(newRS, deployment),
		owned(podD, newRS),
		owned(podE, newRS),
		owned(object("Pod", "web-7c9b4-fffff", "uid-pod-f"), newRS),
		owned(object("Pod", "other-1", "uid-other"), object("ReplicaSet", "other", "uid-other-rs")),
	}
}

func TestRenderGolden(t *testing.T) {
	root := ObjectRef{Kind: "Deployment", Name: "web"}
	for _, tc := range []struct {
		name  string
		width int
		since time.Duration
		live  bool
		color bool
		root  ObjectRef
	}{
		{name: "rollout-live", width: 110, since: 7 * day, live: true},
		{name: "rollout-events-only", width: 100, since: 7 * day},
		{name: "rollout-narrow", width: 60, since: 7 * day, live: true},
		{name: "rollout-color", width: 110, since: 7 * day, live: true, color: true},
		{name: "rollout-last-3d", width: 100, since: 3 * day, live: true},
		{name: "replicaset-root", width: 100, since: 7 * day, live: true, root: ObjectRef{Kind: "ReplicaSet", Name: "web-5d8f7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := root
			if tc.root != (ObjectRef{}) {
				r = tc.root
			}
			tree := Build(r, matching(r, rolloutEvents()))
			if tc.live {
				tree.MergeLive(liveRollout())
				tree.Sort()
			}
			var out strings.Builder
			err := Render(&out, tree, RenderOptions{Namespace: "shop", Start: ago(tc.since), End: fixtureNow, Width: tc.width, Color: tc.color})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", tc.name+".golden"), out.String())
		})
	}
}

// matching is what the server answers for regarding.ancestor=root.
func matching(root ObjectRef, events []eventsv1.Event) []eventsv1.Event {
	var out []eventsv1.Event
	for _, e := range events {
		if ownerchain.Matches(e.Regarding.Kind, e.Regarding.Name, string(e.Regarding.UID), e.Annotations[ownerchain.Annotation], root.String()) {
			out = append(out, e)
		}
	}
	return out
}

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}
