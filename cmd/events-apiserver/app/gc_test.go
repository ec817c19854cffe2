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

package app

import (
	"errors"
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"k8s.io/klog/v2/ktesting"
)

// TestSetMemoryLimit: the heap's soft limit follows the container's memory
// limit (MemoryLimitRatio of it) unless the environment sets GOMEMLIMIT or
// AUTOMEMLIMIT=off; without a limit the heap has none.
func TestSetMemoryLimit(t *testing.T) {
	const containerLimit = 1 << 30
	const before = 123 << 20
	share := func(limit int64) int64 { return int64(float64(limit) * MemoryLimitRatio) }
	tests := []struct {
		name  string
		env   map[string]string
		limit memlimit.Provider
		want  int64
	}{
		{name: "a container limit", limit: memlimit.Limit(containerLimit), want: share(containerLimit)},
		{name: "no container limit", limit: func() (uint64, error) { return 0, memlimit.ErrNoLimit }, want: math.MaxInt64},
		{name: "a limit that cannot be read", limit: unreadableAsNoLimit(func() (uint64, error) {
			return 0, errors.New("failed to open /proc/self/mountinfo: no such file or directory")
		}, ktesting.NewLogger(t, ktesting.NewConfig())), want: math.MaxInt64},
		{name: "GOMEMLIMIT set", env: map[string]string{"GOMEMLIMIT": "700MiB"}, limit: memlimit.Limit(containerLimit), want: before},
		{name: "AUTOMEMLIMIT=off", env: map[string]string{"AUTOMEMLIMIT": "off"}, limit: memlimit.Limit(containerLimit), want: before},
	}
	original := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(original) })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, name := range []string{"GOMEMLIMIT", "AUTOMEMLIMIT"} {
				value, set := os.LookupEnv(name)
				_ = os.Unsetenv(name)
				t.Cleanup(func() {
					if set {
						_ = os.Setenv(name, value)
					} else {
						_ = os.Unsetenv(name)
					}
				})
			}
			for name, value := range tt.env {
				t.Setenv(name, value)
			}
			debug.SetMemoryLimit(before)
			logger, _ := ktesting.NewTestContext(t)
			setMemoryLimit(tt.limit, logger)
			if got := debug.SetMemoryLimit(-1); got != tt.want {
				t.Errorf("soft limit %d, want %d", got, tt.want)
			}
		})
	}
}

// TestMemoryLimitFollow: the Go runtime's soft limit is the shared limit
// less the memory mapped outside the heap, with a floor of a quarter of the
// limit, and follows that memory as it changes.
func TestMemoryLimitFollow(t *testing.T) {
	original := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(original) })
	const limit = 1 << 40
	var offHeap int64
	m := &MemoryLimit{limit: limit, offHeap: func() int64 { return offHeap }}
	last := int64(-1)
	for _, tc := range []struct {
		name    string
		offHeap int64
		want    int64
	}{
		{name: "nothing mapped", offHeap: 0, want: limit},
		{name: "a store mapped", offHeap: 1 << 30, want: limit - 1<<30},
		{name: "more than three quarters mapped", offHeap: limit - limit/8, want: limit / 4},
		{name: "the store unmapped", offHeap: 0, want: limit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			offHeap = tc.offHeap
			last = m.follow(last)
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Errorf("soft limit %d, want %d", got, tc.want)
			}
			if last != tc.offHeap {
				t.Errorf("follow returned %d, want the %d mapped", last, tc.offHeap)
			}
		})
	}
	if got := (&MemoryLimit{}).OffHeap(); got != 0 {
		t.Errorf("the zero MemoryLimit's OffHeap = %d, want 0", got)
	}
}
