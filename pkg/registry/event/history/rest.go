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

// Package history answers lists that ask for history: a list whose field
// selector holds history.since=<when> (and optionally history.until=<when>)
// reads the live store and the archive, and returns one item per event in
// the window, its newest state, newest first, paginated with limit and
// continue. Every other request, watches included, is the live store's:
// informers and kubectl get -w see exactly what they always saw.
package history

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/continuetoken"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
	"github.com/kube-events/events-apiserver/pkg/storedevent"
)

const (
	// MaxPageSize is the most items a page of history holds; a larger
	// limit gets pages of this size, each with its continue token.
	MaxPageSize = 1000
	// MaxInFlight is how many history lists the server answers at once;
	// more are refused with 429 and a Retry-After.
	MaxInFlight = 4
	// MaxInFlightPerUser is how many of them one user may have: a user
	// who floods the history holds half the slots, never all.
	MaxInFlightPerUser = 2
	// MaxArchiveScan and MaxArchiveQueries bound the work of one page: the
	// archive records it reads, and the archive queries it makes, to fill
	// itself. A page whose label selector (or whose live events) leave
	// most records out may end short of its limit, with a continue token
	// where the reading stopped, as kube's pages with a selector may.
	MaxArchiveScan    = 10 * MaxPageSize
	MaxArchiveQueries = 8
	// retryAfterSeconds is the Retry-After of that 429.
	retryAfterSeconds = 1
	// timelineWait is how long a page waits for the timeline to catch up
	// with the store before it reads the store's list instead.
	timelineWait = 3 * time.Second
)

// REST is the events store with history: List reads the archive too when
// asked; every other verb is the store's.
type REST struct {
	*eventstorage.REST
	archive  archive.Archive
	decoder  runtime.Decoder
	timeline *eventstorage.Timeline
	tokens   *continuetoken.Codec
	clock    clock.PassiveClock
	inFlight *slots
}

var (
	_ rest.StandardStorage      = &REST{}
	_ rest.ShortNamesProvider   = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

// New returns the store with history from the archive; decoder is the
// store's storage codec, which decodes the archive's records; timeline is
// the store's (eventstorage.WithTimeline), which pages read the live
// events from in order when it is fed; tokens signs the continue tokens.
func New(store *eventstorage.REST, a archive.Archive, decoder runtime.Decoder, timeline *eventstorage.Timeline, tokens *continuetoken.Codec) *REST {
	registerMetrics()
	return &REST{REST: store, archive: a, decoder: decoder, timeline: timeline, tokens: tokens,
		clock: clock.RealClock{}, inFlight: newSlots()}
}

// Watch is the store's; a watch with history terms is refused: history is
// what was, a watch follows what comes.
func (r *REST) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	if options != nil && hasHistoryTerms(options.FieldSelector) {
		return nil, apierrors.NewBadRequest("fieldSelector: history.since and history.until are for lists only: " +
			"a watch follows the live store; list with them, then watch without them")
	}
	return r.REST.Watch(ctx, options)
}

// DeleteCollection is the store's; history terms are refused, as the
// archive is not deleted from.
func (r *REST) DeleteCollection(ctx context.Context, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions, listOptions *metainternalversion.ListOptions) (runtime.Object, error) {
	if listOptions != nil && hasHistoryTerms(listOptions.FieldSelector) {
		return nil, apierrors.NewBadRequest("fieldSelector: history.since and history.until are for lists only; the history is not deleted from")
	}
	return r.REST.DeleteCollection(ctx, deleteValidation, options, listOptions)
}

// List is the store's, unless the field selector holds history.since: then
// it is a page of history (see the package comment).
func (r *REST) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	if options == nil {
		return r.REST.List(ctx, options)
	}
	now := r.clock.Now()
	q, ok, err := parseQuery(options.FieldSelector, now)
	if err != nil {
		historyLists.WithLabelValues(resultInvalid).Inc()
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if !ok {
		return r.REST.List(ctx, options)
	}
	if err := checkSelectors(options); err != nil {
		historyLists.WithLabelValues(resultInvalid).Inc()
		return nil, apierrors.NewBadRequest(err.Error())
	}
	release, err := r.inFlight.acquire(ctx)
	if err != nil {
		historyLists.WithLabelValues(resultThrottled).Inc()
		return nil, err
	}
	defer release()
	start := r.clock.Now()
	list, err := r.listHistory(ctx, options, q)
	historyListDuration.Observe(r.clock.Since(start).Seconds())
	historyLists.WithLabelValues(resultOf(err)).Inc()
	return list, err
}

