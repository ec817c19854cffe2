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

package eventratelimit

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/load"
)

func TestNewKubeAPIServerConfiguration(t *testing.T) {
	tests := []struct {
		name    string
		limits  []eventpolicy.Limit
		want    []KubeAPIServerLimit
		wantErr error
	}{
		{
			name:   "the default policy",
			limits: load.Default().Limits,
			want: []KubeAPIServerLimit{
				{Type: "User", QPS: 20, Burst: 200, CacheSize: 4096},
				{Type: "SourceAndObject", QPS: 10, Burst: 100, CacheSize: 4096},
				{Type: "Namespace", QPS: 200, Burst: 2000, CacheSize: 4096},
			},
		},
		{
			name:   "a fractional qps is rounded up",
			limits: []eventpolicy.Limit{{Type: eventpolicy.Namespace, QPS: 0.5, Burst: 3, CacheSize: 16}},
			want:   []KubeAPIServerLimit{{Type: "Namespace", QPS: 1, Burst: 3, CacheSize: 16}},
		},
		{
			name:    "no limits",
			limits:  []eventpolicy.Limit{},
			wantErr: ErrNoLimits,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewKubeAPIServerConfiguration(tt.limits)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got error %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got.APIVersion != KubeAPIServerConfigurationAPIVersion || got.Kind != KubeAPIServerConfigurationKind {
				t.Errorf("got %s %s, want %s %s", got.APIVersion, got.Kind, KubeAPIServerConfigurationAPIVersion, KubeAPIServerConfigurationKind)
			}
			if diff := cmp.Diff(tt.want, got.Limits); diff != "" {
				t.Errorf("limits (-want +got):\n%s", diff)
			}
		})
	}
}
