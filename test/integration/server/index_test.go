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

package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// indexTerm is one requirement of a field selector, on a canonical (core/v1)
// label; the events.k8s.io label is derived from it.
type indexTerm struct {
	label string
	op    string // "=" or "!="
	value string
}

// indexSelector is a field selector as a list of terms; no term selects all.
type indexSelector []indexTerm

// eventsLabels are the events.k8s.io spellings of canonical labels.
var eventsLabels = map[string]string{
	"involvedObject.name":         "regarding.name",
	"involvedObject.uid":          "regarding.uid",
	"involvedObject.ancestor":     "regarding.ancestor",
	"involvedObject.ancestor.uid": "regarding.ancestor.uid",
	"reportingComponent":          "reportingController",
}

// String is the selector in the given version's labels.
func (s indexSelector) String(version apiVersion) string {
	var terms []string
	for _, t := range s {
		label := t.label
		if !version.legacy {
			if l, ok := eventsLabels[label]; ok {
				label = l
			}
		}
		terms = append(terms, label+t.op+fields.EscapeValue(t.value))
	}
	return strings.Join(terms, ",")
}

// matches is the full scan: whether the selector selects e, computed here
// from the core/v1 object and not by the server.
func (s indexSelector) matches(e *corev1.Event) bool {
	related := ""
	if e.Related != nil {
		related = e.Related.Name
	}
	reporting := e.ReportingController
	if reporting == "" {
		reporting = e.Source.Component
	}
	value := map[string]string{
		"involvedObject.name": e.InvolvedObject.Name,
		"involvedObject.uid":  string(e.InvolvedObject.UID),
		"related.name":        related,
		"reportingComponent":  reporting,
		"reason":              e.Reason,
	}
	for _, t := range s {
		var is bool
		switch t.label {
		case "involvedObject.ancestor":
			// Without a cluster an event has no ancestors: the object itself.
			is = e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name == t.value
		case "involvedObject.ancestor.uid":
			is = string(e.InvolvedObject.UID) == t.value
		default:
			is = value[t.label] == t.value
		}
		if is != (t.op == "=") {
			return false
		}
	}
	return true
}

// satisfy changes e so that the selector selects it.
func (s indexSelector) satisfy(e *corev1.Event) {
	for _, t := range s {
		v := t.value
		if t.op == "!=" {
			v = "zz-" + t.value
		}
		switch t.label {
		case "involvedObject.name":
			e.InvolvedObject.Name = v
		case "involvedObject.uid", "involvedObject.ancestor.uid":
			e.InvolvedObject.UID = types.UID(v)
		case "involvedObject.ancestor":
			kind, name, _ := strings.Cut(v, "/")
			if t.op == "!=" {
				kind, name = "Pod", "zz-"+name
			}
			e.InvolvedObject.Kind, e.InvolvedObject.Name = kind, name
		case "related.name":
			if v == "" {
				e.Related = nil
			} else {
				e.Related = &corev1.ObjectReference{Kind: "Node", Name: v}
			}
		case "reportingComponent":
			e.ReportingController, e.Source.Component = v, v
		case "reason":
			e.Reason = v
		}
	}
}

// indexSelectors are selectors the store's cache (either --store-cache) serves from an index
// (regarding and related name, alone or with other terms; regarding name
// also picks the watchers an event goes to) and selectors it must scan for.
var indexSelectors = []indexSelector{
	nil,
	{{"involvedObject.name", "=", "a"}},
	{{"involvedObject.name", "=", "b"}},
	{{"involvedObject.name", "=", "a"}, {"reason", "=", "Started"}},
	{{"involvedObject.name", "=", "a"}, {"related.name", "=", "b"}},
	{{"involvedObject.name", "=", "nothing"}},
	{{"involvedObject.name", "!=", "a"}},
	{{"related.name", "=", "a"}},
	{{"related.name", "=", ""}},
	{{"related.name", "!=", "b"}, {"reason", "=", "Killing"}},
	{{"reportingComponent", "=", "ctrl-x"}},
	{{"involvedObject.uid", "=", "uid-a"}},
	{{"reason", "=", "Started"}},
	{{"involvedObject.ancestor", "=", "Pod/a"}},
	{{"involvedObject.ancestor", "=", "Pod/a"}, {"reason", "=", "Started"}},
	{{"involvedObject.ancestor.uid", "=", "uid-b"}},
	{{"involvedObject.ancestor", "!=", "Pod/a"}, {"related.name", "=", "b"}},
}

