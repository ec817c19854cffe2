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

// Package eventsummary serves the event summaries: a list of them counts
// the events that a list of events with the same selectors returns (with
// history.since, the history's, under the same rules), one summary per
// namespace, type, reason, regarding kind and reporting controller, most
// occurrences first. Lists only: a summary is computed, never stored.
package eventsummary

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/events"
	"github.com/kube-events/events-apiserver/pkg/apis/summaries"
	"github.com/kube-events/events-apiserver/pkg/continuetoken"
	"github.com/kube-events/events-apiserver/pkg/registry/event/history"
)

// EventsPageSize is how many events a summary reads at a time: it counts
// a page, then reads the next, so that it holds one page of events at
// most, whatever it counts. It is the history's page size.
const EventsPageSize = history.MaxPageSize

// REST serves lists of event summaries.
type REST struct {
	events     rest.Lister
	authorizer authorizer.Authorizer
	tokens     *continuetoken.Codec
	clock      clock.PassiveClock
	TableConvertor
}

var (
	_ rest.Storage              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.Lister               = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

// NewREST returns the summaries of the events that events lists: the
// events storage the server serves, whose lists read the history when
// asked (history.REST) or the live store alone. authz is the server's
// authorizer, which a list of summaries asks whether its user may list the
// events it counts; tokens signs the continue tokens.
func NewREST(events rest.Lister, authz authorizer.Authorizer, tokens *continuetoken.Codec) *REST {
	return &REST{events: events, authorizer: authz, tokens: tokens, clock: clock.RealClock{}}
}

// eventGroups are the API groups events are served in, the one the
// forbidden message names first: the same events in either.
var eventGroups = []string{events.GroupName, core.GroupName}

// authorize allows a list of summaries only to a user who may list the
// events it counts, in the same namespace (all namespaces for a list of
// all namespaces): the summaries are those events, counted. Either event
// group's list grants it, as either lists the same events.
func (r *REST) authorize(ctx context.Context) error {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return apierrors.NewUnauthorized("event summaries need an authenticated user")
	}
	namespace := genericapirequest.NamespaceValue(ctx)
	var reasons []string
	for _, group := range eventGroups {
		decision, reason, err := r.authorizer.Authorize(ctx, authorizer.AttributesRecord{
			User: u, Verb: "list", Namespace: namespace, APIGroup: group, Resource: "events", ResourceRequest: true,
		})
		if decision == authorizer.DecisionAllow {
			return nil
		}
		if err != nil {
			reason = cmp.Or(reason, err.Error())
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
	}
	scope := "cluster scope"
	if namespace != "" {
		scope = fmt.Sprintf("the namespace %q", namespace)
	}
	msg := fmt.Sprintf("User %q cannot list resource %q in API group %q or %q in %s, which event summaries count",
		u.GetName(), "events", events.GroupName, core.GroupName, scope)
	if len(reasons) > 0 {
		msg += ": " + strings.Join(reasons, "; ")
	}
	return apierrors.NewForbidden(summaries.Resource("eventsummaries"), "", errors.New(msg))
}

// New returns an empty EventSummary.
func (r *REST) New() runtime.Object { return &summaries.EventSummary{} }

// Destroy releases nothing: the summaries hold no storage of their own.
func (r *REST) Destroy() {}

// NewList returns an empty EventSummaryList.
func (r *REST) NewList() runtime.Object { return &summaries.EventSummaryList{} }

// NamespaceScoped is true: a summary counts one namespace's events.
func (r *REST) NamespaceScoped() bool { return true }

// GetSingularName names one summary.
func (r *REST) GetSingularName() string { return "eventsummary" }

// List counts the events that a list of events with options' selectors
// returns and answers a page of the summaries. A continue token holds the
// window of the first page, in absolute times, so that the next pages count
// the same history.
func (r *REST) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	if err := r.authorize(ctx); err != nil {
		return nil, err
	}
	labelSelector, fieldSelector := labels.Everything(), fields.Everything()
	var limit int64
	var continueToken string
	if options != nil {
		if options.LabelSelector != nil {
			labelSelector = options.LabelSelector
		}
		if options.FieldSelector != nil {
			fieldSelector = options.FieldSelector
		}
		limit, continueToken = options.Limit, options.Continue
	}
	binding := bindingOf(genericapirequest.NamespaceValue(ctx), labelSelector, fieldSelector)

	offset := 0
	if continueToken != "" {
		var err error
		var window string
		if offset, window, err = r.decodeToken(ctx, continueToken, binding); err != nil {
			return nil, continuetoken.APIError(err)
		}
		if fieldSelector, err = fields.ParseSelector(window); err != nil {
			return nil, continuetoken.APIError(continuetoken.ErrInvalid)
		}
	} else {
		var err error
		if fieldSelector, err = history.AbsoluteWindow(fieldSelector, r.clock.Now()); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	}

	summarizer := NewSummarizer()
	resourceVersion, err := r.count(ctx, summarizer, labelSelector, fieldSelector)
	if err != nil {
		return nil, err
	}
	all := summarizer.Summaries()
	list := &summaries.EventSummaryList{}
	list.ResourceVersion = resourceVersion
	if offset > len(all) {
		offset = len(all)
	}
	end := len(all)
	if limit > 0 && int64(end-offset) > limit {
		end = offset + int(limit)
		remaining := int64(len(all) - end)
		list.RemainingItemCount = &remaining
		if list.Continue, err = r.encodeToken(ctx, binding, fieldSelector.String(), end); err != nil {
			return nil, continuetoken.APIError(err)
		}
	}
	list.Items = all[offset:end]
	return list, nil
}

// HistorySummarizer is an events storage that counts a summary of a
// history list with its archive's help (history.REST): the live events it
// answers with are counted here, the archive counts the others.
type HistorySummarizer interface {
	Summarize(ctx context.Context, options *metainternalversion.ListOptions) (history.Summary, bool, error)
}

// count counts the events the selectors pick into s: with the archive's
// help when the events storage can (HistorySummarizer), else page by page.
// It returns the resource version of the live store's read.
func (r *REST) count(ctx context.Context, s *Summarizer, labelSelector labels.Selector, fieldSelector fields.Selector) (string, error) {
	options := &metainternalversion.ListOptions{LabelSelector: labelSelector, FieldSelector: fieldSelector, Limit: EventsPageSize}
	if h, ok := r.events.(HistorySummarizer); ok {
		summary, ok, err := h.Summarize(ctx, options)
		if err != nil {
			return "", err
		}
		if ok {
			for i := range summary.Live {
				s.Add(&summary.Live[i])
			}
			for i := range summary.Archived {
				s.AddArchived(&summary.Archived[i])
			}
			return summary.ResourceVersion, nil
		}
	}
	return r.countPages(ctx, s, options)
}

// countPages pages through the events options pick and counts them into
// s. It returns the resource version of the last page.
func (r *REST) countPages(ctx context.Context, s *Summarizer, options *metainternalversion.ListOptions) (string, error) {
	for {
		obj, err := r.events.List(ctx, options)
		if err != nil {
			return "", err
		}
		list, ok := obj.(*core.EventList)
		if !ok {
			return "", apierrors.NewInternalError(fmt.Errorf("listing events returned %T", obj))
		}
		for i := range list.Items {
			s.Add(&list.Items[i])
		}
		if list.Continue == "" {
			return list.ResourceVersion, nil
		}
		options.Continue = list.Continue
	}
}
