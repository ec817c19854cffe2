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

// Package validate checks what clients read from the events API against
// etcd's own revision history: every list against etcd's state at its
// resourceVersion, every watch against the changes etcd made between its
// start and its last event or bookmark, filtered as the cacher filters
// them. It knows nothing of the server: the history and the operations are
// plain data, so that its checks are tested on crafted histories.
package validate

import (
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// Object is what a selector looks at in a stored event.
type Object struct {
	Namespace, Name string
	// RegardingName is involvedObject.name (regarding.name).
	RegardingName string
	Reason, Type  string
	Labels        map[string]string
	// UID and Observed (the last observation: series.lastObservedTime,
	// else lastTimestamp, else eventTime, else creationTimestamp) are a
	// history page's order.
	UID      string
	Observed time.Time
}

// Key is namespace/name, the order of lists.
func (o *Object) Key() string { return o.Namespace + "/" + o.Name }

// Change is one revision of etcd under the events prefix: a put of Object
// (Object set) or a delete of Key (Object nil). Kubernetes writes one key
// per revision.
type Change struct {
	Rev    int64
	Key    string
	Object *Object
}

// version is a key's value at a revision: its object and mod revision.
type version struct {
	object *Object
	modRev int64
}

// snapshotEvery is how many changes lie between two stored states.
const snapshotEvery = 256

// History is etcd's revisions under the events prefix, in order, from an
// empty prefix. Build it with Append; read states with StateAt.
type History struct {
	changes []Change
	// head is the newest revision known, which may be past the last change
	// (revisions of other keys).
	head int64
	// snapshots[i] is the state after changes[:i*snapshotEvery].
	snapshots []map[string]version
	state     map[string]version
}

// NewHistory is an empty history.
func NewHistory() *History {
	return &History{state: map[string]version{}, snapshots: []map[string]version{{}}}
}

// Append adds a change; revisions must grow.
func (h *History) Append(c Change) error {
	if n := len(h.changes); n > 0 && c.Rev <= h.changes[n-1].Rev {
		return fmt.Errorf("change at revision %d after revision %d", c.Rev, h.changes[n-1].Rev)
	}
	h.changes = append(h.changes, c)
	apply(h.state, c)
	if len(h.changes)%snapshotEvery == 0 {
		h.snapshots = append(h.snapshots, clone(h.state))
	}
	h.Observe(c.Rev)
	return nil
}

// Observe records that etcd reached revision rev.
func (h *History) Observe(rev int64) {
	if rev > h.head {
		h.head = rev
	}
}

// Head is the newest revision known.
func (h *History) Head() int64 { return h.head }

// Changes is the number of changes recorded.
func (h *History) Changes() int { return len(h.changes) }

func apply(state map[string]version, c Change) {
	if c.Object == nil {
		delete(state, c.Key)
		return
	}
	state[c.Key] = version{object: c.Object, modRev: c.Rev}
}

func clone(state map[string]version) map[string]version {
	out := make(map[string]version, len(state))
	for k, v := range state {
		out[k] = v
	}
	return out
}

// index is the number of changes at or below rev.
func (h *History) index(rev int64) int {
	return sort.Search(len(h.changes), func(i int) bool { return h.changes[i].Rev > rev })
}

// stateAt is the state after every change at or below rev, a copy.
func (h *History) stateAt(rev int64) map[string]version {
	n := h.index(rev)
	s := clone(h.snapshots[n/snapshotEvery])
	for _, c := range h.changes[n/snapshotEvery*snapshotEvery : n] {
		apply(s, c)
	}
	return s
}

// between is the changes in (from, to].
func (h *History) between(from, to int64) []Change {
	return h.changes[h.index(from):h.index(to)]
}

// object is key's object at mod revision modRev, nil when etcd stored no
// such version.
func (h *History) object(key string, modRev int64) *Object {
	i := h.index(modRev)
	if i == 0 || h.changes[i-1].Rev != modRev || h.changes[i-1].Key != key {
		return nil
	}
	return h.changes[i-1].Object
}

// versionOf finds key's version with mod revision modRev and the revision
// of the next change to key (0: none yet).
func (h *History) versionOf(key string, modRev int64) (found bool, next int64) {
	i := h.index(modRev)
	if i == 0 || h.changes[i-1].Rev != modRev || h.changes[i-1].Key != key || h.changes[i-1].Object == nil {
		return false, 0
	}
	for _, c := range h.changes[i:] {
		if c.Key == key {
			return true, c.Rev
		}
	}
	return true, 0
}

// Selector is what a list or watch selects: a namespace ("" for all) and
// the field and label selectors as the request spelled them.
type Selector struct {
	Namespace string
	Field     string
	Label     string
}

// compiled is a parsed Selector.
type compiled struct {
	namespace string
	field     fields.Selector
	label     labels.Selector
}

func (s Selector) compile() (*compiled, error) {
	f, err := fields.ParseSelector(s.Field)
	if err != nil {
		return nil, fmt.Errorf("field selector %q: %w", s.Field, err)
	}
	l, err := labels.Parse(s.Label)
	if err != nil {
		return nil, fmt.Errorf("label selector %q: %w", s.Label, err)
	}
	return &compiled{namespace: s.Namespace, field: f, label: l}, nil
}

// matches says whether o is selected; a nil object never is. The field
// names are both versions' (regarding.name in events.k8s.io,
// involvedObject.name in core/v1).
func (c *compiled) matches(o *Object) bool {
	if o == nil || c.namespace != "" && o.Namespace != c.namespace {
		return false
	}
	set := fields.Set{
		"metadata.name":       o.Name,
		"metadata.namespace":  o.Namespace,
		"regarding.name":      o.RegardingName,
		"involvedObject.name": o.RegardingName,
		"reason":              o.Reason,
		"type":                o.Type,
	}
	return c.field.Matches(set) && c.label.Matches(labels.Set(o.Labels))
}

// Item is one object of a list or watch event as a client read it.
type Item struct {
	Key string
	RV  int64
}

func (i Item) String() string { return fmt.Sprintf("%s@%d", i.Key, i.RV) }

// selected is the state at rev restricted to sel, in key order.
func (h *History) selected(rev int64, sel *compiled) []Item {
	return selectedOf(h.stateAt(rev), sel)
}

// selectedOf is state restricted to sel, in key order.
func selectedOf(state map[string]version, sel *compiled) []Item {
	var items []Item
	for k, v := range state {
		if sel.matches(v.object) {
			items = append(items, Item{Key: k, RV: v.modRev})
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Key < items[j].Key })
	return items
}
