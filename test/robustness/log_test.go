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

package robustness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/robustness/validate"
)

// record is everything the clients did and read in one run.
type record struct {
	// watermark is the highest resourceVersion a write returned so far:
	// what a consistent read sent afterwards must include.
	watermark atomic.Int64

	mu      sync.Mutex
	lists   []validate.List
	gets    []validate.Get
	watches []validate.Watch
	// histories are the lists with history.since.
	histories []validate.HistoryList
	// ops counts requests by kind; outcomes by kind and answer (ok, an
	// HTTP code, "connection").
	ops      map[string]int
	outcomes map[string]int
	faults   map[string]int
	// latencies are the requests' durations by kind (not the watches').
	latencies map[string][]time.Duration
	// slowest is each kind's slowest request.
	slowest map[string]slowOp
	// start is when the run started; timeline holds, from then, each fault
	// and each request that hung, for the report.
	start    time.Time
	timeline []string
	// violations are answers no history can excuse: errors the API does
	// not allow for the request, the server exiting.
	violations []validate.Violation
}

func newRecord() *record {
	return &record{start: time.Now(), ops: map[string]int{}, outcomes: map[string]int{}, faults: map[string]int{}, latencies: map[string][]time.Duration{}, slowest: map[string]slowOp{}}
}

// slowOp is a request and how long it took.
type slowOp struct {
	d  time.Duration
	op string
}

// wrote raises the watermark to a write's resourceVersion.
func (r *record) wrote(rv string) {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return
	}
	for {
		old := r.watermark.Load()
		if n <= old || r.watermark.CompareAndSwap(old, n) {
			return
		}
	}
}

func (r *record) fault(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[kind]++
	r.note(time.Now(), "fault "+kind)
}

// note adds an entry to the timeline; r.mu is held.
func (r *record) note(at time.Time, what string) {
	r.timeline = append(r.timeline, fmt.Sprintf("%8.1fs %s", at.Sub(r.start).Seconds(), what))
}

func (r *record) violation(v validate.Violation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.violations = append(r.violations, v)
}

// outcome counts a request of kind and its answer, and records a
// violation when the API does not allow that error for it.
func (r *record) outcome(kind, op string, start time.Time, err error, allowed func(code int, status *metav1.Status) bool) {
	answer, code, status := classify(err)
	r.mu.Lock()
	r.ops[kind]++
	if !start.IsZero() {
		d := time.Since(start)
		r.latencies[kind] = append(r.latencies[kind], d)
		if answer == "hung" {
			r.note(start, fmt.Sprintf("%s (hung %v)", op, d.Round(time.Millisecond)))
		}
		if d > r.slowest[kind].d {
			r.slowest[kind] = slowOp{d: d, op: op + " answered " + answer}
		}
	}
	r.outcomes[kind+" "+answer]++
	r.mu.Unlock()
	if code != 0 && !allowed(code, status) {
		r.violation(validate.Violation{Kind: validate.KindUnexpected, Op: op, Detail: fmt.Sprintf("%d %s: %s", code, status.Reason, status.Message)})
	}
}

// classify names an error: "ok", its HTTP code, "hung" when the client
// gave up waiting, or "connection" when no server answered (the code is
// then 0).
func classify(err error) (answer string, code int, status *metav1.Status) {
	if err == nil {
		return "ok", 0, nil
	}
	var api apierrors.APIStatus
	if errors.As(err, &api) && api.Status().Code != 0 {
		s := api.Status()
		return strconv.Itoa(int(s.Code)), int(s.Code), &s
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "hung", 0, nil
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.Canceled) ||
		strings.Contains(err.Error(), "connection") || strings.Contains(err.Error(), "http2") {
		return "connection", 0, nil
	}
	return "other", -1, &metav1.Status{Message: err.Error()}
}

// readAllowed is the errors a read may answer: 410 where it named a
// resourceVersion or a continue token (too old), 429 (priority and
// fairness), 503 and 504 (etcd away, too large a resourceVersion after a
// wait), and 404 for a get.
func readAllowed(named bool, get bool) func(int, *metav1.Status) bool {
	return func(code int, _ *metav1.Status) bool {
		switch code {
		case 410:
			return named
		case 404:
			return get
		case 429, 503, 504:
			return true
		}
		return false
	}
}

// writeAllowed is the errors a write may answer: 404 (gone), 409
// (conflict, already exists), 429 (rate limits), 500 with a timeout from
// etcd, 503 and 504 (etcd away).
func writeAllowed(code int, status *metav1.Status) bool {
	switch code {
	case 404, 409, 429, 503, 504:
		return true
	case 500:
		return status != nil && (strings.Contains(status.Message, "timed out") || strings.Contains(status.Message, "timeout"))
	}
	return false
}

// addList, addGet and addWatch keep an answered read for the validation.
func (r *record) addList(l validate.List) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists = append(r.lists, l)
}

func (r *record) addGet(g validate.Get) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gets = append(r.gets, g)
}

func (r *record) addHistory(l validate.HistoryList) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.histories = append(r.histories, l)
}

func (r *record) addWatch(w validate.Watch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watches = append(r.watches, w)
}

// counts formats a map of counts as "k=v" in key order.
func counts(m map[string]int) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// latencyReport is each kind's median, p99 and slowest request.
func latencyReport(m map[string][]time.Duration) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%v/%v/%v", k, harness.Quantile(m[k], 0.5).Round(time.Millisecond),
			harness.Quantile(m[k], 0.99).Round(time.Millisecond), harness.Quantile(m[k], 1).Round(time.Millisecond)))
	}
	return strings.Join(parts, " ")
}

// slowestReport is each kind's slowest request, if slower than a second.
func slowestReport(m map[string]slowOp) string {
	var keys []string
	for k, s := range m {
		if s.d > time.Second {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%v: %s", m[k].d.Round(time.Millisecond), m[k].op))
	}
	return strings.Join(parts, "\n    ")
}
