package eventratelimit

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
)

const header = "apiVersion: eventratelimit.admission.events.k8s.io/v1alpha1\nkind: EventRateLimitConfiguration\n"

func TestLoadConfiguration(t *testing.T) {
	defaults := DefaultConfig()
	tests := []struct {
		name    string
		file    string
		want    Config
		wantErr string
	}{
		{name: "empty file: defaults", file: "", want: defaults},
		{name: "header only: defaults", file: header, want: defaults},
		{
			name: "limits replace the defaults, folding tuned",
			file: header + "limits:\n- {type: Object, qps: 0.5, burst: 2}\nfolding: {after: 2, window: 30s, flushInterval: 1s, cacheSize: 10}\n",
			want: Config{
				Limits: []Limit{{Type: Object, QPS: 0.5, Burst: 2, CacheSize: DefaultCacheSize}},
				Fold:   &eventregistry.FoldConfig{After: 2, Window: 30 * time.Second, FlushInterval: time.Second, CacheSize: 10},
			},
		},
		{name: "no limits, no folding", file: header + "limits: []\nfolding: {enabled: false}\n", want: Config{Limits: []Limit{}}},
		{name: "unknown type", file: header + "limits:\n- {type: User, qps: 1, burst: 1}\n", wantErr: `limits[0].type: Unsupported value: "User"`},
		{name: "duplicate type", file: header + "limits:\n- {type: Object, qps: 1, burst: 1}\n- {type: Object, qps: 2, burst: 2}\n", wantErr: `limits[1].type: Duplicate value: "Object"`},
		{name: "qps and burst must be positive", file: header + "limits:\n- {type: Namespace, qps: 0, burst: -1}\n", wantErr: "limits[0].qps: Invalid value: 0: must be positive, limits[0].burst: Invalid value: -1: must be positive"},
		{name: "folding thresholds", file: header + "folding: {after: 0, flushInterval: 0s}\n", wantErr: "folding.after: Invalid value: 0: must be at least 1"},
		{name: "unknown field", file: header + "limit: []\n", wantErr: `unknown field "limit"`},
		{name: "wrong kind", file: "apiVersion: eventratelimit.admission.events.k8s.io/v1alpha1\nkind: Configuration\n", wantErr: `kind "Configuration"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadConfiguration(strings.NewReader(tt.file))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error: got %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}
