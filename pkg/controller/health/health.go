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

// Package health is what a background loop tells of itself: whether it has
// work, whether it makes progress, and whether the dependency it works
// against (the archive, etcd, kube-apiserver) answers. pkg/controller turns
// it into the loop's two checks, which mean different things:
//
//   - wedged (/livez): the loop has had work for longer than a deadline,
//     made no progress, and is not waiting on a failing dependency. This is
//     a process in an unknown state, which a restart fixes.
//   - dependency unavailable (/dependencyz, and the
//     events_apiserver_controller_dependency_available gauge): the loop's
//     last call to its dependency failed and it is retrying. A restart
//     brings nothing back, so it is not a liveness failure.
//
// A leaf package, so that every loop's package can report without
// importing the controller manager.
package health

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Tracker is one loop's report. Its methods are safe for concurrent use.
type Tracker struct {
	loop  string
	clock clock.PassiveClock

	mu sync.Mutex
	// busySince is when the loop last went from idle to having work; zero
	// while idle.
	busySince time.Time
	// progressAt is when the loop last made progress.
	progressAt time.Time
	// failure is the dependency's last error, nil once it answered again;
	// failingSince is when it started failing, and retryAt when the loop
	// said it would call again.
	failure      error
	failingSince time.Time
	retryAt      time.Time
}

// New returns the Tracker of the loop named loop (its controller name); a
// nil clock is the real one.
func New(loop string, clk clock.PassiveClock) *Tracker {
	if clk == nil {
		clk = clock.RealClock{}
	}
	registerMetrics()
	dependencyAvailable.WithLabelValues(loop).Set(1)
	return &Tracker{loop: loop, clock: clk}
}

// Reset forgets what the loop reported: the controller manager calls it
// whenever it starts the loop's Run, so that a run does not inherit the
// work or the failures of the last one (before this replica lost and won
// the election again).
func (t *Tracker) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.busySince, t.progressAt, t.failure, t.failingSince, t.retryAt = time.Time{}, time.Time{}, nil, time.Time{}, time.Time{}
	dependencyAvailable.WithLabelValues(t.loop).Set(1)
}

// Busy says the loop has work to do; the first call after Idle starts the
// time it has to make progress.
func (t *Tracker) Busy() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.busySince.IsZero() {
		t.busySince = t.clock.Now()
	}
}

// Idle says the loop has nothing left to do.
func (t *Tracker) Idle() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.busySince = time.Time{}
}

// Progress says the loop got some of its work done; it implies that its
// dependency answered.
func (t *Tracker) Progress(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.progressAt = t.clock.Now()
	t.answeredLocked(ctx)
}

// Answered says a call to the dependency succeeded.
func (t *Tracker) Answered(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.answeredLocked(ctx)
}

func (t *Tracker) answeredLocked(ctx context.Context) {
	if t.failure == nil {
		return
	}
	klog.FromContext(ctx).Info("Dependency available again", "controller", t.loop, "unavailableFor", t.clock.Since(t.failingSince).Round(time.Second))
	t.failure, t.failingSince, t.retryAt = nil, time.Time{}, time.Time{}
	dependencyAvailable.WithLabelValues(t.loop).Set(1)
}

// Failed says a call to the dependency failed with err and that the loop
// calls again within retryIn. The loop logs each failure itself; the
// Tracker logs when the dependency becomes unavailable.
func (t *Tracker) Failed(ctx context.Context, err error, retryIn time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	if t.failure == nil {
		t.failingSince = now
		klog.FromContext(ctx).Info("Dependency unavailable; retrying", "controller", t.loop, "err", err.Error())
		dependencyAvailable.WithLabelValues(t.loop).Set(0)
	}
	t.failure, t.retryAt = err, now.Add(retryIn)
}

// Wedged returns an error when the loop has had work for longer than
// deadline without progress while its dependency answers: no failure is
// pending, or the loop has not called again within deadline of the retry
// it announced. nil otherwise, and always while it is idle.
func (t *Tracker) Wedged(deadline time.Duration) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.busySince.IsZero() {
		return nil
	}
	now := t.clock.Now()
	since := t.busySince
	if t.progressAt.After(since) {
		since = t.progressAt
	}
	if now.Sub(since) <= deadline {
		return nil
	}
	if t.failure != nil && now.Sub(t.retryAt) <= deadline {
		return nil // waiting on its dependency, which is another check's matter
	}
	return fmt.Errorf("no progress since %s while it has work (progress deadline %v)", since.UTC().Format(time.RFC3339), deadline)
}

// DependencyErr returns why the loop's dependency is unavailable, nil
// while it answers.
func (t *Tracker) DependencyErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failure == nil {
		return nil
	}
	return fmt.Errorf("unavailable since %s, retrying: %w", t.failingSince.UTC().Format(time.RFC3339), t.failure)
}