// indexEvent is one of the events the test writes, about object regarding.
func indexEvent(namespace, name, regarding, related, reporting, reason string) *corev1.Event {
	at := metav1.NewTime(now())
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: namespace, Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: regarding, UID: types.UID("uid-" + regarding)},
		Reason:         reason, Message: "m", Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "kubelet"}, ReportingController: reporting,
		Count: 1, FirstTimestamp: at, LastTimestamp: at,
	}
	if related != "" {
		e.Related = &corev1.ObjectReference{Kind: "Node", Name: related}
	}
	return e
}

// watchRecord is a watch event as the comparison sees it.
type watchRecord struct {
	Type watch.EventType
	Name string
}

// TestIndexedSelectionEqualsFullScan: lists and watches through every
// version and media type, by selectors the store cache's indexes serve and
// by selectors they cannot, give exactly what a full scan of every event
// (done here, from an unfiltered core/v1 list and watch) gives, while
// events are created, moved between regarding and related names, and
// deleted.
func TestIndexedSelectionEqualsFullScan(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	namespace := namespaceFor(t)
	writer := jsonClient(t).CoreV1().Events(namespace)
	clients := clientsFor(t, shared)

	before, err := writer.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watchFrom := metav1.ListOptions{ResourceVersion: before.ResourceVersion}

	// The unfiltered core/v1 watch every answer is checked against.
	all, err := writer.Watch(ctx, watchFrom)
	if err != nil {
		t.Fatal(err)
	}
	defer all.Stop()

	type selectedWatch struct {
		name     string
		selector int
		w        watch.Interface
	}
	var watches []selectedWatch
	for i, s := range indexSelectors {
		for _, version := range allVersions {
			for _, c := range clients {
				opts := watchFrom
				opts.FieldSelector = s.String(version)
				w, err := version.watch(ctx, c, namespace, opts)
				if err != nil {
					t.Fatalf("%s watch (%s) %q: %v", version.name, c.name, opts.FieldSelector, err)
				}
				defer w.Stop()
				watches = append(watches, selectedWatch{fmt.Sprintf("%s watch (%s) %q", version.name, c.name, opts.FieldSelector), i, w})
			}
		}
	}

	// Every combination of regarding name, related name and reporter.
	n := 0
	for _, regarding := range []string{"a", "b", "c"} {
		for _, related := range []string{"", "a", "b"} {
			for _, reporting := range []string{"ctrl-x", ""} {
				reason := []string{"Started", "Killing"}[n%2]
				e := indexEvent(namespace, fmt.Sprintf("e%02d", n), regarding, related, reporting, reason)
				if _, err := writer.Create(ctx, e, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				n++
			}
		}
	}
	// core/v1 lets an update move an event to another regarding or related
	// object: it then leaves one index bucket and trigger value for another.
	moves := []struct {
		name     string
		change   func(*corev1.Event)
		describe string
	}{
		{"e00", func(e *corev1.Event) { e.InvolvedObject.Name, e.InvolvedObject.UID = "b", "uid-b" }, "regarding a to b"},
		{"e07", func(e *corev1.Event) { e.InvolvedObject.Name, e.InvolvedObject.UID = "a", "uid-a" }, "regarding b to a"},
		{"e03", func(e *corev1.Event) { e.Related.Name = "b" }, "related a to b"},
		{"e12", func(e *corev1.Event) { e.Related = &corev1.ObjectReference{Kind: "Node", Name: "a"} }, "related none to a"},
		{"e01", func(e *corev1.Event) { e.Reason = "Killing" }, "reason Started to Killing"},
	}
	for _, m := range moves {
		e, err := writer.Get(ctx, m.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m.change(e)
		if _, err := writer.Update(ctx, e, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("%s: %v", m.describe, err)
		}
	}
	for _, name := range []string{"e02", "e08"} {
		if err := writer.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Lists, then one sentinel per selector: the event it selects that
	// marks the end of what its watches must show.
	current, err := writer.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range indexSelectors {
		var want []string
		for _, e := range current.Items {
			if s.matches(&e) {
				want = append(want, e.Name)
			}
		}
		for _, version := range allVersions {
			for _, c := range clients {
				for _, opts := range []metav1.ListOptions{
					{FieldSelector: s.String(version)},                       // consistent, from the cache
					{FieldSelector: s.String(version), ResourceVersion: "0"}, // any, from the cache
					{FieldSelector: s.String(version), Limit: 2},             // paginated
				} {
					got := listAllNames(t, version, c, namespace, opts)
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("selector %d: %s list (%s) %+v (-full scan +got):\n%s", i, version.name, c.name, opts, diff)
					}
				}
			}
		}
	}
	for i, s := range indexSelectors {
		sentinel := indexEvent(namespace, fmt.Sprintf("sentinel-%02d", i), "c", "", "", "Started")
		s.satisfy(sentinel)
		if !s.matches(sentinel) {
			t.Fatalf("sentinel %d does not match its selector", i)
		}
		if _, err := writer.Create(ctx, sentinel, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The full scan of the watch: each selector's view of the unfiltered
	// stream, as a filtered watch shows it (an event that stops matching is
	// DELETED for it, one that starts matching ADDED), up to its sentinel.
	lastSentinel := fmt.Sprintf("sentinel-%02d", len(indexSelectors)-1)
	var stream []watch.Event
	for {
		e := nextEvent(t, all)
		stream = append(stream, e)
		if e.Object.(*corev1.Event).Name == lastSentinel {
			break
		}
	}
	for _, sw := range watches {
		want := expectedWatch(stream, indexSelectors[sw.selector], fmt.Sprintf("sentinel-%02d", sw.selector))
		var got []watchRecord
		for len(got) < len(want) {
			e := nextEvent(t, sw.w)
			got = append(got, watchRecord{e.Type, objectName(t, e)})
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-full scan +got):\n%s", sw.name, diff)
		}
	}
}

// expectedWatch filters the unfiltered stream by s, as the server must,
// ending with the sentinel's ADDED.
func expectedWatch(stream []watch.Event, s indexSelector, sentinel string) []watchRecord {
	var out []watchRecord
	state := map[string]*corev1.Event{}
	for _, e := range stream {
		cur := e.Object.(*corev1.Event)
		prev := state[cur.Name]
		state[cur.Name] = cur
		was, is := prev != nil && s.matches(prev), s.matches(cur)
		switch {
		case e.Type == watch.Deleted && is:
			out = append(out, watchRecord{watch.Deleted, cur.Name})
		case e.Type == watch.Deleted:
		case was && is:
			out = append(out, watchRecord{watch.Modified, cur.Name})
		case is:
			out = append(out, watchRecord{watch.Added, cur.Name})
		case was:
			out = append(out, watchRecord{watch.Deleted, cur.Name})
		}
		if e.Type == watch.Deleted {
			delete(state, cur.Name)
		}
		if cur.Name == sentinel {
			return out
		}
	}
	return out
}

// listAllNames lists with opts, following continue tokens, and returns the
// names in order.
func listAllNames(t *testing.T, version apiVersion, c client, namespace string, opts metav1.ListOptions) []string {
	t.Helper()
	var out []string
	for {
		items, meta, err := version.list(ctxFor(t), c, namespace, opts)
		if err != nil {
			t.Fatalf("%s list (%s) %+v: %v", version.name, c.name, opts, err)
		}
		for _, i := range items {
			out = append(out, i.Name)
		}
		if meta.Continue == "" {
			return out
		}
		opts.Continue = meta.Continue
	}
}

// objectName is the name of a watch event's object, in any version.
func objectName(t *testing.T, e watch.Event) string {
	t.Helper()
	for _, version := range allVersions {
		if v, ok := version.view(e.Object); ok {
			return v.Name
		}
	}
	t.Fatalf("watch event %s of %T", e.Type, e.Object)
	return ""
}
