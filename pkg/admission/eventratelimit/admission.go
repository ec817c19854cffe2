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

// Package eventratelimit is the EventRateLimit admission plugin: token
// buckets per reporter, per regarding object and per namespace that every
// create and update of an event takes a token from. A write over budget is
// refused with 429 TooManyRequests, a Retry-After computed from the bucket
// that refused it and a message naming the limit; unmodified client-go waits
// that long and retries. Buckets live in bounded LRU caches.
//
// It is a validating plugin, as kube-apiserver's EventRateLimit is: it
// charges a write once, after every mutating plugin (and every reinvocation
// of them) and after the store's own validation, so that a write refused by
// either costs no token. Its limits are the event policy's
// (pkg/apis/eventpolicy), which the server decodes once.
package eventratelimit

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	"github.com/kube-events/events-apiserver/pkg/admission/internal/eventwrite"
	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/validation"
)

// PluginName is the name under which the plugin registers, for
// --enable-admission-plugins, --disable-admission-plugins and the
// plugins[].name of an admission configuration file.
const PluginName = "EventRateLimit"

// Register registers the EventRateLimit plugin with the limits of the
// policy that policy returns when the admission chain is built: the
// server's, decoded once, from the plugin's entry in the admission
// configuration file among others, which the factory therefore ignores.
func Register(plugins *admission.Plugins, policy func() (*eventpolicy.EventPolicy, error)) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		p, err := policy()
		if err != nil {
			return nil, err
		}
		return NewPlugin(p.Limits, clock.RealClock{})
	})
}

// Plugin refuses event writes over their token buckets' budgets.
type Plugin struct {
	*admission.Handler
	limiters []*limiter
	clock    clock.PassiveClock
	// logLimiter bounds the log lines about first refusals: a burst of
	// ten, then one a second.
	logLimiter *rate.Limiter
}

var _ admission.ValidationInterface = &Plugin{}

// NewPlugin returns the plugin enforcing limits, reading the time from clk
// (clock.RealClock{} outside tests).
func NewPlugin(limits []eventpolicy.Limit, clk clock.PassiveClock) (*Plugin, error) {
	if errs := validation.ValidateLimits(limits, field.NewPath("limits")); len(errs) > 0 {
		return nil, fmt.Errorf("invalid %s limits: %w", PluginName, errs.ToAggregate())
	}
	registerMetrics()
	p := &Plugin{
		Handler:    admission.NewHandler(admission.Create, admission.Update),
		clock:      clk,
		logLimiter: rate.NewLimiter(1, 10),
	}
	// Check in the order of LimitTypes, whatever the order of the file.
	for _, limitType := range eventpolicy.LimitTypes {
		for _, limit := range limits {
			if limit.Type == limitType {
				p.limiters = append(p.limiters, newLimiter(limit))
			}
		}
	}
	return p, nil
}

// Validate takes a token from every bucket the write falls in, or refuses
// it with 429 and takes none. It runs once per write, in the validating
// phase: after the mutating plugins, however often they are reinvoked, and
// after the validating steps before it.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	event, ok := eventOf(a)
	if !ok {
		return nil
	}
	now := p.clock.Now()
	reservations := make([]*rate.Reservation, 0, len(p.limiters))
	for _, l := range p.limiters {
		key, describe := l.keyFor(a, event)
		b := l.bucket(key)
		r := b.limiter.ReserveN(now, 1)
		if delay := r.DelayFrom(now); !r.OK() || delay > 0 {
			r.CancelAt(now)
			for _, taken := range reservations {
				taken.CancelAt(now)
			}
			return p.refuse(ctx, l, b, describe, delay)
		}
		reservations = append(reservations, r)
	}
	return nil
}

// refuse answers 429 with Retry-After, counts the refusal and logs the
// first refusal of a bucket (overall, at most ten lines at once and one a
// second after that: logLimiter).
func (p *Plugin) refuse(ctx context.Context, l *limiter, b *bucket, describe string, delay time.Duration) error {
	refusedTotal.WithLabelValues(string(l.limit.Type)).Inc()
	seconds := retryAfter(delay)
	if b.firstRefusal() && p.logLimiter.Allow() {
		klog.FromContext(ctx).Info("Refusing event writes over the rate limit", "limit", l.limit.Type,
			"bucket", describe, "qps", l.limit.QPS, "burst", l.limit.Burst, "retryAfterSeconds", seconds)
	}
	return apierrors.NewTooManyRequests(fmt.Sprintf(
		"event rate limit %s exceeded for %s (%g writes/s, burst %d): retry after %ds",
		l.limit.Type, describe, l.limit.QPS, l.limit.Burst, seconds), seconds)
}

// eventOf returns the event of a create or update of events, core or
// events.k8s.io; ok is false for any other request.
func eventOf(a admission.Attributes) (*core.Event, bool) {
	if !eventwrite.Is(a) {
		return nil, false
	}
	event, ok := a.GetObject().(*core.Event)
	return event, ok
}

// limiter holds the buckets of one limit type.
type limiter struct {
	limit eventpolicy.Limit

	mu      sync.Mutex // serializes get-or-add of buckets
	buckets *lru.Cache
}

type bucket struct {
	limiter *rate.Limiter
	refused sync.Once
}

// firstRefusal is true the first time it is called on b.
func (b *bucket) firstRefusal() bool {
	first := false
	b.refused.Do(func() { first = true })
	return first
}

func newLimiter(limit eventpolicy.Limit) *limiter {
	l := &limiter{limit: limit}
	l.buckets = lru.NewWithEvictionFunc(int(limit.CacheSize), func(lru.Key, any) {
		liveBuckets.WithLabelValues(string(limit.Type)).Dec()
	})
	return l
}

// bucket returns the bucket of key, a full one if it is new.
func (l *limiter) bucket(key string) *bucket {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.buckets.Get(key); ok {
		return b.(*bucket)
	}
	b := &bucket{limiter: rate.NewLimiter(rate.Limit(l.limit.QPS), int(l.limit.Burst))}
	l.buckets.Add(key, b)
	liveBuckets.WithLabelValues(string(l.limit.Type)).Inc()
	return b
}

// keyFor returns the bucket key of a write and a description of it for
// messages and logs.
func (l *limiter) keyFor(a admission.Attributes, event *core.Event) (key, describe string) {
	switch l.limit.Type {
	case eventpolicy.Reporter:
		user := ""
		if info := a.GetUserInfo(); info != nil {
			user = info.GetName()
		}
		controller, instance := event.ReportingController, event.ReportingInstance
		if controller == "" {
			controller = event.Source.Component
		}
		if instance == "" {
			instance = event.Source.Host
		}
		return join(user, controller, instance),
			fmt.Sprintf("reporter (user %q, controller %q, instance %q)", user, controller, instance)
	case eventpolicy.Object:
		ref := event.InvolvedObject
		return join(a.GetNamespace(), ref.Kind, ref.Namespace, ref.Name, string(ref.UID)),
			fmt.Sprintf("object %s %s/%s", ref.Kind, ref.Namespace, ref.Name)
	default:
		return a.GetNamespace(), fmt.Sprintf("namespace %q", a.GetNamespace())
	}
}

// join makes one key of parts that cannot run into each other.
func join(parts ...string) string {
	return strings.Join(parts, "\x00")
}

// retryAfter is a bucket's delay rounded up to whole seconds, at least 1:
// Retry-After counts whole seconds, and 0 would mean "now".
func retryAfter(delay time.Duration) int {
	seconds := int((delay + time.Second - 1) / time.Second)
	return max(seconds, 1)
}
