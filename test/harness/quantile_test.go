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

package harness

import (
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(100-i) * time.Millisecond // unsorted
	}
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		q       float64
		want    time.Duration
	}{
		{"none", nil, 0.99, 0},
		{"one", []time.Duration{time.Second}, 0.5, time.Second},
		{"median of 100", hundred, 0.5, 51 * time.Millisecond},
		{"p99 of 100", hundred, 0.99, 100 * time.Millisecond},
		{"p90 of 100", hundred, 0.9, 91 * time.Millisecond},
		{"max", hundred, 1, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Quantile(tc.samples, tc.q); got != tc.want {
				t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
	if hundred[0] != 100*time.Millisecond {
		t.Errorf("Quantile sorted its argument in place")
	}
}
