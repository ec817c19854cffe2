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

package eventratelimit

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apis/events"
)

// write describes one event write: who, about what, where.
type write struct {
	user, controller, instance, namespace, object string
	group                                         string
	operation                                     admission.Operation
}

func (w write) attributes() admission.Attributes {
	event := &core.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "e", Namespace: w.namespace},
		InvolvedObject:      core.ObjectReference{Kind: "Pod", Namespace: w.namespace, Name: w.object},
		ReportingController: w.controller,
		ReportingInstance:   w.instance,
	}
	if w.group == core.GroupName {
		// legacy events name their reporter in source
		event.ReportingController, event.ReportingInstance = "", ""
		event.Source = core.EventSource{Component: w.controller, Host: w.instance}
	}
	operation := w.operation
	if operation == "" {
		operation = admission.Create
	}
	var old runtime.Object
	if operation == admission.Update {
		old = event.DeepCopy()
	}
	group := w.group
	if group == "" {
		group = events.GroupName
	}
	return admission.NewAttributesRecord(event, old, schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Event"},
		w.namespace, "e", schema.GroupVersionResource{Group: group, Version: "v1", Resource: "events"}, "", operation,
		&metav1.CreateOptions{}, false, &user.DefaultInfo{Name: w.user})
}

var base = write{user: "system:node:n1", controller: "kubelet", instance: "n1", namespace: "ns", object: "web", group: events.GroupName}

// legacy is a core/v1 write of base, with change.
func legacy(change func(*write)) write {
	return with(func(w *write) { w.group = core.GroupName; change(w) })
}

func with(change func(*write)) write {
	w := base
	change(&w)
	return w
}

// TestLimits: each limit type refuses, after its burst, the writes that
// fall in its bucket, and nothing else.
func TestLimits(t *testing.T) {
	const burst = 3
	tests := []struct {
		name  string
		limit eventpolicy.LimitType
		// same falls in the storming bucket; other does not.
		same, other write
	}{
		{"reporter: another instance of the same user and controller", eventpolicy.Reporter,
			with(func(w *write) { w.object = "other" }), with(func(w *write) { w.instance = "n2" })},
		{"reporter: another user with the same controller and instance", eventpolicy.Reporter,
			base, with(func(w *write) { w.user = "system:node:n2" })},
		{"reporter: legacy source.component and host", eventpolicy.Reporter,
			legacy(func(w *write) { w.object = "other" }), legacy(func(w *write) { w.controller = "other" })},
		{"object: another reporter about the same object", eventpolicy.Object,
			with(func(w *write) { w.user = "someone-else" }), with(func(w *write) { w.object = "other" })},
		{"namespace: another reporter and object in the namespace", eventpolicy.Namespace,
			with(func(w *write) { w.user = "u2"; w.object = "o2" }), with(func(w *write) { w.namespace = "other" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testingclock.NewFakePassiveClock(time.Now())
			p, err := NewPlugin([]eventpolicy.Limit{{Type: tt.limit, QPS: 1, Burst: burst, CacheSize: 10}}, clk)
			if err != nil {
				t.Fatal(err)
			}
			for i := range burst {
				if err := p.Validate(context.Background(), base.attributes(), nil); err != nil {
					t.Fatalf("write %d within the burst: %v", i, err)
				}
			}
			err = p.Validate(context.Background(), tt.same.attributes(), nil)
			if !apierrors.IsTooManyRequests(err) {
				t.Fatalf("write over the burst in the same bucket: got %v, want 429", err)
			}
			if seconds, ok := apierrors.SuggestsClientDelay(err); !ok || seconds != 1 {
				t.Errorf("Retry-After: got %d (%v), want 1", seconds, ok)
			}
			if !strings.Contains(err.Error(), string(tt.limit)) {
				t.Errorf("message %q does not name the limit %s", err.Error(), tt.limit)
			}
			if err := p.Validate(context.Background(), tt.other.attributes(), nil); err != nil {
				t.Errorf("write in another bucket: %v", err)
			}
			clk.SetTime(clk.Now().Add(time.Second))
			if err := p.Validate(context.Background(), tt.same.attributes(), nil); err != nil {
				t.Errorf("write after Retry-After: %v", err)
			}
		})
	}
}

// TestRefusalTakesNoTokens: a write refused by one limit takes no token from
// the others, so a reporter over its own budget does not use up the budget
// of its namespace.
func TestRefusalTakesNoTokens(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Now())
	p, err := NewPlugin([]eventpolicy.Limit{
		{Type: eventpolicy.Namespace, QPS: 1, Burst: 5, CacheSize: 10},
		{Type: eventpolicy.Reporter, QPS: 1, Burst: 2, CacheSize: 10},
	}, clk)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for range 100 {
		if err := p.Validate(context.Background(), base.attributes(), nil); apierrors.IsTooManyRequests(err) {
			refused++
		}
	}
	if refused != 98 {
		t.Errorf("storming reporter: %d refused, want 98", refused)
	}
	quiet := with(func(w *write) { w.user = "quiet" })
	for i := range 2 {
		if err := p.Validate(context.Background(), quiet.attributes(), nil); err != nil {
			t.Errorf("quiet reporter's write %d in the namespace: %v", i, err)
		}
	}
}

// TestRetryAfter is computed from the bucket: how long until a token.
func TestRetryAfter(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Now())
	p, err := NewPlugin([]eventpolicy.Limit{{Type: eventpolicy.Reporter, QPS: 0.1, Burst: 1, CacheSize: 10}}, clk)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(context.Background(), base.attributes(), nil); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(clk.Now().Add(2500 * time.Millisecond))
	err = p.Validate(context.Background(), base.attributes(), nil)
	if seconds, ok := apierrors.SuggestsClientDelay(err); !ok || seconds != 8 {
		t.Errorf("Retry-After after 2.5s of a 10s refill: got %d (%v), want 8", seconds, ok)
	}
}

// TestIgnoresOtherRequests: updates count like creates; other resources
// and subresources are not limited.
func TestIgnoresOtherRequests(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Now())
	p, err := NewPlugin([]eventpolicy.Limit{{Type: eventpolicy.Namespace, QPS: 1, Burst: 1, CacheSize: 10}}, clk)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(context.Background(), with(func(w *write) { w.operation = admission.Update }).attributes(), nil); err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(context.Background(), base.attributes(), nil); !apierrors.IsTooManyRequests(err) {
		t.Errorf("create after an update used the burst: got %v, want 429", err)
	}
	pod := admission.NewAttributesRecord(&core.Event{}, nil, core.Kind("Pod").WithVersion("v1"), "ns", "p",
		core.Resource("pods").WithVersion("v1"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "u"})
	if err := p.Validate(context.Background(), pod, nil); err != nil {
		t.Errorf("another resource: %v", err)
	}
}

// TestBucketsBounded: buckets beyond cacheSize are forgotten.
func TestBucketsBounded(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Now())
	p, err := NewPlugin([]eventpolicy.Limit{{Type: eventpolicy.Object, QPS: 1, Burst: 1, CacheSize: 3}}, clk)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		if err := p.Validate(context.Background(), with(func(w *write) { w.object = name }).attributes(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.limiters[0].buckets.Len(); got != 3 {
		t.Errorf("buckets: got %d, want 3", got)
	}
}
