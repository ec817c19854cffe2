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
	"context"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kube-events/events-apiserver/pkg/continuetoken"
)

// tokenKind names summary lists among the lists whose tokens the codec
// signs.
const tokenKind = "eventsummaries"

// offsetToken is where the next page of summaries starts. The codec signs
// it with the list's binding, so that neither it nor the list can be
// changed.
type offsetToken struct {
	// Selector is the field selector the first page counted with, its
	// history window in absolute times.
	Selector string `json:"s"`
	// Offset is how many summaries the previous pages returned.
	Offset int `json:"o"`
}

// bindingOf is what a continue token is bound to: the namespace and the
// selectors of the list as sent.
func bindingOf(namespace string, labelSelector labels.Selector, fieldSelector fields.Selector) []string {
	return []string{namespace, labelSelector.String(), fieldSelector.String()}
}

// encodeToken returns the token continuing a list after offset summaries.
func (r *REST) encodeToken(ctx context.Context, binding []string, selector string, offset int) (string, error) {
	return r.tokens.Encode(ctx, tokenKind, binding, offsetToken{Selector: selector, Offset: offset})
}

// decodeToken checks a token belongs to the list bound by binding; it
// returns the offset and the field selector to count with. Its errors are
// continuetoken's.
func (r *REST) decodeToken(ctx context.Context, token string, binding []string) (offset int, selector string, err error) {
	var t offsetToken
	if err := r.tokens.Decode(ctx, tokenKind, binding, token, &t); err != nil {
		return 0, "", err
	}
	if t.Offset <= 0 {
		return 0, "", continuetoken.ErrInvalid
	}
	return t.Offset, t.Selector, nil
}
