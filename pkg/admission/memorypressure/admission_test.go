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

package memorypressure

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

func TestValidate(t *testing.T) {
	const mib = 1 << 20
	events := schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}
	coreEvents := schema.GroupVersionResource{Version: "v1", Resource: "events"}
	tests := []struct {
		name        string
		resource    schema.GroupVersionResource
		subresource string
		live, limit uint64
		refused     bool
	}{
		{name: "no memory limit", resource: events, live: 900 * mib},
		{name: "below the threshold", resource: events, live: 89 * mib, limit: 100 * mib},
		{name: "at the threshold", resource: events, live: 90 * mib, limit: 100 * mib},
		{name: "above the threshold", resource: events, live: 91 * mib, limit: 100 * mib, refused: true},
		{name: "core/v1 above the threshold", resource: coreEvents, live: 91 * mib, limit: 100 * mib, refused: true},
		{name: "another resource", resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, live: 99 * mib, limit: 100 * mib},
		{name: "a subresource", resource: events, subresource: "status", live: 99 * mib, limit: 100 * mib},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPlugin(func() (uint64, uint64) { return tt.live, tt.limit })
			a := admission.NewAttributesRecord(&core.Event{}, nil, schema.GroupVersionKind{}, "ns", "e", tt.resource, tt.subresource,
				admission.Create, &metav1.CreateOptions{}, false, nil)
			err := p.Validate(context.Background(), a, nil)
			if !tt.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var status *apierrors.StatusError
			if !apierrors.IsServiceUnavailable(err) || !errors.As(err, &status) {
				t.Fatalf("got %v, want 503 ServiceUnavailable", err)
			}
			got := []any{status.ErrStatus.Code, status.ErrStatus.Details.RetryAfterSeconds, status.ErrStatus.Message}
			want := []any{int32(http.StatusServiceUnavailable), int32(RetryAfterSeconds),
				"the events store is at its memory limit (91 MiB in use of a 100 MiB limit): new events are taken again as live ones expire"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
		})
	}
	if p := NewPlugin(ProcessMemory(sharedLimit{})); !p.Handles(admission.Create) || p.Handles(admission.Update) {
		t.Error("the plugin handles creates only")
	}
}

// sharedLimit is a SharedLimit of fixed values.
type sharedLimit struct{ limit, offHeap int64 }

func (s sharedLimit) Limit() int64   { return s.limit }
func (s sharedLimit) OffHeap() int64 { return s.offHeap }

// TestProcessMemory reads this process's limit and live heap: the shared
// limit and the memory outside the heap when the command set one, else the
// Go heap's soft limit.
func TestProcessMemory(t *testing.T) {
	previous := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(previous) })

	debug.SetMemoryLimit(1 << 40)
	runtime.GC()
	live, limit := ProcessMemory(sharedLimit{})()
	if limit != 1<<40 || live == 0 || live >= limit {
		t.Errorf("with a heap limit of 1 TiB: live %d, limit %d; want the limit and a live heap below it", live, limit)
	}
	const offHeap = 1 << 35
	if inUse, limit := ProcessMemory(sharedLimit{limit: 1 << 41, offHeap: offHeap})(); limit != 1<<41 || inUse <= offHeap {
		t.Errorf("with a shared limit of 2 TiB and 32 GiB off the heap: in use %d, limit %d; want that limit, the heap and the 32 GiB in use", inUse, limit)
	}
	debug.SetMemoryLimit(1<<63 - 1) // none
	if live, limit := ProcessMemory(sharedLimit{})(); live != 0 || limit != 0 {
		t.Errorf("without a limit: live %d, limit %d; want 0, 0", live, limit)
	}
}
