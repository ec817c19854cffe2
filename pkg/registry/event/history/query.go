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

package history

import (
	"fmt"
	"slices"
	"sort"
	"time"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation/field"

	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
	"github.com/kube-events/events-apiserver/pkg/duration"
)

// MaxUnselectiveWindow is the longest window a cluster-wide history query
// may span without a selective term (see selectiveFields): every event of
// every namespace for a month reads a month of the whole archive, which no
// page of 100 is worth. A namespace's history may span the whole retention
// with any terms: it reads that namespace's share of the archive.
const MaxUnselectiveWindow = 24 * time.Hour

// selectiveFields are the fields whose = term picks out one object's
// events: a query with one may span the whole retention. The ancestor
// terms are not among them: they select a tree of objects (every Pod a
// Deployment had in a month, in every namespace), not one.
var selectiveFields = map[string]bool{
	eventconversion.PrefixInvolvedObject + "name": true,
	eventconversion.PrefixInvolvedObject + "uid":  true,
	eventconversion.PrefixRelated + "name":        true,
	eventconversion.PrefixRelated + "uid":         true,
	eventconversion.FieldName:                     true,
}

// MaxSelectorTerms and MaxSelectorBytes bound each selector of a history
// list (and summary): its terms (each value of a set term counts) and its
// length. Every term is a filter the archive applies to every record the
// window holds.
const (
	MaxSelectorTerms = 16
	MaxSelectorBytes = 2048
)

// checkSelectors refuses selectors beyond MaxSelectorTerms and
// MaxSelectorBytes, naming the selector at fault.
func checkSelectors(options *metainternalversion.ListOptions) error {
	var errs field.ErrorList
	check := func(name string, terms int, text string) {
		path := field.NewPath(name)
		if terms > MaxSelectorTerms {
			errs = append(errs, field.TooMany(path, terms, MaxSelectorTerms))
		}
		if len(text) > MaxSelectorBytes {
			errs = append(errs, field.TooLong(path, "", MaxSelectorBytes))
		}
	}
	if options.FieldSelector != nil {
		check("fieldSelector", len(options.FieldSelector.Requirements()), options.FieldSelector.String())
	}
	if options.LabelSelector != nil {
		terms := 0
		requirements, _ := options.LabelSelector.Requirements()
		for _, r := range requirements {
			terms += max(1, r.Values().Len())
		}
		check("labelSelector", terms, options.LabelSelector.String())
	}
	return errs.ToAggregate()
}

// query is a history list: the window and the other terms of its field
// selector.
type query struct {
	// since and until bound the window [since, until).
	since, until time.Time
	// rawSince and rawUntil are the terms as the client sent them, which a
	// continue token is bound to (a relative "24h" means the window of the
	// first page on every page).
	rawSince, rawUntil string
	// fields are the other terms, with the canonical labels.
	fields fields.Requirements
	// selector is the field selector without the history terms.
	selector fields.Selector
}

// hasHistoryTerms tells whether a field selector names history.since or
// history.until.
func hasHistoryTerms(selector fields.Selector) bool {
	if selector == nil {
		return false
	}
	for _, r := range selector.Requirements() {
		if r.Field == eventconversion.FieldHistorySince || r.Field == eventconversion.FieldHistoryUntil {
			return true
		}
	}
	return false
}

// parseQuery splits a list's field selector (its labels already the
// canonical ones) into the history window and the other terms. It returns
// false when the selector has no history.since: a plain list of the live
// store. Errors name the field selector term at fault.
func parseQuery(selector fields.Selector, now time.Time) (query, bool, error) {
	if selector == nil {
		return query{}, false, nil
	}
	var q query
	var since, until *fields.Requirement
	for _, r := range selector.Requirements() {
		switch r.Field {
		case eventconversion.FieldHistorySince, eventconversion.FieldHistoryUntil:
			path := field.NewPath("fieldSelector").Child(r.Field)
			if r.Operator != selection.Equals && r.Operator != selection.DoubleEquals {
				return query{}, false, field.Invalid(path, string(r.Operator)+r.Value, "only = is supported")
			}
			target := &since
			if r.Field == eventconversion.FieldHistoryUntil {
				target = &until
			}
			if *target != nil {
				return query{}, false, field.Duplicate(path, r.Value)
			}
			*target = &r
		default:
			q.fields = append(q.fields, r)
		}
	}
	if since == nil {
		if until != nil {
			return query{}, false, field.Required(field.NewPath("fieldSelector").Child(eventconversion.FieldHistorySince),
				"history.until reads the history only with history.since")
		}
		return query{}, false, nil
	}
	var err error
	q.rawSince = since.Value
	if q.since, err = parseWhen(eventconversion.FieldHistorySince, since.Value, now); err != nil {
		return query{}, false, err
	}
	q.until = now
	if until != nil {
		q.rawUntil = until.Value
		if q.until, err = parseWhen(eventconversion.FieldHistoryUntil, until.Value, now); err != nil {
			return query{}, false, err
		}
	}
	if !q.since.Before(q.until) {
		return query{}, false, field.Invalid(field.NewPath("fieldSelector").Child(eventconversion.FieldHistorySince), since.Value,
			fmt.Sprintf("must be before history.until (%s)", q.until.UTC().Format(time.RFC3339)))
	}
	q.selector = selectorOf(q.fields)
	return q, true, nil
}

