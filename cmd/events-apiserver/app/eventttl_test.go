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
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
)

func TestEventTTLWarning(t *testing.T) {
	for _, tc := range []struct {
		name           string
		ttl, heartbeat time.Duration
		wantWarning    bool
	}{
		{name: "defaults: 1h TTL, 30m heartbeat", ttl: time.Hour, heartbeat: 30 * time.Minute},
		{name: "TTL equal to the heartbeat interval", ttl: 30 * time.Minute, heartbeat: 30 * time.Minute},
		{name: "TTL shorter than the heartbeat interval", ttl: 10 * time.Minute, heartbeat: 30 * time.Minute, wantWarning: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := eventTTLWarning(tc.ttl, tc.heartbeat); (got != "") != tc.wantWarning {
				t.Errorf("eventTTLWarning(%v, %v) = %q, want a warning: %v", tc.ttl, tc.heartbeat, got, tc.wantWarning)
			}
		})
	}
}

// TestWarnEventTTL checks that the warning is logged, with its reason,
// against the heartbeat interval the server is configured with.
func TestWarnEventTTL(t *testing.T) {
	configFile := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(configFile, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: EventSeries
  configuration:
    apiVersion: eventseries.admission.events.k8s.io/v1alpha1
    kind: EventSeriesConfiguration
    heartbeatInterval: 2h
`), 0o600); err != nil {
		t.Fatal(err)
	}
	const warning = "Warning: --event-ttl is shorter than the series heartbeat interval"
	for _, tc := range []struct {
		name        string
		args        []string
		wantWarning bool
	}{
		{name: "defaults", args: nil},
		{name: "TTL under the default heartbeat interval", args: []string{"--event-ttl=10m"}, wantWarning: true},
		{name: "EventSeries disabled: client-go's heartbeat interval still applies", args: []string{"--event-ttl=10m", "--disable-admission-plugins=EventSeries"}, wantWarning: true},
		{name: "the configured heartbeat interval", args: []string{"--admission-control-config-file=" + configFile}, wantWarning: true},
		{name: "a TTL over the configured heartbeat interval", args: []string{"--admission-control-config-file=" + configFile, "--event-ttl=3h"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := completed(t, tc.args...)
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
			o.warnEventTTL(logger)
			logged := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
			if got := strings.Contains(logged, warning); got != tc.wantWarning {
				t.Fatalf("warning logged: %v, want %v; log:\n%s", got, tc.wantWarning, logged)
			}
			if tc.wantWarning && !strings.Contains(logged, "expires before its next heartbeat") {
				t.Errorf("the warning gives no reason:\n%s", logged)
			}
		})
	}
}