// item is one event of a history page, with its order key.
type item struct {
	event *core.Event
	time  time.Time
}

func (i item) uid() string { return string(i.event.UID) }

// newestFirst orders items by time, newest first, then by UID.
func newestFirst(a, b item) int {
	if c := b.time.Compare(a.time); c != 0 {
		return c
	}
	return cmp.Compare(a.uid(), b.uid())
}

// listHistory answers one page: the live events in the window after the
// cursor, and the archive's, less those whose live state is in the window
// (it is their newest), merged newest first: each event once, with its
// newest state in the window.
func (r *REST) listHistory(ctx context.Context, options *metainternalversion.ListOptions, q query) (runtime.Object, error) {
	namespace := genericapirequest.NamespaceValue(ctx)
	labelSelector := options.LabelSelector
	if labelSelector == nil {
		labelSelector = labels.Everything()
	}
	binding := q.binding(namespace, labelSelector.String())
	var after *archive.Cursor
	if options.Continue != "" {
		since, until, cursor, err := r.decodeToken(ctx, options.Continue, binding)
		if err != nil {
			return nil, continuetoken.APIError(err)
		}
		q.since, q.until, after = since, until, &cursor
	}
	if err := q.checkWindow(namespace); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	limit := int(options.Limit)
	unpaged := limit <= 0
	if unpaged || limit > MaxPageSize {
		limit = MaxPageSize
	}

	live, err := r.readLive(ctx, options, labelSelector, q, after, limit+1)
	if err != nil {
		return nil, err
	}
	items := live.items

	// The archive: pages until it has given limit events that are not
	// live, or has no more, or the page's work is done (scanArchive).
	aq := archive.Query{Namespace: namespace, Fields: q.fields, Since: q.since, Until: q.until, Limit: limit + 1, After: after}
	if !labelSelector.Empty() {
		// Most records may be left out: read them in larger pages.
		aq.Limit = MaxPageSize + 1
	}
	archived, stopped, err := r.scanArchive(ctx, aq, live, labelSelector, limit)
	if err != nil {
		return nil, err
	}
	items = append(items, archived...)

	slices.SortFunc(items, newestFirst)
	if stopped != nil {
		// Nothing older than where the reading stopped is known yet.
		items = slices.DeleteFunc(items, func(it item) bool { return !stopped.Before(it.time, it.uid()) })
	}
	more := len(items) > limit || stopped != nil
	if unpaged && more {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("limit: the history holds more than %d events for this query: "+
			"list it in pages with limit and continue (kubectl does)", MaxPageSize))
	}
	next := stopped
	if len(items) > limit {
		items = items[:limit]
		last := items[limit-1]
		next = &archive.Cursor{Time: last.time, UID: last.uid()}
	}
	list := &core.EventList{Items: make([]core.Event, len(items))}
	for i, it := range items {
		list.Items[i] = *it.event
	}
	list.ResourceVersion = live.resourceVersion
	if next != nil {
		if list.Continue, err = r.encodeToken(ctx, binding, q, *next); err != nil {
			return nil, continuetoken.APIError(err)
		}
	}
	return list, nil
}

