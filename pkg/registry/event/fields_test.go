package event

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

// The packed set GetAttrs gives the watch cache selects exactly as the
// plain set of plainSelectableFields: every label, = and !=, on the value the
// event has, on "" and on another value.
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
			plain := plainSelectableFields(tt.event)
			_, packed, err := GetAttrs(tt.event)
			if err != nil {
				t.Fatal(err)
			}
			for _, label := range selectableLabels {
				if got, want := packedFields(packed[packedKey]).Get(label), plain.Get(label); got != want {
					t.Errorf("Get(%q) = %q, want %q", label, got, want)
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

// The packed set holds three entries, what the watch cache keeps per event:
// the packed values, and the name and namespace the cacher reads from the
// set itself to dispatch a watch event to the watchers scoped to them.
func TestGetAttrsPacksNameNamespaceAndTheRest(t *testing.T) {
	event := fullEvent()
	_, packed, err := GetAttrs(event)
	if err != nil {
		t.Fatal(err)
	}
	want := fields.Set{"metadata.name": event.Name, "metadata.namespace": event.Namespace, packedKey: packed[packedKey]}
	if diff := cmp.Diff(want, packed); diff != "" {
		t.Errorf("packed set (-want +got):\n%s", diff)
	}
}

// FieldStatelessSeries selects the series stored without a state, and
// neither singletons nor series with a state.
func TestStatelessSeriesField(t *testing.T) {
	withState := fullEvent()
	stateless := fullEvent()
	stateless.Series.State = ""
	singleton := fullEvent()
	singleton.Series = nil
	predicate := Matcher(labels.Everything(), fields.OneTermEqualSelector(FieldStatelessSeries, "true"))
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
		})
	}
}
