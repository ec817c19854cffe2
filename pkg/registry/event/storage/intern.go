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
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

// Most strings of an event repeat across events: the namespace, the kind,
// API version, name and UID of the object it is about (an object has many
// events), the reason, type, action and reporter. The store's decoder
// hands every event it decodes the one copy of each such value held in a
// bounded table. With --store-cache=watch-cache, which keeps every event
// decoded on the heap, that saves about 200 bytes of the 2 KiB an event
// costs there. The compact store keeps events encoded outside the heap and
// decodes them for each read: there the table only shares the values
// among the events one response holds, for a map lookup per value. Names,
// UIDs, resource versions and messages of the events themselves are left
// alone: they are mostly unique, and the table would only grow with them.

// maxInternedStrings bounds the table: at most this many distinct values
// (a few MiB); when it is full it starts over.
const maxInternedStrings = 1 << 16

// stringTable maps each value to its one kept copy.
type stringTable struct {
	mu      sync.RWMutex
	strings map[string]string
}

func newStringTable() *stringTable {
	return &stringTable{strings: make(map[string]string)}
}

// intern returns the kept copy of s, keeping s if it has none.
func (t *stringTable) intern(s string) string {
	if s == "" {
		return s
	}
	t.mu.RLock()
	kept, ok := t.strings[s]
	t.mu.RUnlock()
	if ok {
		return kept
	}
	return t.keep(s)
}

// internBytes returns the kept copy of b's value, keeping a copy if it has
// none; b is not retained. A nil table keeps nothing: it returns a copy.
func (t *stringTable) internBytes(b []byte) string {
	if t == nil {
		return string(b)
	}
	t.mu.RLock()
	kept, ok := t.strings[string(b)] // no copy for the lookup
	t.mu.RUnlock()
	if ok {
		return kept
	}
	return t.keep(string(b))
}

// keep returns the kept copy of s, keeping s if it still has none (another
// caller may have kept one since the lookup), and starts the table over
// when it is full.
func (t *stringTable) keep(s string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if kept, ok := t.strings[s]; ok {
		return kept
	}
	if len(t.strings) >= maxInternedStrings {
		clear(t.strings)
	}
	t.strings[s] = s
	return s
}

// internEvent points the repeating strings of a freshly decoded event, not
// yet seen by anyone else, at their kept copies.
func (t *stringTable) internEvent(event *core.Event) {
	event.Namespace = t.intern(event.Namespace)
	t.internReference(&event.InvolvedObject)
	if event.Related != nil {
		t.internReference(event.Related)
	}
	event.Reason = t.intern(event.Reason)
	event.Type = t.intern(event.Type)
	event.Action = t.intern(event.Action)
	event.Source.Component = t.intern(event.Source.Component)
	event.Source.Host = t.intern(event.Source.Host)
	event.ReportingController = t.intern(event.ReportingController)
	event.ReportingInstance = t.intern(event.ReportingInstance)
}

func (t *stringTable) internReference(ref *core.ObjectReference) {
	ref.Kind = t.intern(ref.Kind)
	ref.Namespace = t.intern(ref.Namespace)
	ref.Name = t.intern(ref.Name)
	ref.UID = types.UID(t.intern(string(ref.UID)))
	ref.APIVersion = t.intern(ref.APIVersion)
	ref.ResourceVersion = t.intern(ref.ResourceVersion)
	ref.FieldPath = t.intern(ref.FieldPath)
}

// internCodec is a storage codec whose decoded events share their repeating
// strings through a stringTable.
type internCodec struct {
	runtime.Codec
	table *stringTable
}

func (c internCodec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, kind, err := c.Codec.Decode(data, defaults, into)
	if event, ok := obj.(*core.Event); ok && err == nil {
		c.table.internEvent(event)
	}
	return obj, kind, err
}
