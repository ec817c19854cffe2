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

package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	eventsv1beta1 "k8s.io/api/events/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// serverRequestTimeout is the server's --request-timeout (the generic
// default): every request must be answered within it, plus clientSlack.
const serverRequestTimeout = 60 * time.Second

// clientSlack is what a client waits beyond serverRequestTimeout before it
// calls the request hung.
const clientSlack = 15 * time.Second

// defaultEventTTL is the server's --event-ttl when a fault does not set it.
const defaultEventTTL = time.Hour

// expiryMargin is how long before its earliest expiry an acknowledged
// event is still required to be readable: etcd's lease checks and clocks
// only make an event live longer, the margin keeps the rule clear of them.
const expiryMargin = 2 * time.Second

// Versions the reporters write through.
const (
	coreV1        = "v1"
	eventsV1beta1 = "events.k8s.io/v1beta1"
	eventsV1      = "events.k8s.io/v1"
)

// written is what a reporter wrote and the server acknowledged.
type written struct {
	version   string
	name      string
	uid       types.UID
	note      string
	regarding string
	reason    string
	// sent is when the create was sent: the event's lease, granted or
	// reused while the server handled it, lasts at least the TTL from then.
	sent time.Time
	// at is when the create was acknowledged.
	at time.Time
}

// load is a steady create load: reporters, each with its own client-go
// clientset, creating events at a fixed pace until stopped.
type load struct {
	namespace string
	prefix    string

	mu         sync.Mutex
	acked      map[string]written
	errors     map[string]int
	samples    map[string]string // the first error message per code
	maxLatency time.Duration
	hung       int
	lastAck    time.Time

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// reporterSpec is one reporter: the version it writes through, and how
// large its notes are (annotation bytes, to fill etcd).
type reporterSpec struct {
	version string
	// interval between creates; 0 means as fast as answered.
	interval time.Duration
	// padding adds an annotation of that many bytes.
	padding int
	// until stops the reporter once it returns true for an error.
	until func(error) bool
	// objects is how many objects the reporter's events are about (10 if
	// zero), named objectPrefix-<i>, "pod-" if empty.
	objects      int
	objectPrefix string
}

// steadyReporters are two reporters per version at 10 creates a second each.
func steadyReporters() []reporterSpec {
	var specs []reporterSpec
	for _, v := range []string{coreV1, eventsV1beta1, eventsV1} {
		for range 2 {
			specs = append(specs, reporterSpec{version: v, interval: 100 * time.Millisecond})
		}
	}
	return specs
}

// startLoad starts the reporters of specs against config, in namespace.
func startLoad(t *testing.T, config *rest.Config, namespace string, specs []reporterSpec) *load {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{namespace: namespace, prefix: namespace, acked: map[string]written{}, errors: map[string]int{},
		samples: map[string]string{}, cancel: cancel}
	for i, spec := range specs {
		c := rest.CopyConfig(config)
		c.Timeout = serverRequestTimeout + clientSlack
		c.UserAgent = fmt.Sprintf("fault-reporter-%d", i)
		clientset, err := kubernetes.NewForConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		l.done.Add(1)
		if spec.objects == 0 {
			spec.objects = 10
		}
		if spec.objectPrefix == "" {
			spec.objectPrefix = "pod"
		}
		go func() {
			defer l.done.Done()
			l.report(ctx, clientset, i, spec)
		}()
	}
	t.Cleanup(l.stop)
	return l
}

// stop stops the reporters and waits for their requests in flight.
func (l *load) stop() {
	l.cancel()
	l.done.Wait()
}

func (l *load) report(ctx context.Context, clientset kubernetes.Interface, index int, spec reporterSpec) {
	reporter := fmt.Sprintf("r%d", index)
	// Reporters start on different objects.
	offset := index * spec.objects / 6
	var ticker *time.Ticker
	if spec.interval > 0 {
		ticker = time.NewTicker(spec.interval)
		defer ticker.Stop()
	}
	for seq := 0; ; seq++ {
		if ticker != nil {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		} else if ctx.Err() != nil {
			return
		}
		w := written{
			version:   spec.version,
			name:      fmt.Sprintf("%s-%s-%d", l.prefix, reporter, seq),
			regarding: spec.objectPrefix + "-" + strconv.Itoa((seq+offset)%spec.objects),
			// A reason of its own: isomorphic creates would be folded into
			// one series by the server's storm protection, and this suite
			// checks that each acknowledged create is stored as sent.
			reason: fmt.Sprintf("FaultLoad%d", seq),
			note:   fmt.Sprintf("reporter %s event %d through %s", reporter, seq, spec.version),
		}
		start := time.Now()
		uid, err := create(context.WithoutCancel(ctx), clientset, l.namespace, w, spec.padding)
		latency := time.Since(start)
		l.mu.Lock()
		if latency > l.maxLatency {
			l.maxLatency = latency
		}
		if err == nil {
			w.uid, w.sent, w.at = uid, start, time.Now()
			l.acked[w.name] = w
			l.lastAck = w.at
		} else {
			code := errorCode(err)
			if code == "hung" {
				l.hung++
			}
			l.errors[code]++
			if _, ok := l.samples[code]; !ok {
				l.samples[code] = err.Error()
			}
		}
		l.mu.Unlock()
		if err != nil && spec.until != nil && spec.until(err) {
			return
		}
		if err != nil && ticker == nil {
			// Unpaced reporters back off a little on errors.
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// create writes w through its version with unmodified client-go.
func create(ctx context.Context, clientset kubernetes.Interface, namespace string, w written, padding int) (types.UID, error) {
	meta := metav1.ObjectMeta{Name: w.name, Namespace: namespace}
	if padding > 0 {
		meta.Annotations = map[string]string{"fault.example.com/padding": strings.Repeat("p", padding)}
	}
	now := time.Now()
	switch w.version {
	case coreV1:
		e, err := clientset.CoreV1().Events(namespace).Create(ctx, &corev1.Event{
			ObjectMeta:     meta,
			InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: w.regarding},
			Reason:         w.reason,
			Message:        w.note,
			Source:         corev1.EventSource{Component: "fault-suite"},
			FirstTimestamp: metav1.NewTime(now),
			LastTimestamp:  metav1.NewTime(now),
			Count:          1,
			Type:           corev1.EventTypeNormal,
		}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return e.UID, nil
	case eventsV1beta1:
		e, err := clientset.EventsV1beta1().Events(namespace).Create(ctx, &eventsv1beta1.Event{
			ObjectMeta:          meta,
			EventTime:           metav1.NewMicroTime(now),
			ReportingController: "example.com/fault-suite",
			ReportingInstance:   "fault-suite-0",
			Action:              "Testing",
			Reason:              w.reason,
			Regarding:           corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: w.regarding},
			Note:                w.note,
			Type:                corev1.EventTypeNormal,
		}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return e.UID, nil
	default:
		e, err := clientset.EventsV1().Events(namespace).Create(ctx, &eventsv1.Event{
			ObjectMeta:          meta,
			EventTime:           metav1.NewMicroTime(now),
			ReportingController: "example.com/fault-suite",
			ReportingInstance:   "fault-suite-0",
			Action:              "Testing",
			Reason:              w.reason,
			Regarding:           corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: w.regarding},
			Note:                w.note,
			Type:                corev1.EventTypeNormal,
		}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return e.UID, nil
	}
}

// errorCode names a failed request: its HTTP code when the server
// answered, "connection" when nothing listened or the connection broke,
// "hung" when the client gave up waiting.
func errorCode(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code != 0 {
		return strconv.Itoa(int(status.Status().Code))
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		return "hung"
	}
	return "connection"
}

// snapshot returns the acknowledged writes, the errors by code, the slowest
// request and the number of hung requests so far.
func (l *load) snapshot() (map[string]written, map[string]int, time.Duration, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	acked := make(map[string]written, len(l.acked))
	for k, v := range l.acked {
		acked[k] = v
	}
	errs := map[string]int{}
	for k, v := range l.errors {
		errs[k] = v
	}
	return acked, errs, l.maxLatency, l.hung
}

// errorSamples returns the first error message seen per code.
func (l *load) errorSamples() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	samples := map[string]string{}
	for k, v := range l.samples {
		samples[k] = v
	}
	return samples
}

// ackedCount is how many creates were acknowledged so far.
func (l *load) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// errorCount is how many creates failed so far.
func (l *load) errorCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, v := range l.errors {
		n += v
	}
	return n
}

// firstAckAfter is the time of the first acknowledgement after t, or zero.
func (l *load) firstAckAfter(t time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var first time.Time
	for _, w := range l.acked {
		if w.at.After(t) && (first.IsZero() || w.at.Before(first)) {
			first = w.at
		}
	}
	return first
}

// waitAcked waits until n more creates than now are acknowledged.
func (l *load) waitAcked(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	want := l.ackedCount() + n
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return l.ackedCount() >= want, nil
	})
	if err != nil {
		_, errs, _, _ := l.snapshot()
		t.Fatalf("%d creates acknowledged, want %d within %v (errors so far: %v)", l.ackedCount(), want, timeout, formatCodes(errs))
	}
}

