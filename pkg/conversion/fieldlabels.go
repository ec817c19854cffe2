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

package conversion

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-events/events-apiserver/pkg/ownerchain"
)

// Canonical field labels: the names, core/v1's, under which the registry
// exposes an event's selectable fields. Each served version maps the labels
// its users write onto these.
const (
	FieldName               = "metadata.name"
	FieldNamespace          = "metadata.namespace"
	FieldReason             = "reason"
	FieldAction             = "action"
	FieldSource             = "source"
	FieldReportingComponent = "reportingComponent"
	FieldReportingInstance  = "reportingInstance"
	FieldType               = "type"
	FieldSeriesState        = "series.state"

	// PrefixInvolvedObject and PrefixRelated are followed by one of
	// ObjectReferenceFields.
	PrefixInvolvedObject = "involvedObject."
	PrefixRelated        = "related."

	// FieldAncestor selects the events of an object and of everything it
	// controls, by the object's "Kind/name" or UID (pkg/ownerchain). Its
	// value in an event's selectable fields is the chain of the regarding
	// object's controller owners (ownerchain.Annotation); a term matches
	// when it names the regarding object or one in that chain. Users
	// write regarding.ancestor=Deployment/web or
	// regarding.ancestor.uid=<uid> (involvedObject.… in core/v1).
	FieldAncestor = PrefixInvolvedObject + "ancestor"
)

// The history terms: a list whose field selector has history.since reads
// the archive as well as the live store, over the window [since, until)
// (see pkg/registry/event/history). Every version accepts them under these
// names; they are no field of an event, and the store refuses them on
// watch.
const (
	FieldHistorySince = "history.since"
	FieldHistoryUntil = "history.until"
)

// ObjectReferenceFields are the selectable fields of an object reference.
var ObjectReferenceFields = []string{"kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"}

// CoreV1FieldLabels maps the field labels core/v1 accepts to canonical labels.
func CoreV1FieldLabels() map[string]string {
	m := fieldLabels(CoreV1FieldNames)
	m[CoreV1FieldNames.Source] = FieldSource
	return m
}

// EventsFieldLabels maps the field labels events.k8s.io (v1beta1 and v1)
// accepts to canonical labels: its names (FieldNames) of the core/v1 ones.
// Its deprecatedSource is not selectable.
func EventsFieldLabels() map[string]string {
	return fieldLabels(EventsFieldNames)
}

// AllFieldLabels maps every field label of core/v1 and events.k8s.io to
// canonical labels: what a field selector of the event summaries, which
// count the events of every version, accepts.
func AllFieldLabels() map[string]string {
	m := CoreV1FieldLabels()
	maps.Copy(m, EventsFieldLabels())
	return m
}

// fieldLabels are the labels every version accepts, named as in names.
func fieldLabels(names FieldNames) map[string]string {
	m := identity(FieldName, FieldNamespace, FieldReason, FieldAction,
		FieldReportingInstance, FieldType, FieldSeriesState, FieldHistorySince, FieldHistoryUntil)
	m[names.ReportingController] = FieldReportingComponent
	for _, f := range ObjectReferenceFields {
		m[names.Regarding+"."+f] = PrefixInvolvedObject + f
		m[PrefixRelated+f] = PrefixRelated + f
	}
	m[names.Regarding+ancestorSuffix] = FieldAncestor
	m[names.Regarding+ancestorUIDSuffix] = FieldAncestor
	return m
}

// The labels of the ancestor terms: regarding (or involvedObject) and
// these. Both are FieldAncestor, told apart by their values.
const (
	ancestorSuffix    = ".ancestor"
	ancestorUIDSuffix = ".ancestor.uid"
)

// validateValue checks the value of a term whose label needs a form of
// value: the ancestor terms'. Errors name the label.
func validateValue(label, value string) error {
	var err error
	switch {
	case strings.HasSuffix(label, ancestorUIDSuffix):
		err = ownerchain.ValidateUID(value)
	case strings.HasSuffix(label, ancestorSuffix):
		err = ownerchain.ValidateRef(value)
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("field selector %s: %w", label, err)
	}
	return nil
}

// AddFieldLabelConversionFunc registers, for gvk, a field label conversion
// that accepts exactly the labels in mapping and names them all when it
// refuses one.
func AddFieldLabelConversionFunc(scheme *runtime.Scheme, gvk schema.GroupVersionKind, mapping map[string]string) error {
	supported := make([]string, 0, len(mapping))
	for label := range mapping {
		supported = append(supported, label)
	}
	sort.Strings(supported)
	list := strings.Join(supported, ", ")
	return scheme.AddFieldLabelConversionFunc(gvk,
		func(label, value string) (string, string, error) {
			canonical, ok := mapping[label]
			if !ok {
				return "", "", fmt.Errorf("field label not supported: %s (supported field labels for %s %s: %s)", label, gvk.GroupVersion().String(), gvk.Kind, list)
			}
			if err := validateValue(label, value); err != nil {
				return "", "", err
			}
			return canonical, value, nil
		})
}

func identity(labels ...string) map[string]string {
	m := make(map[string]string, len(labels))
	for _, l := range labels {
		m[l] = l
	}
	return m
}
