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
	"encoding/binary"
	"fmt"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
	"github.com/kube-events/events-apiserver/pkg/storedevent"
)

// The watch cache (--store-cache=watch-cache) keeps the selectable field
// set of every cached event for
// as long as the event is cached, to filter lists and watch events without
// converting the object. As a plain fields.Set (a Go map of 15 to 20 string
// pairs for a typical event) it cost 1.2 KiB per event, a third of the
// memory per cached event. GetAttrs therefore hands the cache a packed set,
// a map of at most eight entries, which Go keeps in one group of eight
// slots (a ninth would make it a table of groups):
//   - metadata.name and metadata.namespace, which the watch cache reads
//     from the set itself to find the watchers scoped to one namespace or
//     name;
//   - the values that are mostly unique per event or per object, as the
//     event's own strings (a free slot costs nothing, a copy would): the
//     regarding and related names and UIDs, the regarding resourceVersion
//     and the chain of the regarding object's ancestors (events about an
//     object with both a related object and ancestors take a ninth entry,
//     and a map of two groups);
//   - under packedKey, every other selectable value (kinds, API versions,
//     field paths, reason, reporter, type, series state) in the order of
//     storedevent.SelectableLabels, length-prefixed in one string that the
//     collector need not scan. Those values repeat across events, and so
//     does the string: the store shares one copy of each (see newAttrFunc).
//
// The selectors Matcher builds read a packed set through packedSet; any
// other fields.Set they are given (storedevent.SelectableFields') reads as
// it is.

// directLabels are the labels a packed set holds as entries of their own.
var directLabels = []string{
	eventconversion.FieldName, eventconversion.FieldNamespace,
	eventconversion.PrefixInvolvedObject + "name", eventconversion.PrefixInvolvedObject + "uid",
	eventconversion.PrefixInvolvedObject + "resourceVersion",
	eventconversion.PrefixRelated + "name", eventconversion.PrefixRelated + "uid",
	eventconversion.FieldAncestor,
}

// packedKey is the key of a packed set's packed values. No field selector
// can name it: the field label conversion of every served version refuses
// labels it does not know before a selector reaches Matcher.
const packedKey = "\x00packed"

// maxPackedSetEntries is what one map group holds.
const maxPackedSetEntries = 8

// fieldSlot is where a packed set keeps a label's value: an entry of its
// own, or the position of the value among the packed ones.
type fieldSlot struct {
	direct   bool
	position int
}

// slots lays out the packed set: the slot of each selectable label, by
// label and, in selectableSlots, in the order of storedevent.SelectableLabels.
var slots, selectableSlots = func() (map[string]fieldSlot, []fieldSlot) {
	byLabel := make(map[string]fieldSlot, len(storedevent.SelectableLabels))
	for _, label := range directLabels {
		byLabel[label] = fieldSlot{direct: true}
	}
	inOrder := make([]fieldSlot, len(storedevent.SelectableLabels))
	packed := 0
	for i, label := range storedevent.SelectableLabels {
		if _, direct := byLabel[label]; !direct {
			byLabel[label] = fieldSlot{position: packed}
			packed++
		}
		inOrder[i] = byLabel[label]
	}
	return byLabel, inOrder
}()

// packFields returns the packed selectable field set of an event, its
// packed values shared through table (nil: not shared).
func packFields(event *core.Event, table *stringTable) fields.Set {
	var valuesArray [32]string // on the stack, as is buf: only the set is kept
	values := storedevent.AppendSelectableValues(valuesArray[:0], event)
	set := make(fields.Set, maxPackedSetEntries)
	var buf [256]byte
	packed := buf[:0]
	for i, value := range values {
		switch slot := selectableSlots[i]; {
		case slot.direct && value != "":
			set[storedevent.SelectableLabels[i]] = value
		case !slot.direct:
			packed = binary.AppendUvarint(packed, uint64(len(value)))
			packed = append(packed, value...)
		}
	}
	set[packedKey] = table.internBytes(packed)
	return set
}

// packedSet reads a packed set as fields.
type packedSet fields.Set

var _ fields.Fields = packedSet(nil)

// Get returns the value of label, "" when it is unset or not selectable.
func (p packedSet) Get(label string) string {
	slot, ok := slots[label]
	if !ok {
		return ""
	}
	if slot.direct {
		return p[label]
	}
	s := p[packedKey]
	for i := 0; ; i++ {
		length, n := uvarint(s)
		if n == 0 || length > len(s)-n {
			return ""
		}
		if i == slot.position {
			return s[n : n+length]
		}
		s = s[n+length:]
	}
}

