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
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/load"
)

// TestEventPolicy: the policy comes from --event-policy-config, or from the
// former plugin kinds in the admission configuration file (embedded, or in
// a file of their own), or is the default; mixing the two ways, or giving a
// kind in the wrong place, is an error that says what to do.
func TestEventPolicy(t *testing.T) {
	dir := t.TempDir()
	write := func(name, contents string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(contents), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const admissionHeader = "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"
	policyFile := write("policy.yaml", "apiVersion: eventpolicy.config.events.k8s.io/v1alpha1\nkind: EventPolicy\n"+
		"limits: []\nfolding: {after: 3}\nseries: {heartbeatInterval: 10m, sweepInterval: 5s}\n")
	write("eventseries.yaml", "apiVersion: eventseries.admission.events.k8s.io/v1alpha1\nkind: EventSeriesConfiguration\nfinishAfter: 3m\n")
	former := write("former.yaml", admissionHeader+
		"- name: EventSeries\n  path: eventseries.yaml\n"+
		"- name: EventRateLimit\n  configuration:\n"+
		"    apiVersion: eventratelimit.admission.events.k8s.io/v1alpha1\n    kind: EventRateLimitConfiguration\n    folding: {enabled: false}\n")
	otherPlugins := write("other.yaml", admissionHeader+"- name: NamespaceLifecycle\n  path: nowhere.yaml\n")
	policyInEntry := write("policy-in-entry.yaml", admissionHeader+"- name: EventSeries\n  path: policy.yaml\n")
	swapped := write("swapped.yaml", admissionHeader+"- name: EventRateLimit\n  path: eventseries.yaml\n")

	tests := []struct {
		name string
		args []string
		want func(*eventpolicy.EventPolicy)
		// wantConverted are the former kinds converted, for the server to log.
		wantConverted []string
		wantErr       string
	}{
		{name: "nothing given: the defaults", want: func(*eventpolicy.EventPolicy) {}},
		{
			name: "--event-policy-config",
			args: []string{"--event-policy-config=" + policyFile},
			want: func(p *eventpolicy.EventPolicy) {
				p.Limits = []eventpolicy.Limit{}
				p.Folding.After = 3
				p.Series.HeartbeatInterval, p.Series.SweepInterval = duration(10*time.Minute), duration(5*time.Second)
			},
		},
		{
			name: "former plugin kinds, converted",
			args: []string{"--admission-control-config-file=" + former},
			want: func(p *eventpolicy.EventPolicy) {
				p.Folding.Enabled = false
				p.Series.FinishAfter = duration(3 * time.Minute)
			},
			wantConverted: []string{"EventSeriesConfiguration", "EventRateLimitConfiguration"},
		},
		{
			name:          "the entry of a disabled plugin is not read",
			args:          []string{"--admission-control-config-file=" + former, "--disable-admission-plugins=EventSeries"},
			want:          func(p *eventpolicy.EventPolicy) { p.Folding.Enabled = false },
			wantConverted: []string{"EventRateLimitConfiguration"},
		},
		{
			name: "other plugins' entries alone: the defaults",
			args: []string{"--admission-control-config-file=" + otherPlugins},
			want: func(*eventpolicy.EventPolicy) {},
		},
		{
			name: "the policy file with the same settings in the admission configuration",
			args: []string{"--event-policy-config=" + policyFile, "--admission-control-config-file=" + former},
			wantErr: "plugin EventSeries configures the event policy with an EventSeriesConfiguration, and so does --event-policy-config: " +
				"move its settings into the EventPolicy",
		},
		{
			name:    "an EventPolicy in a plugin's entry",
			args:    []string{"--admission-control-config-file=" + policyInEntry},
			wantErr: "plugin EventSeries: got kind EventPolicy, want EventSeriesConfiguration; the event policy (kind EventPolicy) is given with --event-policy-config",
		},
		{
			name:    "one plugin's kind in the other's entry",
			args:    []string{"--admission-control-config-file=" + swapped},
			wantErr: "plugin EventRateLimit: got kind EventSeriesConfiguration, want EventRateLimitConfiguration",
		},
		{
			name:    "a former kind in the policy file",
			args:    []string{"--event-policy-config=" + filepath.Join(dir, "eventseries.yaml")},
			wantErr: "got kind EventSeriesConfiguration, want EventPolicy (eventpolicy.config.events.k8s.io/v1alpha1)",
		},
		{
			name:    "a missing policy file",
			args:    []string{"--event-policy-config=" + filepath.Join(dir, "missing.yaml")},
			wantErr: "no such file",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := completed(t, tt.args...)
			got, err := o.eventPolicy()
			checkError(t, err, tt.wantErr)
			if tt.wantErr != "" {
				return
			}
			want := load.Default()
			tt.want(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("event policy (-want +got):\n%s", diff)
			}
			if again, _ := o.eventPolicy(); again != got {
				t.Error("the policy was decoded a second time")
			}
			if diff := cmp.Diff(tt.wantConverted, o.convertedPolicyKinds); diff != "" {
				t.Errorf("converted kinds (-want +got):\n%s", diff)
			}
		})
	}
}