// verify reads back, through each version, every acknowledged write in
// want and returns those missing or changed, for a server with the
// default TTL (see verifyTTL).
func verify(t *testing.T, config *rest.Config, namespace string, want map[string]written) []string {
	t.Helper()
	lost, _ := verifyTTL(t, config, namespace, want, defaultEventTTL)
	return lost
}

// verifyTTL reads back, through each version, every acknowledged write in
// want and returns those missing or changed, and how many were missing
// because they may have expired: an event lives at least ttl from when its
// create was sent, so one missing from a list that ended later than that
// (less expiryMargin) expired as it should, and is not lost. A changed
// event is lost whatever its age.
func verifyTTL(t *testing.T, config *rest.Config, namespace string, want map[string]written, ttl time.Duration) (lost []string, expired int) {
	t.Helper()
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got := map[string]written{}
	listed := map[string]time.Time{} // when each version's list ended
	for _, version := range []string{coreV1, eventsV1beta1, eventsV1} {
		items, err := list(ctx, clientset, namespace, version)
		if err != nil {
			t.Fatalf("listing events through %s: %v", version, err)
		}
		listed[version] = time.Now()
		for _, w := range items {
			got[version+"/"+w.name] = w
		}
	}
	for name, w := range want {
		stored, ok := got[w.version+"/"+name]
		switch {
		case !ok && !listed[w.version].Before(w.sent.Add(ttl-expiryMargin)):
			expired++
		case !ok:
			lost = append(lost, name+": missing")
		case stored.uid != w.uid || stored.note != w.note || stored.regarding != w.regarding || stored.reason != w.reason:
			lost = append(lost, fmt.Sprintf("%s: stored %+v, acknowledged %+v", name, stored, w))
		}
	}
	return lost, expired
}

