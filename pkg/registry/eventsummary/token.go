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

package eventsummary

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// tokenVersion is the format of continueToken.
const tokenVersion = 1

// continueToken is where the next page of summaries starts, and of which
// list: a token replayed against another namespace or selector is refused.
type continueToken struct {
	Version int `json:"v"`
	// Binding is a digest of the list's namespace and selectors as sent.
	Binding []byte `json:"b"`
	// Selector is the field selector the first page counted with, its
	// history window in absolute times.
	Selector string `json:"s"`
	// Offset is how many summaries the previous pages returned.
	Offset int `json:"o"`
}

var (
	// errInvalidToken is returned for a token that is no summaries token.
	errInvalidToken = errors.New("not a continue token of a list of event summaries")
	// errTokenBinding is returned for a token of another list.
	errTokenBinding = errors.New("the continue token was issued for another namespace or query")
)

// bindingOf is what a continue token is bound to: the namespace and the
// selectors of the list as sent.
func bindingOf(namespace string, labelSelector labels.Selector, fieldSelector fields.Selector) []byte {
	sum := sha256.Sum256([]byte(strings.Join([]string{namespace, labelSelector.String(), fieldSelector.String()}, "\x00")))
	return sum[:16]
}

// encodeToken returns the token continuing a list after offset summaries.
func encodeToken(binding []byte, selector string, offset int) string {
	data, _ := json.Marshal(continueToken{Version: tokenVersion, Binding: binding, Selector: selector, Offset: offset})
	return base64.RawURLEncoding.EncodeToString(data)
}

// decodeToken reads a token and checks it belongs to the list bound by
// binding; it returns the offset and the field selector to count with.
func decodeToken(token string, binding []byte) (offset int, selector string, err error) {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, "", errInvalidToken
	}
	var t continueToken
	if err := json.Unmarshal(data, &t); err != nil || t.Version != tokenVersion || t.Offset <= 0 {
		return 0, "", errInvalidToken
	}
	if string(t.Binding) != string(binding) {
		return 0, "", errTokenBinding
	}
	return t.Offset, t.Selector, nil
}
