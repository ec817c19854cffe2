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
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/load"
	"github.com/kube-events/events-apiserver/test/freeport"
)

func TestAdmissionPluginsPerMode(t *testing.T) {
	delegatedChain := []string{"NamespaceLifecycle", "MutatingAdmissionPolicy", "MutatingAdmissionWebhook",
		"EventSeries", "ValidatingAdmissionPolicy", "EventMemoryPressure", "EventRateLimit", "ValidatingAdmissionWebhook"}
	standaloneChain := []string{"EventSeries", "EventMemoryPressure", "EventRateLimit"}
	tests := []struct {
		name    string
		args    []string
		want    []string
		wantErr string
	}{
		{name: "standalone: only what needs no kube-apiserver", want: standaloneChain},
		{name: "standalone, EventSeries disabled", args: []string{"--disable-admission-plugins=EventSeries"}, want: []string{"EventMemoryPressure", "EventRateLimit"}},
		{name: "standalone, all disabled: empty chain", args: []string{"--disable-admission-plugins=EventSeries,EventMemoryPressure,EventRateLimit"}},
		{name: "standalone, disabling a kube plugin is fine", args: []string{"--disable-admission-plugins=NamespaceLifecycle"}, want: standaloneChain},
		{name: "standalone, enabling a kube plugin is an error", args: []string{"--enable-admission-plugins=NamespaceLifecycle"},
			want: standaloneChain, wantErr: "--enable-admission-plugins: NamespaceLifecycle needs a kube-apiserver and cannot run standalone"},
		{name: "standalone, enabling EventSeries is fine", args: []string{"--enable-admission-plugins=EventSeries"}, want: standaloneChain},
		{name: "unknown plugin", args: []string{"--disable-admission-plugins=NoSuchPlugin"}, want: standaloneChain,
			wantErr: `disable-admission-plugins plugin "NoSuchPlugin" is unknown`},
		{name: "delegated: the recommended chain with the server's plugins", args: []string{"--standalone=false"}, want: delegatedChain},
		{name: "delegated, EventSeries disabled", args: []string{"--standalone=false", "--disable-admission-plugins=EventSeries"},
			want: slices.DeleteFunc(slices.Clone(delegatedChain), func(name string) bool { return name == "EventSeries" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := completed(t, tt.args...)
			if got := o.AdmissionPlugins(); !slices.Equal(got, tt.want) {
				t.Errorf("admission plugins %v, want %v", got, tt.want)
			}
			checkError(t, o.Validate(), tt.wantErr)
		})
	}
}

// TestStandaloneConfigHasAdmissionSweeperAndFolding builds the configuration of a
// standalone server (Config connects to no etcd) and checks the admission
// chain, the sweeper thresholds and the folding configuration it carries;
// configuration errors fail it.
func TestStandaloneConfigHasAdmissionSweeperAndFolding(t *testing.T) {
	dir := t.TempDir()
	configFile := filepath.Join(dir, "admission.yaml")
	if err := os.WriteFile(configFile, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: EventSeries
  configuration:
    apiVersion: eventseries.admission.events.k8s.io/v1alpha1
    kind: EventSeriesConfiguration
    heartbeatInterval: 2s
    heartbeatSlack: 1s
    sweepInterval: 250ms
- name: EventRateLimit
  configuration:
    apiVersion: eventratelimit.admission.events.k8s.io/v1alpha1
    kind: EventRateLimitConfiguration
    folding: {after: 2, window: 1m, flushInterval: 1s}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	invalidLimitsFile := filepath.Join(dir, "invalid-limits.yaml")
	if err := os.WriteFile(invalidLimitsFile, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: EventRateLimit
  configuration:
    apiVersion: eventratelimit.admission.events.k8s.io/v1alpha1
    kind: EventRateLimitConfiguration
    limits: [{type: Reporter, qps: 1, burst: 0}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	defaultPolicy := load.Default()
	invalidFile := filepath.Join(dir, "invalid.yaml")
	if err := os.WriteFile(invalidFile, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: EventSeries
  configuration:
    apiVersion: eventseries.admission.events.k8s.io/v1alpha1
    kind: EventSeriesConfiguration
    finishAfter: -1s
`), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name        string
		args        []string
		wantAdmits  bool
		wantSweeper *eventpolicy.Series
		wantFold    *eventpolicy.Folding
		wantErr     string
	}{
		{
			name:        "default: plugin and sweeper with the default thresholds",
			wantAdmits:  true,
			wantFold:    &defaultPolicy.Folding,
			wantSweeper: &defaultPolicy.Series,
		},
		{
			name:       "configuration file: the sweeper gets the plugin's thresholds",
			args:       []string{"--admission-control-config-file=" + configFile},
			wantAdmits: true,
			wantSweeper: &eventpolicy.Series{FinishAfter: duration(6 * time.Minute), HeartbeatInterval: duration(2 * time.Second),
				HeartbeatSlack: duration(time.Second), SweepInterval: duration(250 * time.Millisecond)},
			wantFold: &eventpolicy.Folding{Enabled: true, After: 2, Window: duration(time.Minute), FlushInterval: duration(time.Second), CacheSize: 4096},
		},
		{
			name:    "invalid rate limits fail the configuration",
			args:    []string{"--admission-control-config-file=" + invalidLimitsFile},
			wantErr: "limits[0].burst: Invalid value: 0: must be positive",
		},
		{
			name: "plugins disabled: no admission, no sweeper, no folding",
			args: []string{"--disable-admission-plugins=EventSeries,EventMemoryPressure,EventRateLimit", "--admission-control-config-file=" + configFile},
		},
		{
			name:    "invalid thresholds fail the configuration",
			args:    []string{"--admission-control-config-file=" + invalidFile},
			wantErr: "finishAfter: Invalid value",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			o := parse(t, append([]string{"--data-dir=" + t.TempDir(), "--etcd-servers=http://127.0.0.1:1",
				"--secure-port=" + strconv.Itoa(freeport.Port(t))}, tt.args...)...)
			c, err := o.Complete()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			cfg, err := c.Config()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer cfg.GenericConfig.SecureServing.Listener.Close()
			chain := cfg.GenericConfig.AdmissionControl
			if chain == nil {
				t.Fatal("standalone server has no admission chain")
			}
			if _, ok := chain.(admission.MutationInterface); !ok {
				t.Fatalf("admission chain %T does not mutate", chain)
			}
			if _, ok := chain.(admission.ValidationInterface); !ok {
				t.Fatalf("admission chain %T does not validate", chain)
			}
			for _, op := range []admission.Operation{admission.Create, admission.Update} {
				if got := chain.Handles(op); got != tt.wantAdmits {
					t.Errorf("chain handles %s: %v, want %v", op, got, tt.wantAdmits)
				}
			}
			got := cfg.ExtraConfig.SeriesSweeper
			switch {
			case tt.wantSweeper == nil && got != nil:
				t.Errorf("sweeper with %+v, want none", *got)
			case tt.wantSweeper != nil && (got == nil || *got != *tt.wantSweeper):
				t.Errorf("sweeper with %v, want %+v", got, *tt.wantSweeper)
			}
			if diff := cmp.Diff(tt.wantFold, cfg.ExtraConfig.Fold); diff != "" {
				t.Errorf("folding (-want +got):\n%s", diff)
			}
		})
	}
}

func duration(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }
