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
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/summaries"
	"github.com/kube-events/events-apiserver/pkg/archive"
)

// key is what the events of one summary share.
type key struct {
	namespace, eventType, reason, regardingKind, reportingController string
}

// keyOf is the summary an event counts in. Its reporting controller is the
// one events.k8s.io shows: reportingController, else source.component.
func keyOf(e *core.Event) key {
	return key{
		namespace:           e.Namespace,
		eventType:           e.Type,
		reason:              e.Reason,
		regardingKind:       e.InvolvedObject.Kind,
		reportingController: cmp.Or(e.ReportingController, e.Source.Component),
	}
}

// object names a regarded object; its kind is in the key.
type object struct {
	namespace, name string
}

// tally is one summary being counted.
type tally struct {
	summary summaries.EventSummary
	objects map[object]struct{}
	// archived counts the distinct objects of the archive's rows (see
	// AddArchived), known those of them that Add may count too.
	archived int64
	known    map[object]struct{}
}

// distinctObjects counts the objects of t: those Add counted, and the
// archive's that are not among them.
func (t *tally) distinctObjects() int64 {
	n := int64(len(t.objects)) + t.archived
	for o := range t.known {
		if _, ok := t.objects[o]; ok {
			n--
		}
	}
	return n
}

// Summarizer counts events into summaries, one event at a time: it holds
// the summaries and the objects each regards, never the events.
type Summarizer struct {
	tallies map[key]*tally
}

// NewSummarizer returns a Summarizer that has counted nothing.
func NewSummarizer() *Summarizer {
	return &Summarizer{tallies: map[key]*tally{}}
}

// tally returns the tally of k, new if k has none.
func (s *Summarizer) tally(k key) *tally {
	t, ok := s.tallies[k]
	if !ok {
		t = &tally{summary: newSummary(k), objects: map[object]struct{}{}, known: map[object]struct{}{}}
		s.tallies[k] = t
	}
	return t
}

// Add counts an event.
func (s *Summarizer) Add(e *core.Event) {
	t := s.tally(keyOf(e))
	t.objects[object{namespace: e.InvolvedObject.Namespace, name: e.InvolvedObject.Name}] = struct{}{}
	t.observe(int64(core.Occurrences(e)), 1, core.FirstObserved(e), core.LastObserved(e))
}

// AddArchived counts a row the archive counted (archive.Archive.Summarize,
// by the rule of Add: the archive keeps core.Occurrences and
// core.FirstObserved of each state); its Known objects are those of the
// events Add counts or counted that it regards too.
func (s *Summarizer) AddArchived(row *archive.SummaryRow) {
	t := s.tally(key{
		namespace: row.Namespace, eventType: row.Type, reason: row.Reason,
		regardingKind: row.RegardingKind, reportingController: row.ReportingController,
	})
	t.archived += row.Objects
	for _, o := range row.Known {
		t.known[object{namespace: o.Namespace, name: o.Name}] = struct{}{}
	}
	t.observe(row.Occurrences, row.Events, row.FirstObserved, row.LastObserved)
}

// observe adds occurrences of events first and last observed as given.
func (t *tally) observe(occurrences, events int64, first, last time.Time) {
	sum := &t.summary
	sum.Occurrences += occurrences
	sum.Events += events
	if sum.FirstObserved.IsZero() || first.Before(sum.FirstObserved.Time) {
		sum.FirstObserved = metav1.NewMicroTime(first)
	}
	if last.After(sum.LastObserved.Time) {
		sum.LastObserved = metav1.NewMicroTime(last)
	}
}

// Summaries are the summaries counted so far, most occurrences first, then
// by namespace, type, reason, regarding kind and reporting controller.
func (s *Summarizer) Summaries() []summaries.EventSummary {
	out := make([]summaries.EventSummary, 0, len(s.tallies))
	for _, t := range s.tallies {
		t.summary.Objects = t.distinctObjects()
		out = append(out, t.summary)
	}
	slices.SortFunc(out, func(a, b summaries.EventSummary) int {
		return cmp.Or(
			cmp.Compare(b.Occurrences, a.Occurrences),
			cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Type, b.Type),
			cmp.Compare(a.Reason, b.Reason),
			cmp.Compare(a.RegardingKind, b.RegardingKind),
			cmp.Compare(a.ReportingController, b.ReportingController),
		)
	})
	return out
}

// newSummary is the empty summary of k.
func newSummary(k key) summaries.EventSummary {
	return summaries.EventSummary{
		ObjectMeta:          metav1.ObjectMeta{Namespace: k.namespace, Name: nameOf(k)},
		Type:                k.eventType,
		Reason:              k.reason,
		RegardingKind:       k.regardingKind,
		ReportingController: k.reportingController,
	}
}

// nameOf is a summary's name: its type and reason as DNS labels, for
// reading, then a digest of the whole key, for telling summaries apart
// (warning.backoff.1a2b3c4d).
func nameOf(k key) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{k.eventType, k.reason, k.regardingKind, k.reportingController}, "\x00")))
	return dnsLabel(k.eventType) + "." + dnsLabel(k.reason) + "." + hex.EncodeToString(sum[:4])
}

// maxLabelPart bounds each readable part of a name.
const maxLabelPart = 40

// dnsLabel is s lower-cased with every character a DNS label cannot hold
// replaced by '-', at most maxLabelPart long; "none" when nothing is left.
func dnsLabel(s string) string {
	label := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		default:
			return '-'
		}
	}, s)
	if len(label) > maxLabelPart {
		label = label[:maxLabelPart]
	}
	label = strings.Trim(label, "-")
	if label == "" {
		return "none"
	}
	return label
}
