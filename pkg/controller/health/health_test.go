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

package health

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestWedgedOnlyWithoutProgressWhileTheDependencyAnswers: the rule of the
// /livez check, step by step on a fake clock, against the rule of the
// dependency check.
func TestWedgedOnlyWithoutProgressWhileTheDependencyAnswers(t *testing.T) {
	const deadline = time.Minute
	refused := errors.New("connection refused")
	tests := []struct {
		name           string
		steps          func(tr *Tracker, clock *clocktesting.FakeClock)
		wantWedged     bool
		wantDependency bool
	}{
		{
			name:  "idle for ever",
			steps: func(_ *Tracker, clock *clocktesting.FakeClock) { clock.Step(10 * deadline) },
		},
		{
			name: "busy within the deadline",
			steps: func(tr *Tracker, clock *clocktesting.FakeClock) {
				tr.Busy()
				clock.Step(deadline)
			},
		},
		{
			name: "busy past the deadline, no progress, dependency answering",
			steps: func(tr *Tracker, clock *clocktesting.FakeClock) {
				tr.Busy()
				tr.Answered(t.Context())
				clock.Step(deadline + time.Second)
			},
			wantWedged: true,
		},
		{
			name: "busy for ten deadlines with progress within each",
			steps: func(tr *Tracker, clock *clocktesting.FakeClock) {
				tr.Busy()
				for range 10 {
					clock.Step(deadline)
					tr.Progress(t.Context())
				}
			},
		},
		{
			name: "busy for ten deadlines, the dependency failing, retried every 30s",
			steps: func(tr *Tracker, clock *clocktesting.FakeClock) {
				tr.Busy()
				for range 20 {
					tr.Failed(t.Context(), refused, 30*time.Second)
					clock.Step(30 * time.Second)
				}
			},
			wantDependency: true,
		},
		{
			name: "the dependency failed and the loop stopped retrying",
			steps: func(tr *Tracker, clock *clocktesting.FakeClock) {
				tr.Busy()
				tr.Failed(t.Context(), refused, 30*time.Second)
				clock.Step(30*time.Second + deadline + time.Second)
			},
			wantWedged:     true,
			wantDependency: true,
		},
		{
			name: "the dependency back: progress clears the failure",
			steps: func(tr *Tracker, clock *clocktesting.FakeClock) {
				tr.Busy()
				tr.Failed(t.Context(), refused, 30*time.Second)
				clock.Step(30 * time.Second)
				tr.Progress(t.Context())
			},
		},
		{
			name: "a new run forgets the last one's work and failure",
			steps: func(tr *Tracker, clock *clocktesting.FakeClock) {
				tr.Busy()
				tr.Failed(t.Context(), refused, 30*time.Second)
				clock.Step(10 * deadline)
				tr.Reset()
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := clocktesting.NewFakeClock(time.Now())
			tr := New("test", clock)
			tt.steps(tr, clock)
			got := []bool{tr.Wedged(deadline) != nil, tr.DependencyErr() != nil}
			if diff := cmp.Diff([]bool{tt.wantWedged, tt.wantDependency}, got); diff != "" {
				t.Errorf("[wedged, dependency unavailable] (-want +got):\n%s\nWedged: %v\nDependencyErr: %v", diff, tr.Wedged(deadline), tr.DependencyErr())
			}
		})
	}
}