// uvarint decodes the uvarint s starts with, as binary.Uvarint does, and
// returns it and its size; size 0 when s starts with none.
func uvarint(s string) (value, size int) {
	for shift := 0; size < len(s) && shift < 63; shift += 7 {
		b := s[size]
		size++
		value |= int(b&0x7f) << shift
		if b < 0x80 {
			return value, size
		}
	}
	return 0, 0
}

// Has reports whether label is set, as storedevent.SelectableFields' set would.
func (p packedSet) Has(label string) bool { return p.Get(label) != "" }

// unpacked returns the fields a selector reads from a set GetAttrs made.
func unpacked(f fields.Fields) fields.Fields {
	if set, ok := f.(fields.Set); ok {
		if _, ok := set[packedKey]; ok {
			return packedSet(set)
		}
	}
	return f
}

// packedSelector is a field selector that reads packed sets, and matches
// the ancestor terms (FieldAncestor) as they mean: the event's regarding
// object is the object the term names, or one of its ancestors. The
// embedded selector is the whole of it, which the store's cache asks for
// the exact values of indexed fields (the ancestor index included).
type packedSelector struct {
	fields.Selector
	// others are the terms other than the ancestor terms, and ancestors
	// the ancestor terms.
	others    fields.Selector
	ancestors []fields.Requirement
}

func newPackedSelector(selector fields.Selector) packedSelector {
	s := packedSelector{Selector: selector, others: selector}
	var others []fields.Selector
	for _, r := range selector.Requirements() {
		if r.Field == eventconversion.FieldAncestor {
			s.ancestors = append(s.ancestors, r)
			continue
		}
		if r.Operator == selection.NotEquals {
			others = append(others, fields.OneTermNotEqualSelector(r.Field, r.Value))
		} else {
			others = append(others, fields.OneTermEqualSelector(r.Field, r.Value))
		}
	}
	if len(s.ancestors) > 0 {
		s.others = fields.AndSelectors(others...)
	}
	return s
}

// Matches reports whether the selector matches f, packed or not.
func (s packedSelector) Matches(f fields.Fields) bool {
	f = unpacked(f)
	if !s.others.Matches(f) {
		return false
	}
	for _, r := range s.ancestors {
		in := ownerchain.Matches(f.Get(eventconversion.PrefixInvolvedObject+"kind"), f.Get(eventconversion.PrefixInvolvedObject+"name"),
			f.Get(eventconversion.PrefixInvolvedObject+"uid"), f.Get(eventconversion.FieldAncestor), r.Value)
		if in == (r.Operator == selection.NotEquals) {
			return false
		}
	}
	return true
}

// Transform keeps the transformed selector reading packed sets.
func (s packedSelector) Transform(fn fields.TransformFunc) (fields.Selector, error) {
	transformed, err := s.Selector.Transform(fn)
	if err != nil {
		return nil, err
	}
	return newPackedSelector(transformed), nil
}

// DeepCopySelector keeps the copy reading packed sets.
func (s packedSelector) DeepCopySelector() fields.Selector {
	return newPackedSelector(s.Selector.DeepCopySelector())
}

// GetAttrs returns the labels and selectable fields of an event, for list
// and watch filtering alike. The fields are packed (see packFields): only
// the selectors Matcher builds read them.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	return attrs(obj, nil)
}

// newAttrFunc returns GetAttrs for the store's cache (the watch cache
// keeps the field set of every cached event): events with the same packed values share one
// copy of them, kept in table.
func newAttrFunc(table *stringTable) storage.AttrFunc {
	return func(obj runtime.Object) (labels.Set, fields.Set, error) {
		return attrs(obj, table)
	}
}

func attrs(obj runtime.Object, table *stringTable) (labels.Set, fields.Set, error) {
	event, ok := obj.(*core.Event)
	if !ok {
		return nil, nil, fmt.Errorf("not an event: %T", obj)
	}
	return labels.Set(event.Labels), packFields(event, table), nil
}

// Matcher returns the selection predicate for a label and a field selector,
// whose labels have already been converted to the canonical core/v1 names.
// Its IndexFields let the store's cache serve an exact match on an indexed
// field from the index (see Indexers).
func Matcher(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	if field == nil {
		field = fields.Everything()
	}
	return storage.SelectionPredicate{Label: label, Field: newPackedSelector(field), GetAttrs: GetAttrs, IndexFields: indexedFields}
}
