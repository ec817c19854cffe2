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

package history

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/continuetoken"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// TestParseQuery checks how a list's field selector splits into the
// history window and the other terms, and the messages of bad ones.
func TestParseQuery(t *testing.T) {
	for _, tc := range []struct {
		selector     string
		history      bool
		since, until time.Time
		rest         string
		err          string
	}{
		{selector: "", history: false},
		{selector: "reason=BackOff", history: false},
		{selector: "history.since=90m", history: true, since: now.Add(-90 * time.Minute), until: now, rest: ""},
		{selector: "involvedObject.name=web-0,history.since=7d,reason!=x", history: true, since: now.Add(-7 * 24 * time.Hour), until: now,
			rest: "involvedObject.name=web-0,reason!=x"},
		{selector: "history.since=1d12h", history: true, since: now.Add(-36 * time.Hour), until: now},
		{selector: "history.since==24h,history.until=2026-03-01T11:00:00Z", history: true,
			since: now.Add(-24 * time.Hour), until: time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)},
		{selector: "history.since=2026-02-28T00:00:00.5+01:00", history: true,
			since: time.Date(2026, 2, 27, 23, 0, 0, 5e8, time.UTC), until: now},
		{selector: "history.until=1h", err: "fieldSelector.history.since: Required value"},
		{selector: "history.since=yesterday", err: `fieldSelector.history.since: Invalid value: "yesterday": must be a positive duration`},
		{selector: "history.since=0s", err: "fieldSelector.history.since: Invalid value"},
		{selector: "history.since=-1h", err: "fieldSelector.history.since: Invalid value"},
		{selector: "history.since=1h,history.until=x", err: `fieldSelector.history.until: Invalid value: "x"`},
		{selector: "history.since=1h,history.since=2h", err: "fieldSelector.history.since: Duplicate value"},
		{selector: "history.since!=1h", err: "only = is supported"},
		{selector: "history.since=1h,history.until=2h", err: "must be before history.until"},
	} {
		t.Run(tc.selector, func(t *testing.T) {
			selector, err := fields.ParseSelector(tc.selector)
			if err != nil {
				t.Fatal(err)
			}
			q, history, err := parseQuery(selector, now)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if history != tc.history {
				t.Fatalf("history %v, want %v", history, tc.history)
			}
			if !history {
				return
			}
			if !q.since.Equal(tc.since) || !q.until.Equal(tc.until) {
				t.Errorf("window [%v, %v), want [%v, %v)", q.since, q.until, tc.since, tc.until)
			}
			want, _ := fields.ParseSelector(tc.rest)
			if diff := cmp.Diff(want.Requirements(), q.selector.Requirements()); diff != "" {
				t.Errorf("other terms (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckWindow checks the bound on cluster-wide windows without a
// selective term, and that a namespace's history has none.
func TestCheckWindow(t *testing.T) {
	for _, tc := range []struct {
		selector  string
		namespace string
		ok        bool
	}{
		{selector: "history.since=24h", ok: true},
		{selector: "history.since=25h", ok: false},
		{selector: "reason=BackOff,history.since=7d", ok: false},
		{selector: "involvedObject.name!=web-0,history.since=7d", ok: false},
		{selector: "involvedObject.name=,history.since=7d", ok: false},
		{selector: "involvedObject.name=web-0,history.since=30d", ok: true},
		{selector: "related.uid=u,history.since=30d", ok: true},
		{selector: "metadata.name=e1,history.since=30d", ok: true},
		{selector: "history.since=30d", namespace: "shop", ok: true},
		{selector: "type=Warning,reason=BackOff,history.since=30d", namespace: "shop", ok: true},
	} {
		t.Run(tc.namespace+"/"+tc.selector, func(t *testing.T) {
			q, _, err := parseQuery(fields.ParseSelectorOrDie(tc.selector), now)
			if err != nil {
				t.Fatal(err)
			}
			if err := q.checkWindow(tc.namespace); (err == nil) != tc.ok {
				t.Errorf("checkWindow: %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// TestContinueToken checks that a token continues its own list only: a
// token whose window was altered, or replayed with another namespace,
// label selector, field term or window, is refused with 400 naming the
// continue parameter, before the store or the archive is read.
func TestContinueToken(t *testing.T) {
	ctx := genericapirequest.WithNamespace(context.Background(), "ns")
	// No store and no archive: reaching either would panic.
	r := &REST{tokens: continuetoken.NewWithKey(make([]byte, continuetoken.KeySize)), clock: clocktesting.NewFakePassiveClock(now),
		inFlight: newSlots()}
	const selector = "reason=BackOff,history.since=2h"
	q, _, err := parseQuery(fields.ParseSelectorOrDie(selector), now)
	if err != nil {
		t.Fatal(err)
	}
	binding := q.binding("ns", "")
	cursor := archive.Cursor{Time: now.Add(-time.Minute + 123*time.Nanosecond), UID: "u-1"}
	token, err := r.encodeToken(ctx, binding, q, cursor)
	if err != nil {
		t.Fatal(err)
	}
	since, until, got, err := r.decodeToken(ctx, token, binding)
	if err != nil {
		t.Fatal(err)
	}
	if !since.Equal(q.since) || !until.Equal(q.until) || !got.Time.Equal(cursor.Time) || got.UID != cursor.UID {
		t.Errorf("decoded [%v, %v) %+v, want [%v, %v) %+v", since, until, got, q.since, q.until, cursor)
	}

	// widened is token with its window moved 30 days back, its MAC kept.
	widened := alterPayload(t, token, func(p map[string]any) { p["s"] = now.Add(-30 * 24 * time.Hour).UnixNano() })
	for _, c := range []struct {
		name, namespace, labels, fields, token string
	}{
		{name: "a tampered window", namespace: "ns", fields: selector, token: widened},
		{name: "a replaced field selector", namespace: "ns", fields: "reason=Killing,history.since=2h", token: token},
		{name: "another window", namespace: "ns", fields: "reason=BackOff,history.since=30d", token: token},
		{name: "another label selector", namespace: "ns", labels: "app=x", fields: selector, token: token},
		{name: "a token from another namespace", namespace: "other", fields: selector, token: token},
		{name: "all namespaces", fields: selector, token: token},
		{name: "garbage", namespace: "ns", fields: selector, token: "garbage"},
		{name: "a cut token", namespace: "ns", fields: selector, token: token[:len(token)-3]},
	} {
		t.Run(c.name, func(t *testing.T) {
			options := &metainternalversion.ListOptions{FieldSelector: fields.ParseSelectorOrDie(c.fields), Continue: c.token}
			if c.labels != "" {
				options.LabelSelector = labels.SelectorFromSet(labels.Set{"app": "x"})
			}
			_, err := r.List(genericapirequest.WithNamespace(context.Background(), c.namespace), options)
			if !apierrors.IsBadRequest(err) || !strings.HasPrefix(err.Error(), "continue: ") {
				t.Errorf("list: %v, want 400 naming continue", err)
			}
		})
	}
}

// alterPayload rewrites the payload of a signed token, keeping its MAC.
func alterPayload(t *testing.T, token string, change func(map[string]any)) string {
	t.Helper()
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		t.Fatal(err)
	}
	var wire map[string]json.RawMessage
	if err := json.Unmarshal(data, &wire); err != nil {
		t.Fatal(err)
	}
	var payload map[string]any
	if err := json.Unmarshal(wire["p"], &payload); err != nil {
		t.Fatal(err)
	}
	change(payload)
	if wire["p"], err = json.Marshal(payload); err != nil {
		t.Fatal(err)
	}
	if data, err = json.Marshal(wire); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(data)
}

// TestAbsoluteWindow checks that the history terms become the times they
// mean now, and that the other terms and a selector without history stay.
func TestAbsoluteWindow(t *testing.T) {
	tests := []struct {
		name, selector, want, err string
	}{
		{name: "no history", selector: "type=Warning", want: "type=Warning"},
		{name: "relative since", selector: "type=Warning,history.since=7d",
			want: "type=Warning,history.since=2026-02-22T12:00:00Z,history.until=2026-03-01T12:00:00Z"},
		{name: "since alone", selector: "history.since=90m",
			want: "history.since=2026-03-01T10:30:00Z,history.until=2026-03-01T12:00:00Z"},
		{name: "absolute terms stay", selector: "reason!=x,history.since=2026-02-28T00:00:00.5+01:00,history.until=1h",
			want: "reason!=x,history.since=2026-02-27T23:00:00.5Z,history.until=2026-03-01T11:00:00Z"},
		{name: "bad term", selector: "history.since=yesterday", err: "fieldSelector.history.since: Invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			selector, err := fields.ParseSelector(tt.selector)
			if err != nil {
				t.Fatal(err)
			}
			got, err := AbsoluteWindow(selector, now)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.String()); diff != "" {
				t.Errorf("AbsoluteWindow (-want +got):\n%s", diff)
			}
		})
	}
}
