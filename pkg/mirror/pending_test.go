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

package mirror

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func version(rv string) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
}

// putAsync runs put in the background; the channel receives its result.
func putAsync(ctx context.Context, p *pending, key, rv string) <-chan bool {
	result := make(chan bool, 1)
	go func() { result <- p.put(ctx, key, version(rv), time.Time{}) }()
	return result
}

// awaitResult fails the test unless result delivers want within a minute
// (an upper bound; the put returns as soon as it may).
func awaitResult(t *testing.T, result <-chan bool, want bool) {
	t.Helper()
	select {
	case got := <-result:
		if got != want {
			t.Errorf("put = %v, want %v", got, want)
		}
	case <-time.After(time.Minute):
		t.Fatal("put still blocked")
	}
}

// Backpressure: a new key waits while max keys are pending, until one is
// done or forgotten or ctx ends; a newer version of a pending key replaces
// it at once, keeping when the oldest unmirrored change was stored.
func TestPendingBlocksNewKeysAtTheBound(t *testing.T) {
	ctx := context.Background()
	stored := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		// free makes room (or not) once the third key waits.
		free func(p *pending, a *pendingEvent, cancel context.CancelFunc)
		want bool
	}{
		{"done with a key makes room", func(p *pending, a *pendingEvent, _ context.CancelFunc) { p.done("ns/a", a) }, true},
		{"a key deleted upstream makes room", func(p *pending, _ *pendingEvent, _ context.CancelFunc) { p.forget("ns/a") }, true},
		{"the end of ctx ends the wait", func(_ *pending, _ *pendingEvent, cancel context.CancelFunc) { cancel() }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPending(2)
			p.put(ctx, "ns/a", version("1"), stored)
			p.put(ctx, "ns/b", version("1"), stored)
			if !p.full() {
				t.Fatal("full = false with 2 of 2 keys pending")
			}
			if !p.put(ctx, "ns/a", version("2"), stored.Add(time.Minute)) {
				t.Fatal("replacing a pending key failed")
			}
			a, _ := p.get("ns/a")
			if a.event.ResourceVersion != "2" || !a.since.Equal(stored) {
				t.Errorf("ns/a = version %s since %v, want version 2 since %v", a.event.ResourceVersion, a.since, stored)
			}

			putCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			result := putAsync(putCtx, p, "ns/c", "1")
			select {
			case <-result:
				t.Fatal("put of a third key returned with 2 of 2 pending")
			default:
			}
			tt.free(p, a, cancel)
			awaitResult(t, result, tt.want)
			_, ok := p.get("ns/c")
			if ok != tt.want {
				t.Errorf("ns/c pending = %v, want %v", ok, tt.want)
			}
		})
	}
}

// done removes a key only in the version written: a newer one stays, and
// keeps its slot.
func TestPendingDoneKeepsANewerVersion(t *testing.T) {
	ctx := context.Background()
	p := newPending(1)
	p.put(ctx, "ns/a", version("1"), time.Time{})
	written, _ := p.get("ns/a")
	p.put(ctx, "ns/a", version("2"), time.Time{})
	p.done("ns/a", written)
	if latest, ok := p.get("ns/a"); !ok || latest.event.ResourceVersion != "2" {
		t.Fatalf("after done with version 1: ns/a pending %v, want version 2", ok)
	}
	if !p.full() || p.len() != 1 {
		t.Errorf("full = %v, len = %d; want the newer version to keep the slot", p.full(), p.len())
	}
	latest, _ := p.get("ns/a")
	p.done("ns/a", latest)
	if p.full() || p.len() != 0 {
		t.Errorf("after done with the latest version: full = %v, len = %d, want empty", p.full(), p.len())
	}
}
