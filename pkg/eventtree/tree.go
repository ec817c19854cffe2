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

// Package eventtree draws an object's ownership tree (a Deployment, its
// ReplicaSets, their Pods) with each object's events on one time axis. The
// tree is built from the events themselves: an event names its regarding
// object and, in the ancestry annotation, that object's chain of controller
// owners, so Pods and ReplicaSets deleted long ago still find their place.
// What is live in the cluster is merged in optionally, to mark the deleted
// objects and to show live objects that have no events.
package eventtree

import (
	"sort"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-events/events-apiserver/pkg/ownerchain"
)

// ObjectRef names an object of the tree within the namespace.
type ObjectRef struct {
	Kind string
	Name string
}

// String is "Kind/name", the form of a regarding.ancestor term.
func (r ObjectRef) String() string { return ownerchain.Ref(r.Kind, r.Name) }

// Liveness is what the cluster says of an object.
type Liveness int

const (
	// LivenessUnknown: the cluster was not asked, or could not answer.
	LivenessUnknown Liveness = iota
	// Live: the object (the same UID, when the events know it) exists.
	Live
	// Deleted: no object of that name exists, or one with another UID.
	Deleted
)

// Occurrence is what one event says happened to its object: once, or
// Count times between First and Last (a series, or a deduplicated event
// with deprecatedCount).
type Occurrence struct {
	Type    string
	Reason  string
	Message string
	First   time.Time
	Last    time.Time
	Count   int32
}

// Node is one object of the tree.
type Node struct {
	Ref      ObjectRef
	UID      types.UID
	Liveness Liveness
	// Occurrences are the object's events, oldest first.
	Occurrences []Occurrence
	Children    []*Node
	parent      *Node
}

// Earliest is the first observation of the object's or its descendants'
// events; zero when none has any.
func (n *Node) Earliest() time.Time {
	var earliest time.Time
	for _, o := range n.Occurrences {
		if earliest.IsZero() || o.First.Before(earliest) {
			earliest = o.First
		}
	}
	for _, c := range n.Children {
		if e := c.Earliest(); !e.IsZero() && (earliest.IsZero() || e.Before(earliest)) {
			earliest = e
		}
	}
	return earliest
}

// Tree is an ownership tree under Root, with an index of its nodes.
type Tree struct {
	Root  *Node
	nodes map[ObjectRef]*Node
	// Undecodable counts the events whose ancestry annotation could not be
	// read; they are placed under the root.
	Undecodable int
}

// NewTree returns a tree of root alone.
func NewTree(root ObjectRef) *Tree {
	n := &Node{Ref: root}
	return &Tree{Root: n, nodes: map[ObjectRef]*Node{root: n}}
}

// Node returns the node of ref, nil when the tree has none.
func (t *Tree) Node(ref ObjectRef) *Node { return t.nodes[ref] }

// Nodes returns every node, parents before children, in drawing order.
func (t *Tree) Nodes() []*Node {
	var out []*Node
	var walk func(*Node)
	walk = func(n *Node) {
		out = append(out, n)
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(t.Root)
	return out
}

// node returns the node of ref, creating it under parent (the root when
// nil) if it is new. A node first seen without a parent and later with
// one moves there.
func (t *Tree) node(ref ObjectRef, uid types.UID, parent *Node) *Node {
	n, ok := t.nodes[ref]
	if !ok {
		n = &Node{Ref: ref}
		t.nodes[ref] = n
	}
	if n.UID == "" {
		n.UID = uid
	}
	switch {
	case n == t.Root || n.parent == parent && parent != nil:
	case parent == nil || isAncestor(n, parent):
		// No parent known (or one that would make a cycle): under the root
		// until an event names its parent.
		if n.parent == nil {
			t.attach(n, t.Root)
		}
	case n.parent == nil || n.parent == t.Root:
		t.attach(n, parent)
	}
	return n
}

// isAncestor tells whether n is parent or one of its ancestors: linking
// would make a cycle.
func isAncestor(n, parent *Node) bool {
	for p := parent; p != nil; p = p.parent {
		if p == n {
			return true
		}
	}
	return false
}

func (t *Tree) attach(n, parent *Node) {
	if n.parent != nil {
		siblings := n.parent.Children
		for i, c := range siblings {
			if c == n {
				n.parent.Children = append(siblings[:i:i], siblings[i+1:]...)
				break
			}
		}
	}
	n.parent = parent
	parent.Children = append(parent.Children, n)
}

// AddEvent places an event's object in the tree, under the nearest of its
// ancestors up to the root, and records its occurrence.
func (t *Tree) AddEvent(e *eventsv1.Event) {
	self := ObjectRef{Kind: e.Regarding.Kind, Name: e.Regarding.Name}
	chain, err := ownerchain.Decode(e.Annotations[ownerchain.Annotation])
	if err != nil {
		t.Undecodable++
		chain = nil
	}
	if self == t.Root.Ref {
		// The root's own ancestors are not drawn.
		chain = nil
	}
	// The chain is nearest first: from the root down, each ancestor is the
	// parent of the next, and the nearest the parent of the object itself.
	// Ancestors above the root are not drawn.
	from := len(chain)
	for i, a := range chain {
		if (ObjectRef{Kind: a.Kind, Name: a.Name}) == t.Root.Ref {
			from = i
			if t.Root.UID == "" {
				t.Root.UID = a.UID
			}
			break
		}
	}
	if from == len(chain) {
		// The root is not in the chain: the event is about the root itself,
		// or the server matched it without a chain (standalone); the chain's
		// objects hang under the root.
		from = len(chain) - 1
	} else {
		from--
	}
	var parent *Node
	for i := from; i >= 0; i-- {
		a := chain[i]
		parent = t.node(ObjectRef{Kind: a.Kind, Name: a.Name}, a.UID, parent)
	}
	n := t.node(self, e.Regarding.UID, parent)
	n.Occurrences = append(n.Occurrences, OccurrenceOf(e))
}

// LiveObject is an object as the cluster has it now.
type LiveObject struct {
	Ref ObjectRef
	UID types.UID
	// Owner is the object's controller owner, zero when it has none.
	Owner    ObjectRef
	OwnerUID types.UID
}

// MergeLive marks every node whose kind was listed (kinds) live or
// deleted, and adds the live objects owned by a node of the tree that have
// no events, under their owner.
func (t *Tree) MergeLive(kinds map[string]bool, objects []LiveObject) {
	byRef := make(map[ObjectRef]LiveObject, len(objects))
	for _, o := range objects {
		byRef[o.Ref] = o
	}
	// Owned objects first, in a stable order, repeated until no more attach
	// (a live Pod of a live ReplicaSet that has no events either).
	sorted := append([]LiveObject(nil), objects...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Ref.Kind != sorted[j].Ref.Kind {
			return sorted[i].Ref.Kind < sorted[j].Ref.Kind
		}
		return sorted[i].Ref.Name < sorted[j].Ref.Name
	})
	for added := true; added; {
		added = false
		for _, o := range sorted {
			if _, ok := t.nodes[o.Ref]; ok || o.Owner == (ObjectRef{}) {
				continue
			}
			owner, ok := t.nodes[o.Owner]
			if !ok || (owner.UID != "" && o.OwnerUID != "" && owner.UID != o.OwnerUID) {
				continue
			}
			t.node(o.Ref, o.UID, owner)
			added = true
		}
	}
	for ref, n := range t.nodes {
		if !kinds[ref.Kind] {
			continue
		}
		o, ok := byRef[ref]
		switch {
		case !ok, n.UID != "" && o.UID != "" && n.UID != o.UID:
			n.Liveness = Deleted
		default:
			n.Liveness = Live
		}
	}
}

