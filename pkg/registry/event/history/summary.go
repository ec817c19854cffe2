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
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/labels"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/archive"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
)

// Summary is what a summary of a history list counts, each event once, as
// the list's pages return it: the events the live store answers for (their
// live state matches and is in the window), and the archive's rows for
// every other event, which leave those out.
type Summary struct {
	// Live are the live events, in their live state.
	Live []core.Event
	// Archived are the archive's rows; their Known objects are among
	// Live's regarded objects.
	Archived []archive.SummaryRow
	// ResourceVersion is the live store's at the read.
	ResourceVersion string
}

// Summarize counts the history list options ask for (history.since in its
// field selector) with the archive's help: the archive counts the events
// the live store does not answer for, rather than the summary reading
// each of them. It returns false, and nothing, when it cannot: a list
// without history.since (the live store's), a label selector (the archive
// keeps no labels), or more live events in the window than the archive
// can be told to leave out (archive.MaxExcept, MaxObjects); the caller then
// counts the list's pages. It refuses what a history list refuses, with
// the same errors.
func (r *REST) Summarize(ctx context.Context, options *metainternalversion.ListOptions) (Summary, bool, error) {
	if options == nil || (options.LabelSelector != nil && !options.LabelSelector.Empty()) {
		return Summary{}, false, nil
	}
	q, ok, err := parseQuery(options.FieldSelector, r.clock.Now())
	if err != nil {
		return Summary{}, false, apierrors.NewBadRequest(err.Error())
	}
	if !ok {
		return Summary{}, false, nil
	}
	if err := checkSelectors(options); err != nil {
		return Summary{}, false, apierrors.NewBadRequest(err.Error())
	}
	namespace := genericapirequest.NamespaceValue(ctx)
	if err := q.checkWindow(namespace); err != nil {
		return Summary{}, false, apierrors.NewBadRequest(err.Error())
	}
	release, err := r.inFlight.acquire(ctx)
	if err != nil {
		historyLists.WithLabelValues(resultThrottled).Inc()
		return Summary{}, false, err
	}
	defer release()
	start := r.clock.Now()
	s, ok, err := r.summarize(ctx, options, q, namespace)
	if ok || err != nil {
		historyListDuration.Observe(r.clock.Since(start).Seconds())
		historyLists.WithLabelValues(resultOf(err)).Inc()
	}
	return s, ok, err
}

// summarize reads the live events the history answers from the live store
// and has the archive count the others.
func (r *REST) summarize(ctx context.Context, options *metainternalversion.ListOptions, q query, namespace string) (Summary, bool, error) {
	live, ok, err := r.liveForSummary(ctx, options, q)
	if err != nil || !ok {
		return Summary{}, false, err
	}
	s := Summary{ResourceVersion: live.resourceVersion, Live: make([]core.Event, 0, len(live.items))}
	aq := archive.SummaryQuery{Namespace: namespace, Fields: q.fields, Since: q.since, Until: q.until}
	objects := map[archive.Object]bool{}
	for _, it := range live.items {
		s.Live = append(s.Live, *it.event)
		aq.Except = append(aq.Except, it.uid())
		o := archive.Object{Namespace: it.event.InvolvedObject.Namespace, Name: it.event.InvolvedObject.Name}
		if !objects[o] {
			objects[o] = true
			aq.Objects = append(aq.Objects, o)
		}
	}
	if len(aq.Except) > archive.MaxExcept || len(aq.Objects) > archive.MaxObjects {
		return Summary{}, false, nil
	}
	if s.Archived, err = r.archive.Summarize(ctx, aq); err != nil {
		return Summary{}, false, archiveError(ctx, err)
	}
	return s, true, nil
}

// liveForSummary reads the live events in q's window, up to
// archive.MaxExcept of them: from the timeline, newest first, or from the
// store's list a page at a time. It returns false once there are more:
// the caller then counts the list's pages, and no summary holds every
// live event at once.
func (r *REST) liveForSummary(ctx context.Context, options *metainternalversion.ListOptions, q query) (livePage, bool, error) {
	const most = archive.MaxExcept
	if r.timeline != nil && r.timeline.Fed() && !eventstorage.SelectsIndexedField(q.selector) {
		if resourceVersion, fresh, err := r.timeline.Sync(ctx, timelineWait); err == nil && fresh {
			page, err := r.liveFromTimeline(ctx, eventstorage.Matcher(labels.Everything(), q.selector), q, nil, most+1)
			if err == nil {
				page.resourceVersion = resourceVersion
				return page, len(page.items) <= most, nil
			}
		}
	}
	liveOptions := options.DeepCopy()
	liveOptions.FieldSelector = q.selector
	liveOptions.Limit, liveOptions.Continue = most+1, ""
	liveOptions.ResourceVersion, liveOptions.ResourceVersionMatch = "", ""
	var page livePage
	reads := 0
	defer func() { historyLiveReads.WithLabelValues(readList).Observe(float64(reads)) }()
	for {
		obj, err := r.REST.List(ctx, liveOptions)
		if err != nil {
			return livePage{}, false, err
		}
		list := obj.(*core.EventList)
		reads += len(list.Items)
		if page.resourceVersion == "" {
			page.resourceVersion = list.ResourceVersion
		}
		for i := range list.Items {
			event := &list.Items[i]
			if t := core.LastObserved(event); q.inWindow(t) {
				page.items = append(page.items, item{event: event, time: t})
			}
		}
		if len(page.items) > most {
			return livePage{}, false, nil
		}
		if list.Continue == "" {
			return page, true, nil
		}
		liveOptions.Continue = list.Continue
	}
}
