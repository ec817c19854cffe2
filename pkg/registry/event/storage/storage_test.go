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

package storage

import (
	"testing"
	"time"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

func TestTTLFuncRenewsEveryWrite(t *testing.T) {
	ttlFunc, err := TTLFunc(90 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		existing uint64
		update   bool
	}{
		{"create", 0, false},
		{"update of an event with a shorter remaining lease", 12, true},
		{"update of an event with a longer lease", 100000, true},
	} {
		got, err := ttlFunc(&core.Event{}, tt.existing, tt.update)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got != 5400 {
			t.Errorf("%s: ttl = %d, want 5400", tt.name, got)
		}
	}
}

func TestTTLFuncRoundsDownToSecondsAndRejectsLessThanOne(t *testing.T) {
	ttlFunc, err := TTLFunc(2500 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := ttlFunc(&core.Event{}, 0, false); got != 2 {
		t.Errorf("ttl = %d, want 2", got)
	}
	for _, ttl := range []time.Duration{0, 999 * time.Millisecond, -time.Hour} {
		if _, err := TTLFunc(ttl); err == nil {
			t.Errorf("TTLFunc(%v) accepted a TTL under a second", ttl)
		}
	}
}

func TestShortNames(t *testing.T) {
	r := &REST{}
	if got := r.ShortNames(); len(got) != 1 || got[0] != "ev" {
		t.Errorf("ShortNames = %v, want [ev]", got)
	}
	if got := r.GetSingularName(); got != "event" {
		t.Errorf("GetSingularName = %q, want event", got)
	}
}