// checkWindow refuses a cluster-wide window too long for the query's terms;
// namespace is the request's, "" for all namespaces.
func (q query) checkWindow(namespace string) error {
	if namespace != "" || q.until.Sub(q.since) <= MaxUnselectiveWindow {
		return nil
	}
	for _, r := range q.fields {
		if (r.Operator == selection.Equals || r.Operator == selection.DoubleEquals) && selectiveFields[r.Field] && r.Value != "" {
			return nil
		}
	}
	return field.Invalid(field.NewPath("fieldSelector").Child(eventconversion.FieldHistorySince), q.rawSince,
		fmt.Sprintf("a window longer than %v across all namespaces needs a term that selects one object's events: "+
			"regarding.name (involvedObject.name), regarding.uid, related.name, related.uid or metadata.name "+
			"(regarding.ancestor selects a tree of objects, and counts as none); "+
			"or list one namespace's history (-n), which may span the whole retention", MaxUnselectiveWindow))
}

// parseWhen reads a history term's value: a duration back from now (90m,
// 24h, 7d) or an RFC 3339 time.
func parseWhen(label, value string, now time.Time) (time.Time, error) {
	path := field.NewPath("fieldSelector").Child(label)
	if t, err := time.Parse(time.RFC3339Nano, value); err == nil {
		return t, nil
	}
	d, err := duration.Parse(value)
	if err != nil || d <= 0 {
		return time.Time{}, field.Invalid(path, value, "must be a positive duration back from now (90m, 24h, 7d) or an RFC 3339 time (2006-01-02T15:04:05Z)")
	}
	return now.Add(-d), nil
}

// selectorOf is the field selector of requirements, Everything when there
// are none.
func selectorOf(requirements fields.Requirements) fields.Selector {
	if len(requirements) == 0 {
		return fields.Everything()
	}
	selectors := make([]fields.Selector, 0, len(requirements))
	for _, r := range requirements {
		if r.Operator == selection.NotEquals {
			selectors = append(selectors, fields.OneTermNotEqualSelector(r.Field, r.Value))
		} else {
			selectors = append(selectors, fields.OneTermEqualSelector(r.Field, r.Value))
		}
	}
	return fields.AndSelectors(selectors...)
}

// binding is what a continue token is bound to: the namespace, the label
// selector, the other field terms (sorted) and the history terms as sent.
func (q query) binding(namespace, labelSelector string) []string {
	terms := make([]string, 0, len(q.fields))
	for _, r := range q.fields {
		terms = append(terms, r.Field+string(r.Operator)+r.Value)
	}
	sort.Strings(terms)
	return append([]string{namespace, labelSelector, q.rawSince, q.rawUntil}, terms...)
}

// AbsoluteWindow returns selector with its history terms as the RFC 3339
// times they mean at now (history.since=7d: seven days before now, and
// history.until now unless given), so that a reader that lists the same
// history again later, such as the event summaries' next page, reads the
// same window. A selector without history.since is returned as it is.
// Errors name the term at fault, as a history list's do.
func AbsoluteWindow(selector fields.Selector, now time.Time) (fields.Selector, error) {
	q, ok, err := parseQuery(selector, now)
	if err != nil || !ok {
		return selector, err
	}
	terms := append(slices.Clone(q.fields),
		fields.Requirement{Field: eventconversion.FieldHistorySince, Operator: selection.Equals, Value: q.since.UTC().Format(time.RFC3339Nano)},
		fields.Requirement{Field: eventconversion.FieldHistoryUntil, Operator: selection.Equals, Value: q.until.UTC().Format(time.RFC3339Nano)})
	return selectorOf(terms), nil
}
