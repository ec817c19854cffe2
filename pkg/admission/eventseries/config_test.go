package eventseries

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/admission"
)

const configHeader = "apiVersion: eventseries.admission.events.k8s.io/v1alpha1\nkind: EventSeriesConfiguration\n"

func TestLoadConfiguration(t *testing.T) {
	tests := []struct {
		name    string
		config  io.Reader
		want    Thresholds
		wantErr string
	}{
		{
			name:   "no configuration gives the client-go defaults",
			config: nil,
			want:   Thresholds{FinishAfter: 6 * time.Minute, HeartbeatInterval: 30 * time.Minute, HeartbeatSlack: 6 * time.Minute},
		},
		{
			name:   "empty configuration gives the defaults",
			config: strings.NewReader("  \n"),
			want:   DefaultThresholds(),
		},
		{
			name:   "header only gives the defaults",
			config: strings.NewReader(configHeader),
			want:   DefaultThresholds(),
		},
		{
			name:   "custom values in YAML",
			config: strings.NewReader(configHeader + "finishAfter: 90s\nheartbeatInterval: 1h\nheartbeatSlack: 10m\n"),
			want:   Thresholds{FinishAfter: 90 * time.Second, HeartbeatInterval: time.Hour, HeartbeatSlack: 10 * time.Minute},
		},
		{
			name: "custom values in JSON, as an embedded plugin configuration arrives",
			config: strings.NewReader(`{"apiVersion":"eventseries.admission.events.k8s.io/v1alpha1","kind":"EventSeriesConfiguration",` +
				`"finishAfter":"2m","heartbeatSlack":"1m30s"}`),
			want: Thresholds{FinishAfter: 2 * time.Minute, HeartbeatInterval: 30 * time.Minute, HeartbeatSlack: 90 * time.Second},
		},
		{
			name:   "sweep interval",
			config: strings.NewReader(configHeader + "sweepInterval: 500ms\n"),
			want: Thresholds{FinishAfter: DefaultFinishAfter, HeartbeatInterval: DefaultHeartbeatInterval, HeartbeatSlack: DefaultHeartbeatSlack,
				SweepInterval: 500 * time.Millisecond},
		},
		{
			name:    "zero sweep interval",
			config:  strings.NewReader(configHeader + "sweepInterval: 0s\n"),
			wantErr: `sweepInterval: Invalid value: "0s": must be a positive duration`,
		},
		{
			name:    "unknown field",
			config:  strings.NewReader(configHeader + "finishAfter: 6m\nheartbeat: 30m\n"),
			wantErr: `unknown field "heartbeat"`,
		},
		{
			name:    "duplicate field",
			config:  strings.NewReader(configHeader + "finishAfter: 6m\nfinishAfter: 7m\n"),
			wantErr: `"finishAfter" already set`,
		},
		{
			name:    "wrong kind",
			config:  strings.NewReader("apiVersion: eventseries.admission.events.k8s.io/v1alpha1\nkind: EventRateLimitConfiguration\n"),
			wantErr: `kind "EventRateLimitConfiguration"`,
		},
		{
			name:    "wrong apiVersion",
			config:  strings.NewReader("apiVersion: eventseries.admission.events.k8s.io/v1\nkind: EventSeriesConfiguration\n"),
			wantErr: `apiVersion "eventseries.admission.events.k8s.io/v1"`,
		},
		{
			name:    "missing apiVersion and kind",
			config:  strings.NewReader("finishAfter: 6m\n"),
			wantErr: `want apiVersion "eventseries.admission.events.k8s.io/v1alpha1", kind "EventSeriesConfiguration"`,
		},
		{
			name:    "zero duration",
			config:  strings.NewReader(configHeader + "finishAfter: 0s\n"),
			wantErr: `finishAfter: Invalid value: "0s": must be a positive duration`,
		},
		{
			name:    "negative durations are each reported",
			config:  strings.NewReader(configHeader + "heartbeatInterval: -30m\nheartbeatSlack: -1s\n"),
			wantErr: `[heartbeatInterval: Invalid value: "-30m0s": must be a positive duration, heartbeatSlack: Invalid value: "-1s": must be a positive duration]`,
		},
		{
			name:    "not a duration",
			config:  strings.NewReader(configHeader + "finishAfter: soon\n"),
			wantErr: `invalid duration "soon"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadConfiguration(tc.config)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestAbandonedAfter(t *testing.T) {
	if got := DefaultThresholds().AbandonedAfter(); got != 36*time.Minute {
		t.Errorf("default abandoned after %s, want 36m", got)
	}
}

func TestLoadThresholdsFromAdmissionConfigFile(t *testing.T) {
	dir := t.TempDir()
	pluginFile := filepath.Join(dir, "eventseries.yaml")
	writeFile(t, pluginFile, configHeader+"finishAfter: 3m\n")

	tests := []struct {
		name    string
		file    string // contents of the admission configuration file; "" means no file flag
		want    Thresholds
		wantErr string
	}{
		{
			name: "no admission configuration file",
			want: DefaultThresholds(),
		},
		{
			name: "embedded configuration",
			file: "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventSeries\n  configuration:\n" +
				"    apiVersion: eventseries.admission.events.k8s.io/v1alpha1\n    kind: EventSeriesConfiguration\n    heartbeatInterval: 10m\n",
			want: Thresholds{FinishAfter: DefaultFinishAfter, HeartbeatInterval: 10 * time.Minute, HeartbeatSlack: DefaultHeartbeatSlack},
		},
		{
			name: "configuration in a file of its own, relative to the admission configuration",
			file: "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventSeries\n  path: eventseries.yaml\n",
			want: Thresholds{FinishAfter: 3 * time.Minute, HeartbeatInterval: DefaultHeartbeatInterval, HeartbeatSlack: DefaultHeartbeatSlack},
		},
		{
			name: "other plugins only",
			file: "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventRateLimit\n  path: ratelimit.yaml\n",
			want: DefaultThresholds(),
		},
		{
			name: "invalid embedded configuration",
			file: "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventSeries\n  configuration:\n" +
				"    apiVersion: eventseries.admission.events.k8s.io/v1alpha1\n    kind: EventSeriesConfiguration\n    finishAfter: 0s\n",
			wantErr: "finishAfter: Invalid value",
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := ""
			if tc.file != "" {
				path = filepath.Join(dir, "admission-"+string(rune('a'+i))+".yaml")
				writeFile(t, path, tc.file)
			}
			got, err := LoadThresholdsFromAdmissionConfigFile(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRegister(t *testing.T) {
	plugins := admission.NewPlugins()
	Register(plugins)
	if got := plugins.Registered(); len(got) != 1 || got[0] != PluginName {
		t.Fatalf("registered %v, want [%s]", got, PluginName)
	}

	tests := []struct {
		name    string
		config  io.Reader
		want    Thresholds
		wantErr string
	}{
		{name: "defaults without configuration", want: DefaultThresholds()},
		{
			name:   "configured thresholds",
			config: strings.NewReader(configHeader + "finishAfter: 1m\n"),
			want:   Thresholds{FinishAfter: time.Minute, HeartbeatInterval: DefaultHeartbeatInterval, HeartbeatSlack: DefaultHeartbeatSlack},
		},
		{name: "invalid configuration fails the server start", config: strings.NewReader(configHeader + "finishAfter: -1m\n"), wantErr: "finishAfter"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plugin, err := plugins.InitPlugin(PluginName, tc.config, noInitializer{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			p, ok := plugin.(*Plugin)
			if !ok {
				t.Fatalf("got %T, want *Plugin", plugin)
			}
			if p.thresholds != tc.want {
				t.Errorf("thresholds %+v, want %+v", p.thresholds, tc.want)
			}
			for _, op := range []admission.Operation{admission.Create, admission.Update} {
				if !p.Handles(op) {
					t.Errorf("does not handle %s", op)
				}
			}
			for _, op := range []admission.Operation{admission.Delete, admission.Connect} {
				if p.Handles(op) {
					t.Errorf("handles %s", op)
				}
			}
		})
	}
}

func TestNewPluginRejectsInvalidThresholds(t *testing.T) {
	if _, err := NewPlugin(Thresholds{FinishAfter: time.Minute}, nil); err == nil ||
		!strings.Contains(err.Error(), "heartbeatInterval") || !strings.Contains(err.Error(), "heartbeatSlack") {
		t.Errorf("got %v, want errors for heartbeatInterval and heartbeatSlack", err)
	}
}

// noInitializer stands in for the server's plugin initializers, which the
// plugin does not need.
type noInitializer struct{}

func (noInitializer) Initialize(admission.Interface) {}

func writeFile(t *testing.T, path, contents string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(contents), 0o600); err != nil {
		t.Fatal(err)
	}
}
