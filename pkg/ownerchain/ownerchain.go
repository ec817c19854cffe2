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

package ownerchain

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// Annotation is the annotation that holds an event's chain. The server
// owns it: what a client sends in it is replaced.
const Annotation = "kube-events.io/regarding-ancestors"

// PendingAnnotation marks an event whose chain stopped short for a failure
// that may pass (ancestry.Chain.Pending, its value): the chain is resolved again,
// by an elected controller and when the event is archived, and the mark
// goes once it is final. The server owns it too.
const PendingAnnotation = "kube-events.io/regarding-ancestors-pending"

// SealAnnotation holds the server's seal of the two above (see
// ancestry.Sealer), where events reach its etcd past its strategy
// (offload, takeover): a chain without a seal that verifies is another
// writer's. The server owns it too.
const SealAnnotation = "kube-events.io/regarding-ancestors-seal"

// MaxDepth bounds the chain: ownership deeper than this (or a cycle) is
// cut there.
const MaxDepth = 8

// Ancestor is one controller owner in a chain.
type Ancestor struct {
	Kind string
	Name string
	UID  types.UID
}

// Ref is an object's "Kind/name", the value of a regarding.ancestor term.
func Ref(kind, name string) string { return kind + "/" + name }

// Encode returns the annotation value of chain, "" for an empty chain.
func Encode(chain []Ancestor) string {
	if len(chain) == 0 {
		return ""
	}
	values := make([]string, 0, 2*len(chain))
	for _, a := range chain {
		values = append(values, Ref(a.Kind, a.Name), string(a.UID))
	}
	b, err := json.Marshal(values)
	if err != nil {
		panic(err) // strings always marshal
	}
	return string(b)
}

// Decode reads an annotation value: "" is the empty chain.
func Decode(value string) ([]Ancestor, error) {
	if value == "" {
		return nil, nil
	}
	var values []string
	if err := json.Unmarshal([]byte(value), &values); err != nil {
		return nil, fmt.Errorf("%s: %w", Annotation, err)
	}
	if len(values)%2 != 0 {
		return nil, fmt.Errorf("%s: %d values, want a Kind/name and a UID for each ancestor", Annotation, len(values))
	}
	chain := make([]Ancestor, 0, len(values)/2)
	for i := 0; i < len(values); i += 2 {
		kind, name, ok := strings.Cut(values[i], "/")
		if !ok {
			return nil, fmt.Errorf("%s: %q is not a Kind/name", Annotation, values[i])
		}
		chain = append(chain, Ancestor{Kind: kind, Name: name, UID: types.UID(values[i+1])})
	}
	return chain, nil
}

// Contains tells whether chain, an annotation value, holds value: a
// "Kind/name" or a UID that ValidateRef or ValidateUID accepts. Such a
// value holds none of the characters that separate the chain's elements,
// so it is an element exactly when it stands between two quotes.
func Contains(chain, value string) bool {
	if value == "" {
		return false
	}
	for rest, offset := chain, 0; ; {
		i := strings.Index(rest, value)
		if i < 0 {
			return false
		}
		at := offset + i
		if at > 0 && at+len(value) < len(chain) && chain[at-1] == '"' && chain[at+len(value)] == '"' {
			return true
		}
		offset = at + 1
		rest = chain[offset:]
	}
}

// Matches tells whether an event about the object self (its kind, name
// and UID) with chain (an annotation value) is selected by an ancestor
// term's value: the object itself or one of its ancestors.
func Matches(selfKind, selfName, selfUID, chain, value string) bool {
	if kind, name, ok := strings.Cut(value, "/"); ok {
		if kind == selfKind && name == selfName {
			return true
		}
	} else if value == selfUID {
		return true
	}
	return Contains(chain, value)
}

// Terms returns every value an ancestor term selects the event with: the
// regarding object's "Kind/name" and UID (when set) and those of its
// ancestors in chain; a chain that is no annotation value adds nothing.
func Terms(selfKind, selfName, selfUID, chain string) []string {
	var values []string
	if chain != "" {
		if err := json.Unmarshal([]byte(chain), &values); err != nil {
			values = nil
		}
	}
	if selfUID != "" {
		values = append(values, selfUID)
	}
	if selfKind != "" && selfName != "" {
		values = append(values, Ref(selfKind, selfName))
	}
	return values
}

// ValidateRef checks the value of a regarding.ancestor term: Kind/name.
func ValidateRef(value string) error {
	kind, name, ok := strings.Cut(value, "/")
	if !ok || kind == "" || name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("%q: must be Kind/name, such as Deployment/web", value)
	}
	if strings.ContainsFunc(kind, func(r rune) bool { return !isASCIIAlphanumeric(r) }) {
		return fmt.Errorf("%q: the kind must be letters and digits, such as Deployment", value)
	}
	return validateChars(value)
}

// ValidateUID checks the value of a regarding.ancestor.uid term.
func ValidateUID(value string) error {
	if value == "" || strings.Contains(value, "/") {
		return fmt.Errorf("%q: must be an object's UID", value)
	}
	return validateChars(value)
}

func validateChars(value string) error {
	if strings.ContainsAny(value, `"\,[]`) || strings.ContainsFunc(value, func(r rune) bool { return r < ' ' }) {
		return fmt.Errorf("%q: no object's kind, name or UID holds a quote, backslash, comma, bracket or control character", value)
	}
	return nil
}

func isASCIIAlphanumeric(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
}
