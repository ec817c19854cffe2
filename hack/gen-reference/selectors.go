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

package main

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kube-events/events-apiserver/pkg/apiserver"
	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
)

// writeSelectors writes, for every served version, the field selectors it
// accepts, the core/v1 field each one selects, and whether the store's cache
// serves it from an index.
func writeSelectors(b *bytes.Buffer) error {
	indexed := map[string]bool{}
	for name := range *eventstorage.Indexers() {
		if field, ok := strings.CutPrefix(name, storage.FieldIndex("")); ok {
			indexed[field] = true
		}
	}
	triggered := map[string]bool{}
	for field := range eventstorage.TriggerFuncs() {
		triggered[field] = true
	}

	fmt.Fprintf(b, "# Field selectors\n\n")
	fmt.Fprintf(b, "The field selectors each served version of Event accepts (`--field-selector` in kubectl,\n")
	fmt.Fprintf(b, "`fieldSelector` in a list or watch). Every one takes `=`, `==` and `!=`; an unset field\n")
	fmt.Fprintf(b, "reads as empty, so `related.name=` selects the events without a related object.\n")
	fmt.Fprintf(b, "A version refuses any other label with 400 Bad Request and names the ones it accepts.\n\n")
	fmt.Fprintf(b, "**Indexed**: a list whose selector requires an exact value (`=`, `==`) of this field reads\n")
	fmt.Fprintf(b, "one bucket of the store cache's index (either `--store-cache`) instead of every cached event.\n")
	fmt.Fprintf(b, "**Watch trigger**: a watch event is handed only to the watchers whose selector requires its\n")
	fmt.Fprintf(b, "value of this field (and to those that do not select on it).\n\n")
	fmt.Fprintf(b, "**Ancestor terms**: `regarding.ancestor=<Kind>/<name>` and `regarding.ancestor.uid=<uid>`\n")
	fmt.Fprintf(b, "(`involvedObject.ancestor…` in core/v1) select the events of that object and of every object it\n")
	fmt.Fprintf(b, "controls: an event matches when its regarding object is the one named or has it among its\n")
	fmt.Fprintf(b, "controller owners, the chain kept with the event when it was first stored (see\n")
	fmt.Fprintf(b, "[Ownership trees](../ownership.md)). `!=` selects the events that do not match.\n")

	for _, gv := range servedVersions() {
		labels, err := fieldLabels(gv)
		if err != nil {
			return err
		}
		fmt.Fprintf(b, "\n## %s\n\n", gvString(gv))
		fmt.Fprintf(b, "| Field selector | Selects (core/v1 field) | Indexed | Watch trigger |\n|---|---|---|---|\n")
		names := make([]string, 0, len(labels))
		for label := range labels {
			names = append(names, label)
		}
		sort.Strings(names)
		for _, label := range names {
			canonical := labels[label]
			fmt.Fprintf(b, "| `%s` | `%s` | %s | %s |\n", label, canonical, yes(indexed[canonical]), yes(triggered[canonical]))
		}
	}
	return nil
}

// servedVersions are the versions in which the scheme knows Event, by
// group, newest version first.
func servedVersions() []schema.GroupVersion {
	var served []schema.GroupVersion
	for _, gv := range apiserver.Scheme.PrioritizedVersionsAllGroups() {
		if apiserver.Scheme.Recognizes(gv.WithKind("Event")) {
			served = append(served, gv)
		}
	}
	sort.Slice(served, func(i, j int) bool {
		if served[i].Group != served[j].Group {
			return served[i].Group < served[j].Group
		}
		return version.CompareKubeAwareVersionStrings(served[i].Version, served[j].Version) > 0
	})
	return served
}

// fieldLabels returns the field labels gv accepts and the canonical label
// each converts to, checked against the scheme's conversion for gv, so that
// the page lists what the server accepts.
func fieldLabels(gv schema.GroupVersion) (map[string]string, error) {
	labels := eventconversion.EventsFieldLabels()
	if gv.Group == "" {
		labels = eventconversion.CoreV1FieldLabels()
	}
	gvk := gv.WithKind("Event")
	for label, canonical := range labels {
		value := "x"
		if strings.HasSuffix(label, ".ancestor") {
			value = "Deployment/x" // the form the term's value takes
		}
		converted, _, err := apiserver.Scheme.ConvertFieldLabel(gvk, label, value)
		if err != nil {
			return nil, fmt.Errorf("%s does not accept the field label %q: %w", gvString(gv), label, err)
		}
		if converted != canonical {
			return nil, fmt.Errorf("%s converts the field label %q to %q, not %q", gvString(gv), label, converted, canonical)
		}
	}
	if _, _, err := apiserver.Scheme.ConvertFieldLabel(gvk, "no.such.field", "x"); err == nil {
		return nil, fmt.Errorf("%s accepts any field label: the page cannot list them", gvString(gv))
	}
	return labels, nil
}

// gvString names gv as apiVersion does ("v1" for the core group).
func gvString(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "core/v1 (`/api/v1`)"
	}
	return gv.String()
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return ""
}