// list lists every event of namespace through version, page by page.
func list(ctx context.Context, clientset kubernetes.Interface, namespace, version string) ([]written, error) {
	var out []written
	opts := metav1.ListOptions{Limit: 500}
	for {
		var next string
		switch version {
		case coreV1:
			l, err := clientset.CoreV1().Events(namespace).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			for _, e := range l.Items {
				out = append(out, written{name: e.Name, uid: e.UID, note: e.Message, regarding: e.InvolvedObject.Name, reason: e.Reason})
			}
			next = l.Continue
		case eventsV1beta1:
			l, err := clientset.EventsV1beta1().Events(namespace).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			for _, e := range l.Items {
				out = append(out, written{name: e.Name, uid: e.UID, note: e.Note, regarding: e.Regarding.Name, reason: e.Reason})
			}
			next = l.Continue
		default:
			l, err := clientset.EventsV1().Events(namespace).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			for _, e := range l.Items {
				out = append(out, written{name: e.Name, uid: e.UID, note: e.Note, regarding: e.Regarding.Name, reason: e.Reason})
			}
			next = l.Continue
		}
		if next == "" {
			return out, nil
		}
		opts.Continue = next
	}
}

// health polls /readyz and /livez and keeps what it saw.
type health struct {
	mu            sync.Mutex
	notReady      time.Duration
	lastReady     bool
	lastChange    time.Time
	lastOK        time.Time   // the last time /readyz answered ok
	readyAt       []time.Time // times /readyz turned ok after not being ok
	unreadyAt     []time.Time // times /readyz stopped being ok
	livezFailures []string    // /livez answers other than ok, while the server answered

	cancel context.CancelFunc
	done   chan struct{}
}

// watchHealth polls the server's health endpoints every 100ms until the
// test ends.
func watchHealth(t *testing.T, config *rest.Config) *health {
	t.Helper()
	c := rest.CopyConfig(config)
	c.Timeout = 5 * time.Second
	clientset, err := kubernetes.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &health{lastReady: true, lastChange: time.Now(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			readyErr := clientset.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
			livez := clientset.Discovery().RESTClient().Get().AbsPath("/livez").Do(ctx)
			h.observe(readyErr == nil, livez)
		}, 100*time.Millisecond)
	}()
	t.Cleanup(h.stop)
	return h
}

func (h *health) stop() {
	h.cancel()
	<-h.done
}

func (h *health) observe(ready bool, livez rest.Result) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	if ready {
		h.lastOK = now
	}
	if err := livez.Error(); err != nil {
		var code int
		livez.StatusCode(&code)
		if code != 0 { // the server answered: /livez must be ok
			h.livezFailures = append(h.livezFailures, fmt.Sprintf("%s: %d %v", now.Format(time.StampMilli), code, err))
		}
	}
	if ready == h.lastReady {
		return
	}
	if ready {
		h.notReady += now.Sub(h.lastChange)
		h.readyAt = append(h.readyAt, now)
	} else {
		h.unreadyAt = append(h.unreadyAt, now)
	}
	h.lastReady, h.lastChange = ready, now
}

// readyAfter is the first time /readyz was ok after t: t itself if it was
// seen ok after t without having stopped being ok since, zero if it has
// not been seen ok after t yet.
func (h *health) readyAfter(t time.Time) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, at := range h.readyAt {
		if at.After(t) {
			return at
		}
	}
	if h.lastReady && h.lastOK.After(t) {
		return t
	}
	return time.Time{}
}

// waitReady waits until /readyz was ok after t and returns when.
func (h *health) waitReady(t *testing.T, after time.Time, timeout time.Duration) time.Time {
	t.Helper()
	var at time.Time
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		at = h.readyAfter(after)
		return !at.IsZero(), nil
	})
	if err != nil {
		t.Fatalf("/readyz not ok within %v of the end of the fault", timeout)
	}
	return at
}

// summary returns the total not-ready time, whether /readyz ever went
// not-ready, and the /livez failures seen.
func (h *health) summary() (time.Duration, bool, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	notReady := h.notReady
	if !h.lastReady {
		notReady += time.Since(h.lastChange)
	}
	return notReady, len(h.unreadyAt) > 0, append([]string(nil), h.livezFailures...)
}