// Sort orders every node's occurrences oldest first and its children by
// their earliest observation (objects without events last), then kind and
// name: the old ReplicaSet above the new one.
func (t *Tree) Sort() {
	for _, n := range t.nodes {
		sort.SliceStable(n.Occurrences, func(i, j int) bool {
			a, b := n.Occurrences[i], n.Occurrences[j]
			if !a.First.Equal(b.First) {
				return a.First.Before(b.First)
			}
			if !a.Last.Equal(b.Last) {
				return a.Last.Before(b.Last)
			}
			return a.Reason < b.Reason
		})
	}
	for _, n := range t.nodes {
		earliest := make(map[*Node]time.Time, len(n.Children))
		for _, c := range n.Children {
			earliest[c] = c.Earliest()
		}
		sort.SliceStable(n.Children, func(i, j int) bool {
			a, b := n.Children[i], n.Children[j]
			ea, eb := earliest[a], earliest[b]
			if ea.IsZero() != eb.IsZero() {
				return eb.IsZero()
			}
			if !ea.Equal(eb) {
				return ea.Before(eb)
			}
			if a.Ref.Kind != b.Ref.Kind {
				return a.Ref.Kind < b.Ref.Kind
			}
			return a.Ref.Name < b.Ref.Name
		})
	}
}

// Build returns the tree of root from events, sorted.
func Build(root ObjectRef, events []eventsv1.Event) *Tree {
	t := NewTree(root)
	for i := range events {
		t.AddEvent(&events[i])
	}
	t.Sort()
	return t
}

// OccurrenceOf reads an event's observations the way the server's
// summaries count them: first the eventTime (else deprecatedFirstTimestamp,
// else creation), last the series' lastObservedTime (else
// deprecatedLastTimestamp, else the first), and the occurrences the
// greater of series.count and deprecatedCount, at least 1.
func OccurrenceOf(e *eventsv1.Event) Occurrence {
	o := Occurrence{Type: e.Type, Reason: e.Reason, Message: e.Note, Count: 1}
	switch {
	case !e.EventTime.IsZero():
		o.First = e.EventTime.Time
	case !e.DeprecatedFirstTimestamp.IsZero():
		o.First = e.DeprecatedFirstTimestamp.Time
	default:
		o.First = e.CreationTimestamp.Time
	}
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		o.Last = e.Series.LastObservedTime.Time
	case !e.DeprecatedLastTimestamp.IsZero():
		o.Last = e.DeprecatedLastTimestamp.Time
	}
	if o.Last.Before(o.First) {
		o.Last = o.First
	}
	if e.Series != nil && e.Series.Count > o.Count {
		o.Count = e.Series.Count
	}
	if e.DeprecatedCount > o.Count {
		o.Count = e.DeprecatedCount
	}
	o.First, o.Last = o.First.UTC(), o.Last.UTC()
	return o
}
