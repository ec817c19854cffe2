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

// Package takeoverprobe probes events.k8s.io/v1 through kube-apiserver
// while takeover mode is switched on or off: who answers each write (our
// server's admission sets series.state, kube-apiserver's strategy does not),
// and which writes and lists fail, and for how long. The takeover
// integration test and the e2e suite run it.
package takeoverprobe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	ourv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
)

// Who answered a write of events.k8s.io/v1 through kube-apiserver.
const (
	AnsweredByUs            = "events-apiserver"
	AnsweredByKubeAPIServer = "kube-apiserver"
)

// Interval is how often a Prober writes and lists.
const Interval = 20 * time.Millisecond

// answer is one probe's outcome: who stored the write, or the failure.
type answer struct {
	at     time.Time
	by     string // AnsweredByUs or AnsweredByKubeAPIServer; "" when failed
	failed string // "404", "503", "connection refused"...; "" when stored
}

// probes numbers the probes of every prober: each writes a new event.
var probes atomic.Int64

// Prober writes an events.k8s.io/v1 series through kube-apiserver every
// Interval, with no retry, and lists the namespace's events.k8s.io
// events, as `kubectl get events.events.k8s.io` does, and records the
// answers. Each write is a new series of its own reporter and object, so
// that no rate limit applies: our admission answers it with series.state
// Ongoing, kube-apiserver's strategy knows no state.
type Prober struct {
	namespace string
	kube      kubernetes.Interface

	mu      sync.Mutex
	writes  []answer
	lists   []answer
	stopped chan struct{}
	cancel  context.CancelFunc
}

// Start starts a Prober of namespace through kube, until Stop.
func Start(ctx context.Context, kube kubernetes.Interface, namespace string) *Prober {
	ctx, cancel := context.WithCancel(ctx)
	p := &Prober{namespace: namespace, kube: kube, stopped: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(p.stopped)
		for ctx.Err() == nil {
			write := p.write(ctx, int(probes.Add(1)))
			list := p.list(ctx)
			if ctx.Err() != nil {
				return // stopped while probing: no answer
			}
			p.mu.Lock()
			p.writes, p.lists = append(p.writes, write), append(p.lists, list)
			p.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(Interval):
			}
		}
	}()
	return p
}

func (p *Prober) write(ctx context.Context, i int) answer {
	now := metav1.NewMicroTime(time.Now())
	event := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("probe-%d", i), Namespace: p.namespace},
		EventTime:           now,
		Series:              &eventsv1.EventSeries{Count: 2, LastObservedTime: now},
		ReportingController: "example.com/prober",
		ReportingInstance:   fmt.Sprintf("prober-%d", i),
		Action:              "Probe",
		Reason:              "Probed",
		Regarding: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: p.namespace, Name: fmt.Sprintf("probe-%d", i), UID: types.UID(fmt.Sprintf("uid-probe-%d", i)),
		},
		Type: corev1.EventTypeNormal,
	}
	body, err := json.Marshal(event)
	if err != nil {
		panic(err)
	}
	raw, err := p.kube.EventsV1().RESTClient().Post().MaxRetries(0).
		Namespace(p.namespace).Resource("events").Body(body).Do(ctx).Raw()
	if err != nil {
		return answer{at: time.Now(), failed: failure(err)}
	}
	var stored ourv1.Event
	if err := json.Unmarshal(raw, &stored); err != nil {
		return answer{at: time.Now(), failed: err.Error()}
	}
	if stored.Series != nil && stored.Series.State == ourv1.EventSeriesStateOngoing {
		return answer{at: time.Now(), by: AnsweredByUs}
	}
	return answer{at: time.Now(), by: AnsweredByKubeAPIServer}
}

func (p *Prober) list(ctx context.Context) answer {
	err := p.kube.EventsV1().RESTClient().Get().MaxRetries(0).
		Namespace(p.namespace).Resource("events").Param("limit", "1").Do(ctx).Error()
	if err != nil {
		return answer{at: time.Now(), failed: failure(err)}
	}
	return answer{at: time.Now(), by: "listed"}
}

// failure names an error by its HTTP code, or by what failed.
func failure(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Sprint(status.Status().Code)
	}
	switch msg := err.Error(); {
	case strings.Contains(msg, "connection refused"):
		return "connection refused"
	case strings.Contains(msg, "EOF"), strings.Contains(msg, "connection reset"):
		return "connection closed"
	default:
		return msg
	}
}

// Stop stops probing and waits for the last probe.
func (p *Prober) Stop() {
	p.cancel()
	<-p.stopped
}

// WaitAnsweredBy waits up to timeout until n writes in a row were
// answered by who.
func (p *Prober) WaitAnsweredBy(ctx context.Context, who string, n int, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, Interval, timeout, true, func(context.Context) (bool, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(p.writes) < n {
			return false, nil
		}
		for _, a := range p.writes[len(p.writes)-n:] {
			if a.by != who {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the last %d writes through kube-apiserver: %s, want each answered by %s", n, p.Summary(), who)
	}
	return nil
}

// Summary says, of the answers so far, which failed, over how long, and
// who answered the others.
func (p *Prober) Summary() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return "writes: " + summarize(p.writes) + "; lists: " + summarize(p.lists)
}

// FailureWindow is the time from the first failed answer to the end of
// the last one, and how many failed.
func (p *Prober) FailureWindow() (writes, lists time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return window(p.writes), window(p.lists)
}

// window is the time from the first failed answer to the last, plus the
// probe interval (a failure began at most one probe before it was seen).
func window(answers []answer) time.Duration {
	var first, last time.Time
	for _, a := range answers {
		if a.failed == "" {
			continue
		}
		if first.IsZero() {
			first = a.at
		}
		last = a.at
	}
	if first.IsZero() {
		return 0
	}
	return last.Sub(first) + Interval
}

// summarize counts the answers by who stored them or how they failed, with
// the window of each kind of failure.
func summarize(answers []answer) string {
	counts := map[string]int{}
	failures := map[string][]answer{}
	for _, a := range answers {
		if a.failed != "" {
			failures[a.failed] = append(failures[a.failed], a)
			continue
		}
		counts[a.by]++
	}
	var parts []string
	for _, by := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[by], by))
	}
	for _, kind := range slices.Sorted(maps.Keys(failures)) {
		parts = append(parts, fmt.Sprintf("%d failed %s within %v", len(failures[kind]), kind, window(failures[kind]).Round(time.Millisecond)))
	}
	return fmt.Sprintf("%d: %s", len(answers), strings.Join(parts, ", "))
}