// scanArchive reads the archive's states of aq that the live page does not
// answer for and labelSelector matches, until it has more than limit, or
// the archive has no more (stopped nil), or it has read MaxArchiveScan
// records or made MaxArchiveQueries queries: stopped is then where the
// reading stopped, which the page does not go past.
func (r *REST) scanArchive(ctx context.Context, aq archive.Query, live livePage, labelSelector labels.Selector, limit int) (items []item, stopped *archive.Cursor, err error) {
	scanned := 0
	for queries := 0; ; queries++ {
		if queries == MaxArchiveQueries || scanned >= MaxArchiveScan {
			return items, aq.After, nil
		}
		page, err := r.archive.Query(ctx, aq)
		if err != nil {
			return nil, nil, archiveError(ctx, err)
		}
		scanned += len(page.Records)
		for _, record := range page.Records {
			answered, err := live.answers(ctx, record)
			if err != nil {
				return nil, nil, err
			}
			if answered {
				continue
			}
			event, err := r.decode(record)
			if err != nil {
				return nil, nil, apierrors.NewInternalError(fmt.Errorf("decoding the archived event %s/%s: %w", record.Namespace, record.Name, err))
			}
			if !labelSelector.Matches(labels.Set(event.Labels)) {
				continue
			}
			items = append(items, item{event: event, time: record.Time})
		}
		if page.Next == nil {
			return items, nil, nil
		}
		aq.After = page.Next
		if len(items) > limit {
			return items, nil, nil
		}
	}
}

// livePage is what a page of history reads from the live store.
type livePage struct {
	// items are the live events the page may answer with: those that
	// match, observed in the window after the cursor.
	items []item
	// resourceVersion is the live store's at the read.
	resourceVersion string
	// answers says whether the live store answers for the event of an
	// archived state: its live state matches and is in the window, and so
	// newer than every archived state the window holds.
	answers func(ctx context.Context, record archive.Record) (bool, error)
}

// inWindow says whether an observation is in q's window.
func (q query) inWindow(t time.Time) bool {
	return !t.Before(q.since) && t.Before(q.until)
}

// liveFromList reads every matching live event, as a list without the
// history terms would return them: for a selector that names an indexed
// field (one object's events, an index bucket), or without a timeline.
func (r *REST) liveFromList(ctx context.Context, options *metainternalversion.ListOptions, q query, after *archive.Cursor) (livePage, error) {
	liveOptions := options.DeepCopy()
	liveOptions.FieldSelector = q.selector
	liveOptions.Limit, liveOptions.Continue = 0, ""
	liveOptions.ResourceVersion, liveOptions.ResourceVersionMatch = "", ""
	obj, err := r.REST.List(ctx, liveOptions)
	if err != nil {
		return livePage{}, err
	}
	list := obj.(*core.EventList)
	// An event whose live state left the window (written to after the
	// first page's until) is answered by the archive with its newest
	// state in the window, so that it keeps its place across pages.
	inWindow := make(map[string]bool, len(list.Items))
	historyLiveReads.WithLabelValues(readList).Observe(float64(len(list.Items)))
	page := livePage{resourceVersion: list.ResourceVersion}
	for i := range list.Items {
		event := &list.Items[i]
		t := core.LastObserved(event)
		if !q.inWindow(t) {
			continue
		}
		inWindow[string(event.UID)] = true
		if after != nil && after.Before(t, string(event.UID)) {
			continue
		}
		page.items = append(page.items, item{event: event, time: t})
	}
	page.answers = func(_ context.Context, record archive.Record) (bool, error) {
		return inWindow[record.UID], nil
	}
	return page, nil
}

// readLive reads the live side of a page: the newest n matching events
// from the timeline, or, for a selector that names an indexed field (one
// object's events, an index bucket) and where the timeline cannot answer,
// every matching event.
func (r *REST) readLive(ctx context.Context, options *metainternalversion.ListOptions, labelSelector labels.Selector, q query, after *archive.Cursor, n int) (livePage, error) {
	if r.timeline == nil || !r.timeline.Fed() || eventstorage.SelectsIndexedField(q.selector) {
		return r.liveFromList(ctx, options, q, after)
	}
	// As fresh as a consistent list: every change etcd had now. A timeline
	// that cannot say so (etcd unreachable, the store's cache relisting)
	// leaves the page to the list, whose errors are the store's.
	resourceVersion, fresh, err := r.timeline.Sync(ctx, timelineWait)
	if err != nil || !fresh {
		return r.liveFromList(ctx, options, q, after)
	}
	page, err := r.liveFromTimeline(ctx, eventstorage.Matcher(labelSelector, q.selector), q, after, n)
	if err != nil {
		// The store's cache behind the timeline (relisting): the list answers.
		klog.FromContext(ctx).V(2).Info("History page reads the live store's list", "reason", err)
		return r.liveFromList(ctx, options, q, after)
	}
	page.resourceVersion = resourceVersion
	return page, nil
}

