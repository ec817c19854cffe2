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

package livestore

import (
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

// historyRecord is a change as the history keeps it: encoded, without the
// decoded objects the watchers were sent.
type historyRecord struct {
	eventType watch.EventType
	key       string
	rv        uint64
	value     []byte
	prevRV    uint64
	prevValue []byte // nil for an object created by the change
}

func (r *historyRecord) size() int { return len(r.key) + len(r.value) + len(r.prevValue) + 96 }

// history is the recent changes, for watches that resume from a
// resourceVersion: at most budget bytes of them, oldest dropped first.
type history struct {
	budget  int
	size    int
	records []historyRecord // records[head:] are kept, oldest first
	head    int
	// listRV is the revision of the list the table was loaded from: with
	// nothing dropped since, every change after it is here.
	listRV  uint64
	dropped bool
}

func newHistory(budget int) *history { return &history{budget: budget} }

// reset starts the history of a table loaded at listRV.
func (h *history) reset(listRV uint64) {
	*h = history{budget: h.budget, listRV: listRV}
}

func (h *history) add(c *change) {
	r := historyRecord{eventType: c.eventType, key: c.object.key, rv: c.object.rv, value: c.object.value}
	if c.prev != nil {
		r.prevRV, r.prevValue = c.prev.rv, c.prev.value
	}
	h.records = append(h.records, r)
	h.size += r.size()
	for h.size > h.budget && h.head < len(h.records)-1 {
		h.size -= h.records[h.head].size()
		h.records[h.head] = historyRecord{}
		h.head++
		h.dropped = true
	}
	if h.head > len(h.records)/2 && h.head > 1024 {
		h.records = append(h.records[:0:0], h.records[h.head:]...)
		h.head = 0
	}
}

// since is the changes after rv, or 410 Expired when some of them are no
// longer kept (the watch cache's "too old resource version").
func (h *history) since(rv uint64) ([]historyRecord, error) {
	kept := h.records[h.head:]
	oldest := h.listRV + 1
	if h.dropped && len(kept) > 0 {
		oldest = kept[0].rv
	}
	if rv+1 < oldest {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, oldest-1))
	}
	first := sort.Search(len(kept), func(i int) bool { return kept[i].rv > rv })
	return append([]historyRecord(nil), kept[first:]...), nil
}
