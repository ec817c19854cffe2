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

package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/v1alpha1"
)

const (
	policyHeader    = "apiVersion: eventpolicy.config.events.k8s.io/v1alpha1\nkind: EventPolicy\n"
	rateLimitHeader = "apiVersion: eventratelimit.admission.events.k8s.io/v1alpha1\nkind: EventRateLimitConfiguration\n"
	seriesHeader    = "apiVersion: eventseries.admission.events.k8s.io/v1alpha1\nkind: EventSeriesConfiguration\n"
)

func duration(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

// defaults is the default policy, spelled out.
func defaults() *eventpolicy.EventPolicy {
	return &eventpolicy.EventPolicy{
		Limits: []eventpolicy.Limit{
			{Type: eventpolicy.Reporter, QPS: 20, Burst: 200, CacheSize: 4096},
			{Type: eventpolicy.Object, QPS: 10, Burst: 100, CacheSize: 4096},
			{Type: eventpolicy.Namespace, QPS: 200, Burst: 2000, CacheSize: 4096},
		},
		Folding: eventpolicy.Folding{Enabled: true, After: 10, Window: duration(10 * time.Minute), FlushInterval: duration(time.Second), CacheSize: 4096},
		Series: eventpolicy.Series{FinishAfter: duration(6 * time.Minute), HeartbeatInterval: duration(30 * time.Minute),
			HeartbeatSlack: duration(6 * time.Minute), SweepInterval: duration(time.Minute)},
		Export: eventpolicy.Export{NamespaceRate: eventpolicy.ExportRate{QPS: 100, Burst: 1000}},
	}
}

func with(change func(*eventpolicy.EventPolicy)) *eventpolicy.EventPolicy {
	p := defaults()
	change(p)
	return p
}

// TestDecode reads the policy and the two former plugin kinds, each of
// which sets its part of the policy, the rest taking the defaults; and
// refuses what the plugins refused.
func TestDecode(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		want     *eventpolicy.EventPolicy
		wantKind string
		wantErr  string
	}{
		{name: "empty: defaults", file: " \n", want: defaults()},
		{name: "policy header only: defaults", file: policyHeader, want: defaults(), wantKind: "EventPolicy"},
		{
			name: "policy",
			file: policyHeader + "limits: [{type: Object, qps: 0.5, burst: 2}]\nfolding: {enabled: false}\nseries: {finishAfter: 1m, sweepInterval: 2s}\n",
			want: with(func(p *eventpolicy.EventPolicy) {
				p.Limits = []eventpolicy.Limit{{Type: eventpolicy.Object, QPS: 0.5, Burst: 2, CacheSize: 4096}}
				p.Folding.Enabled = false
				p.Series.FinishAfter, p.Series.SweepInterval = duration(time.Minute), duration(2*time.Second)
			}),
			wantKind: "EventPolicy",
		},
		{
			name:     "policy: the strict clock",
			file:     policyHeader + "series: {strictClock: true}\n",
			want:     with(func(p *eventpolicy.EventPolicy) { p.Series.StrictClock = true }),
			wantKind: "EventPolicy",
		},
		{name: "policy: no limits", file: policyHeader + "limits: []\n", want: with(func(p *eventpolicy.EventPolicy) { p.Limits = []eventpolicy.Limit{} }), wantKind: "EventPolicy"},
		{name: "policy: unknown field", file: policyHeader + "series: {finish: 1m}\n", wantErr: `unknown field "series.finish"`},
		{
			name: "policy: export selection",
			file: policyHeader + "export: {namespaces: [shop], excludedNamespaces: [kube-node-lease], types: [Warning], reasons: [BackOff], " +
				"reportingControllers: [kubelet], namespaceRate: {qps: 0, burst: 0}}\n",
			want: with(func(p *eventpolicy.EventPolicy) {
				p.Export = eventpolicy.Export{Namespaces: []string{"shop"}, ExcludedNamespaces: []string{"kube-node-lease"}, Types: []string{"Warning"},
					Reasons: []string{"BackOff"}, ReportingControllers: []string{"kubelet"}}
			}),
			wantKind: "EventPolicy",
		},
		{name: "policy: export selection with an empty value", file: policyHeader + "export: {reasons: [\"\"]}\n", wantErr: "export.reasons[0]: Required value"},
		{name: "policy: export rate without a burst", file: policyHeader + "export: {namespaceRate: {qps: 5, burst: 0}}\n",
			wantErr: "export.namespaceRate.burst: Invalid value: 0: must be at least 1 with a positive qps"},

		// EventRateLimitConfiguration, as admission configuration files give it.
		{name: "rate limit header only: defaults", file: rateLimitHeader, want: defaults(), wantKind: "EventRateLimitConfiguration"},
		{
			name: "limits replace the defaults, folding tuned",
			file: rateLimitHeader + "limits:\n- {type: Object, qps: 0.5, burst: 2}\nfolding: {after: 2, window: 30s, flushInterval: 1s, cacheSize: 10}\n",
			want: with(func(p *eventpolicy.EventPolicy) {
				p.Limits = []eventpolicy.Limit{{Type: eventpolicy.Object, QPS: 0.5, Burst: 2, CacheSize: 4096}}
				p.Folding = eventpolicy.Folding{Enabled: true, After: 2, Window: duration(30 * time.Second), FlushInterval: duration(time.Second), CacheSize: 10}
			}),
			wantKind: "EventRateLimitConfiguration",
		},
		{
			// flushInterval bounded folded counts held in memory before it
			// became the group-commit window: a policy written for that
			// still loads (the folder takes it as MaxFoldFlushInterval).
			name:     "folding: a flush interval above the group-commit window's bound still loads",
			file:     policyHeader + "folding: {flushInterval: 30m}\n",
			want:     with(func(p *eventpolicy.EventPolicy) { p.Folding.FlushInterval = duration(30 * time.Minute) }),
			wantKind: "EventPolicy",
		},
		{
			name: "no limits, no folding", file: rateLimitHeader + "limits: []\nfolding: {enabled: false}\n",
			want:     with(func(p *eventpolicy.EventPolicy) { p.Limits = []eventpolicy.Limit{}; p.Folding.Enabled = false }),
			wantKind: "EventRateLimitConfiguration",
		},
		{name: "unknown type", file: rateLimitHeader + "limits:\n- {type: User, qps: 1, burst: 1}\n", wantErr: `limits[0].type: Unsupported value: "User"`},
		{name: "duplicate type", file: rateLimitHeader + "limits:\n- {type: Object, qps: 1, burst: 1}\n- {type: Object, qps: 2, burst: 2}\n", wantErr: `limits[1].type: Duplicate value: "Object"`},
		{name: "qps and burst must be positive", file: rateLimitHeader + "limits:\n- {type: Namespace, qps: 0, burst: -1}\n", wantErr: "limits[0].qps: Invalid value: 0: must be positive, limits[0].burst: Invalid value: -1: must be positive"},
		{name: "folding thresholds", file: rateLimitHeader + "folding: {after: 0, flushInterval: 0s}\n", wantErr: "folding.after: Invalid value: 0: must be at least 1"},
		{name: "rate limit: unknown field", file: rateLimitHeader + "limit: []\n", wantErr: `unknown field "limit"`},
		{name: "wrong kind", file: "apiVersion: eventratelimit.admission.events.k8s.io/v1alpha1\nkind: Configuration\n", wantErr: `kind "Configuration"`},

		// EventSeriesConfiguration.
		{name: "series header only: defaults", file: seriesHeader, want: defaults(), wantKind: "EventSeriesConfiguration"},
		{
			name:     "series: the strict clock",
			file:     seriesHeader + "strictClock: true\n",
			want:     with(func(p *eventpolicy.EventPolicy) { p.Series.StrictClock = true }),
			wantKind: "EventSeriesConfiguration",
		},
		{
			name: "custom values in YAML", file: seriesHeader + "finishAfter: 90s\nheartbeatInterval: 1h\nheartbeatSlack: 10m\n",
			want: with(func(p *eventpolicy.EventPolicy) {
				p.Series.FinishAfter, p.Series.HeartbeatInterval, p.Series.HeartbeatSlack = duration(90*time.Second), duration(time.Hour), duration(10*time.Minute)
			}),
			wantKind: "EventSeriesConfiguration",
		},
		{
			name: "custom values in JSON, as an embedded plugin configuration arrives",
			file: `{"apiVersion":"eventseries.admission.events.k8s.io/v1alpha1","kind":"EventSeriesConfiguration","finishAfter":"2m","heartbeatSlack":"1m30s"}`,
			want: with(func(p *eventpolicy.EventPolicy) {
				p.Series.FinishAfter, p.Series.HeartbeatSlack = duration(2*time.Minute), duration(90*time.Second)
			}),
			wantKind: "EventSeriesConfiguration",
		},
		{
			name: "sweep interval", file: seriesHeader + "sweepInterval: 500ms\n",
			want:     with(func(p *eventpolicy.EventPolicy) { p.Series.SweepInterval = duration(500 * time.Millisecond) }),
			wantKind: "EventSeriesConfiguration",
		},
		{name: "zero sweep interval", file: seriesHeader + "sweepInterval: 0s\n", wantErr: `series.sweepInterval: Invalid value: "0s": must be a positive duration`},
		{name: "series: unknown field", file: seriesHeader + "finishAfter: 6m\nheartbeat: 30m\n", wantErr: `unknown field "heartbeat"`},
		{name: "duplicate field", file: seriesHeader + "finishAfter: 6m\nfinishAfter: 7m\n", wantErr: `"finishAfter" already set`},
		{name: "a kind in another plugin's group", file: "apiVersion: eventseries.admission.events.k8s.io/v1alpha1\nkind: EventRateLimitConfiguration\n", wantErr: `kind "EventRateLimitConfiguration"`},
		{name: "wrong apiVersion", file: "apiVersion: eventseries.admission.events.k8s.io/v1\nkind: EventSeriesConfiguration\n", wantErr: `"eventseries.admission.events.k8s.io/v1"`},
		{name: "missing apiVersion and kind", file: "finishAfter: 6m\n", wantErr: "Object 'Kind' is missing"},
		{name: "zero duration", file: seriesHeader + "finishAfter: 0s\n", wantErr: `series.finishAfter: Invalid value: "0s": must be a positive duration`},
		{
			name: "negative durations are each reported", file: seriesHeader + "heartbeatInterval: -30m\nheartbeatSlack: -1s\n",
			wantErr: `[series.heartbeatInterval: Invalid value: "-30m0s": must be a positive duration, series.heartbeatSlack: Invalid value: "-1s": must be a positive duration]`,
		},
		{name: "not a duration", file: seriesHeader + "finishAfter: soon\n", wantErr: `invalid duration "soon"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			versioned, kind, err := Decode([]byte(tt.file))
			var got *eventpolicy.EventPolicy
			if err == nil {
				got, err = Complete(versioned)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error: got %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if kind != tt.wantKind {
				t.Errorf("kind %q, want %q", kind, tt.wantKind)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDefault: the default policy is valid, and abandons a series after
// a heartbeat plus slack.
func TestDefault(t *testing.T) {
	if diff := cmp.Diff(defaults(), Default()); diff != "" {
		t.Errorf("default policy (-want +got):\n%s", diff)
	}
	if got := Default().Series.AbandonedAfter(); got != 36*time.Minute {
		t.Errorf("default abandoned after %s, want 36m", got)
	}
}

// TestShippedPolicyIsTheDefault: the file of the event-policy component,
// which says it spells out the built-in policy, is that policy, so that an
// operator who edits one value changes that value only.
func TestShippedPolicyIsTheDefault(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "artifacts", "components", "event-policy", "event-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	versioned, kind, err := Decode(data)
	if err != nil || kind != "EventPolicy" {
		t.Fatalf("Decode: kind %q, error %v; want an EventPolicy", kind, err)
	}
	policy, err := Complete(versioned)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Default(), policy); diff != "" {
		t.Errorf("artifacts/components/event-policy/event-policy.yaml (-built-in +file):\n%s", diff)
	}
}

// TestRoundTrip: a policy written out as v1alpha1 decodes back to itself,
// so that what the server prints of its policy can be given to it again.
func TestRoundTrip(t *testing.T) {
	for _, policy := range []*eventpolicy.EventPolicy{
		defaults(),
		with(func(p *eventpolicy.EventPolicy) {
			p.Limits = []eventpolicy.Limit{{Type: eventpolicy.Namespace, QPS: 0.5, Burst: 3, CacheSize: 7}}
			p.Folding = eventpolicy.Folding{After: 1, Window: duration(time.Second), FlushInterval: duration(time.Millisecond), CacheSize: 1}
			p.Series.SweepInterval = duration(time.Hour)
			p.Export = eventpolicy.Export{Types: []string{"Warning"}, NamespaceRate: eventpolicy.ExportRate{QPS: 5, Burst: 50}}
		}),
	} {
		versioned := &v1alpha1.EventPolicy{}
		if err := scheme.Convert(policy, versioned, nil); err != nil {
			t.Fatal(err)
		}
		info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeYAML)
		if !ok {
			t.Fatal("no YAML serializer")
		}
		data, err := runtime.Encode(codecs.EncoderForVersion(info.Serializer, v1alpha1.SchemeGroupVersion), versioned)
		if err != nil {
			t.Fatal(err)
		}
		decoded, kind, err := Decode(data)
		if err != nil {
			t.Fatalf("decoding %s: %v", data, err)
		}
		got, err := Complete(decoded)
		if err != nil {
			t.Fatalf("completing %s: %v", data, err)
		}
		if kind != "EventPolicy" {
			t.Errorf("kind %q, want EventPolicy", kind)
		}
		if diff := cmp.Diff(policy, got); diff != "" {
			t.Errorf("round trip through\n%s(-want +got):\n%s", data, diff)
		}
	}
}