// liveFromTimeline reads the newest n matching live events in the window
// after the cursor from the store's timeline, which orders the live events
// by their last observation: a read bounded by the page, not by the live
// store.
func (r *REST) liveFromTimeline(ctx context.Context, pred storage.SelectionPredicate, q query, after *archive.Cursor, n int) (livePage, error) {
	namespace := genericapirequest.NamespaceValue(ctx)
	matches := func(event *core.Event) (bool, error) {
		return pred.Matches(event)
	}
	from := eventstorage.Position{Time: q.until}
	if after != nil && after.Time.Before(q.until) {
		from = eventstorage.Position{Time: after.Time, UID: after.UID}
	}
	var page livePage
	var matchErr error
	reads := 0
	defer func() { historyLiveReads.WithLabelValues(readTimeline).Observe(float64(reads)) }()
	err := r.timeline.Newest(ctx, namespace, from, func(event *core.Event) bool {
		reads++
		t := core.LastObserved(event)
		if !t.Before(q.until) {
			return true // at until: outside the window
		}
		if t.Before(q.since) {
			return false // and so is every older event
		}
		ok, err := matches(event)
		if err != nil {
			matchErr = err
			return false
		}
		if ok {
			page.items = append(page.items, item{event: event.DeepCopy(), time: t})
		}
		return len(page.items) < n
	})
	if err = cmp.Or(err, matchErr); err != nil {
		return livePage{}, apierrors.NewInternalError(fmt.Errorf("reading the live events in order: %w", err))
	}
	// The page answers for the events it read live, whatever the
	// timeline holds of them by the time the archive is read: else an
	// event changed meanwhile would be in the page twice.
	read := make(map[string]bool, len(page.items))
	for _, it := range page.items {
		read[it.uid()] = true
	}
	page.answers = func(ctx context.Context, record archive.Record) (bool, error) {
		if read[record.UID] {
			return true, nil
		}
		event, err := r.timeline.Get(ctx, types.NamespacedName{Namespace: record.Namespace, Name: record.Name})
		if err != nil {
			return false, apierrors.NewInternalError(fmt.Errorf("reading the live event %s/%s: %w", record.Namespace, record.Name, err))
		}
		if event == nil || string(event.UID) != record.UID || !q.inWindow(core.LastObserved(event)) {
			return false, nil
		}
		ok, err := matches(event)
		if err != nil {
			return false, apierrors.NewInternalError(err)
		}
		return ok, nil
	}
	return page, nil
}

// decode reads an archived state into the internal Event, with its name,
// namespace, UID and the resourceVersion it was written at, which the
// record holds beside the object (see archive.Record.Object).
func (r *REST) decode(record archive.Record) (*core.Event, error) {
	event, err := storedevent.Decode(r.decoder, record.Object)
	if err != nil {
		return nil, err
	}
	event.Name, event.Namespace, event.UID = record.Name, record.Namespace, types.UID(record.UID)
	event.ResourceVersion = record.ResourceVersion
	return event, nil
}

// archiveError is the API error of a failed archive query: 503 when the
// archive cannot answer completely (never a short page), 400 for a query
// it refuses.
func archiveError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, archive.ErrInvalidQuery):
		return apierrors.NewBadRequest(err.Error())
	case errors.Is(err, archive.ErrUnavailable):
		klog.FromContext(ctx).Error(err, "History query failed: archive unavailable")
		return apierrors.NewServiceUnavailable("the event history is unavailable right now; the live events are: list without history.since")
	case ctx.Err() != nil:
		return apierrors.NewTimeoutError("the history query did not finish in time", retryAfterSeconds)
	default:
		return apierrors.NewInternalError(fmt.Errorf("querying the event history: %w", err))
	}
}
