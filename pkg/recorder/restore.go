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

package recorder

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/kube-events/events-apiserver/pkg/recorder/seriesid"
)

// storedEvent is an events.k8s.io/v1 Event as listed, with series.state,
// which k8s.io/api's EventSeries lacks (absent on kube-apiserver).
type storedEvent struct {
	eventsv1.Event `json:",inline"`
	Series         *storedSeries `json:"series,omitempty"`
}

type storedSeries struct {
	Count            int32            `json:"count"`
	LastObservedTime metav1.MicroTime `json:"lastObservedTime"`
	State            string           `json:"state,omitempty"`
}

type storedEventList struct {
	metav1.ListMeta `json:"metadata"`
	Items           []storedEvent `json:"items"`
}

// restoreListLimit is the page size of the list on start.
const restoreListLimit = 500

func (b *Broadcaster) nextRestore() (identity, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.restores) == 0 {
		return identity{}, false
	}
	return b.restores[0], true
}

// restore lists id's events and takes their live series up again; a
// series that ended while nobody recorded is finished. It says whether to
// back off and retry.
func (b *Broadcaster) restore(ctx context.Context, id identity) (time.Duration, bool) {
	stored, err := b.listOwn(ctx, id)
	if err != nil {
		if reason, delay, retry := b.retryable(err); retry && !b.isShutdown() {
			backoffsTotal.WithLabelValues(reason).Inc()
			b.logger.V(2).Info("Listing own events failed; backing off", "reportingController", id.controller, "reportingInstance", id.instance, "err", err, "delay", delay)
			return delay, true
		}
		b.logger.Error(err, "Listing own events failed: series of before the start are not continued", "reportingController", id.controller, "reportingInstance", id.instance)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.delays = b.opts.backoff()
	b.restores = b.restores[1:]
	b.identities[id] = true
	b.adoptLocked(stored)
	return 0, false
}

// listOwn lists the events id reported. events-apiserver selects them on
// the server; kube-apiserver lacks the reportingInstance (and, before
// events.k8s.io/v1 learnt it, reportingController) field label and
// answers 400, so the selection falls back to fewer labels and is always
// done here as well.
func (b *Broadcaster) listOwn(ctx context.Context, id identity) ([]storedEvent, error) {
	selectors := []fields.Set{
		{"reportingController": id.controller, "reportingInstance": id.instance},
		{"reportingController": id.controller},
		{},
	}
	var items []storedEvent
	var err error
	for _, selector := range selectors {
		items, err = b.list(ctx, fields.SelectorFromSet(selector).String())
		if !apierrors.IsBadRequest(err) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	var own []storedEvent
	for _, item := range items {
		if item.ReportingController == id.controller && item.ReportingInstance == id.instance {
			own = append(own, item)
		}
	}
	return own, nil
}

// list reads all pages, as JSON so that series.state comes along.
func (b *Broadcaster) list(ctx context.Context, fieldSelector string) ([]storedEvent, error) {
	var items []storedEvent
	continueToken := ""
	for {
		req := b.client.Get().Namespace(b.opts.RestoreNamespace).Resource("events").
			SetHeader("Accept", "application/json").MaxRetries(0).
			Param("limit", strconv.Itoa(restoreListLimit))
		if continueToken != "" {
			req = req.Param("continue", continueToken)
		}
		if fieldSelector != "" {
			req = req.Param("fieldSelector", fieldSelector)
		}
		raw, err := req.Do(ctx).Raw()
		if err != nil {
			return nil, err
		}
		var page storedEventList
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, err
		}
		items = append(items, page.Items...)
		if continueToken = page.Continue; continueToken == "" {
			return items, nil
		}
	}
}

// adoptLocked merges stored events into the table: per isomorphic key the
// newest one not Finished is continued when its last occurrence is more
// recent than FinishAfter, and finished otherwise; older ones are finished.
// Occurrences recorded before the list (not written yet) are added to the
// continued event's count instead of creating a new event.
func (b *Broadcaster) adoptLocked(stored []storedEvent) {
	now := b.opts.Clock.Now()
	newest := map[seriesid.Key]*entry{}
	for i := range stored {
		s := &stored[i]
		if s.Series != nil && s.Series.State == stateFinished {
			continue
		}
		event := s.DeepCopy()
		e := &entry{event: event, count: 1, lastObserved: s.EventTime.Time, created: true, written: 1, lastWrite: now}
		if s.Series != nil {
			e.count, e.written, e.started = s.Series.Count, s.Series.Count, true
			e.lastObserved = s.Series.LastObservedTime.Time
			event.Series = &eventsv1.EventSeries{Count: s.Series.Count, LastObservedTime: s.Series.LastObservedTime}
		}
		e.key = seriesid.OfEventsV1(event)
		if now.Sub(e.lastObserved) >= b.opts.FinishAfter {
			b.endLocked(e) // ended while nobody recorded it
			continue
		}
		if prev := newest[e.key]; prev != nil {
			if prev.lastObserved.After(e.lastObserved) {
				prev, e = e, prev
			}
			b.endLocked(prev)
		}
		newest[e.key] = e
	}
	for key, e := range newest {
		local := b.series[key]
		if local != nil && local.created {
			b.endLocked(e) // cannot happen: writes wait for the restore
			continue
		}
		if local != nil {
			// Occurrences since the start: they continue the stored event.
			local.event = e.event
			local.count += e.count
			local.created, local.started, local.written, local.lastWrite = true, e.started, e.written, now
			if local.lastObserved.Before(e.lastObserved) {
				local.lastObserved = e.lastObserved
			}
			continue
		}
		b.series[key] = e
	}
}
