package event

import (
	"encoding/binary"
	"strings"

	"k8s.io/apimachinery/pkg/fields"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
)

// The watch cache keeps the selectable field set of every cached event for
// as long as the event is cached, to filter lists and watch events without
// converting the object. As a fields.Set (a Go map of 15 to 20 string
// pairs for a typical event) it cost 1.2 KiB per event, more than the
// event's own strings and a third of the memory per cached event. GetAttrs
// therefore hands the cache a packed set: one entry, whose value holds
// every selectable value in the order of selectableLabels, length-prefixed
// in one string that the collector need not scan, beside the event's
// metadata.name and metadata.namespace, which the cacher reads from the set
// itself to find the watchers scoped to one namespace or name. The
// selectors Matcher builds read a packed set through packedFields; any
// other fields.Set they are given (plainSelectableFields') reads as it is.

// FieldStatelessSeries selects the series stored without a state ("true";
// "" for every other event), for the series-state controller to list and
// watch those alone instead of every event without a state, singletons
// included. No served version accepts it (their field label conversions
// refuse labels they do not map), so it changes no user's selector; it is
// for in-process callers of the store.
const FieldStatelessSeries = "series.stateless"

// selectableLabels are the canonical labels of the selectable fields, in
// the order their values are packed.
var selectableLabels = func() []string {
	labels := []string{eventconversion.FieldName, eventconversion.FieldNamespace}
	for _, prefix := range []string{eventconversion.PrefixInvolvedObject, eventconversion.PrefixRelated} {
		for _, f := range eventconversion.ObjectReferenceFields {
			labels = append(labels, prefix+f)
		}
	}
	return append(labels, eventconversion.FieldReason, eventconversion.FieldAction, eventconversion.FieldSource,
		eventconversion.FieldReportingComponent, eventconversion.FieldReportingInstance, eventconversion.FieldType,
		eventconversion.FieldSeriesState, FieldStatelessSeries)
}()

// labelPosition is the position of each selectable label's value.
var labelPosition = func() map[string]int {
	m := make(map[string]int, len(selectableLabels))
	for i, label := range selectableLabels {
		m[label] = i
	}
	return m
}()

// packedKey is the one key of a packed set. No field selector can name it:
// the field label conversion of every served version refuses labels it does
// not know before a selector reaches Matcher.
const packedKey = "\x00packed"

// selectableValues returns the values of an event's selectable fields, in
// the order of selectableLabels ("" for an unset field).
func selectableValues(event *core.Event) []string {
	values := make([]string, 0, len(selectableLabels))
	values = append(values, event.Name, event.Namespace)
	values = appendReference(values, &event.InvolvedObject)
	related := event.Related
	if related == nil {
		related = &core.ObjectReference{}
	}
	values = appendReference(values, related)

	seriesState, stateless := "", ""
	if event.Series != nil {
		seriesState = string(event.Series.State)
		if seriesState == "" {
			stateless = "true"
		}
	}
	// source is the legacy reporter, falling back to the new one, and
	// reportingComponent the new one, falling back to the legacy one, so
	// that either selects events written through either API.
	source := event.Source.Component
	if source == "" {
		source = event.ReportingController
	}
	return append(values, event.Reason, event.Action, source,
		eventconversion.ReportingController(event.ReportingController, event.Source.Component),
		event.ReportingInstance, event.Type, seriesState, stateless)
}

// appendReference appends the values of ObjectReferenceFields.
func appendReference(values []string, ref *core.ObjectReference) []string {
	return append(values, ref.Kind, ref.Namespace, ref.Name, string(ref.UID), ref.APIVersion, ref.ResourceVersion, ref.FieldPath)
}

// plainSelectableFields returns the selectable fields of an event under their
// canonical (core/v1) labels as a plain set: what a packed set reads as, and
// the reference the tests hold packFields to; see pkg/conversion for how
// each served version names them. It holds only the fields that are set: fields.Set
// reads an absent label as "", so an unset field selects exactly as an
// empty one would (related.name= matches events without a related object).
func plainSelectableFields(event *core.Event) fields.Set {
	set := fields.Set{}
	for i, value := range selectableValues(event) {
		if value != "" {
			set[selectableLabels[i]] = value
		}
	}
	return set
}

// packFields returns the packed selectable field set of an event: the
// values of selectableValues, each preceded by its length as a uvarint.
func packFields(event *core.Event) fields.Set {
	values := selectableValues(event)
	size := 0
	for _, v := range values {
		size += uvarintLen(len(v)) + len(v)
	}
	var b strings.Builder
	b.Grow(size)
	var length [binary.MaxVarintLen64]byte
	for _, v := range values {
		b.Write(length[:binary.PutUvarint(length[:], uint64(len(v)))])
		b.WriteString(v)
	}
	return fields.Set{
		eventconversion.FieldName:      event.Name,
		eventconversion.FieldNamespace: event.Namespace,
		packedKey:                      b.String(),
	}
}

func uvarintLen(n int) int {
	size := 1
	for ; n >= 0x80; n >>= 7 {
		size++
	}
	return size
}

// packedFields reads a packed set as fields.
type packedFields string

var _ fields.Fields = packedFields("")

// Get returns the value of label, "" when it is unset or not selectable.
func (p packedFields) Get(label string) string {
	position, ok := labelPosition[label]
	if !ok {
		return ""
	}
	s := string(p)
	for i := 0; ; i++ {
		length, n := uvarint(s)
		if n == 0 || length > len(s)-n {
			return ""
		}
		if i == position {
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

// Has reports whether label is set, as plainSelectableFields' set would.
func (p packedFields) Has(label string) bool { return p.Get(label) != "" }

// unpacked returns the fields a selector reads from a set GetAttrs made.
func unpacked(f fields.Fields) fields.Fields {
	if set, ok := f.(fields.Set); ok {
		if packed, ok := set[packedKey]; ok {
			return packedFields(packed)
		}
	}
	return f
}

// packedSelector is a field selector that reads packed sets.
type packedSelector struct {
	fields.Selector
}

// Matches reports whether the selector matches f, packed or not.
func (s packedSelector) Matches(f fields.Fields) bool {
	return s.Selector.Matches(unpacked(f))
}

// Transform keeps the transformed selector reading packed sets.
func (s packedSelector) Transform(fn fields.TransformFunc) (fields.Selector, error) {
	transformed, err := s.Selector.Transform(fn)
	if err != nil {
		return nil, err
	}
	return packedSelector{transformed}, nil
}

// DeepCopySelector keeps the copy reading packed sets.
func (s packedSelector) DeepCopySelector() fields.Selector {
	return packedSelector{s.Selector.DeepCopySelector()}
}
