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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-events/events-apiserver/pkg/apiserver"
)

func TestLeaderElectionFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    apiserver.LeaderElectionConfig
		wantErr string
	}{
		{name: "defaults: elected, 15s lease, generated identity", want: apiserver.LeaderElectionConfig{TTL: 15 * time.Second}},
		{
			name: "lease duration and identity",
			args: []string{"--leader-elect-lease-duration=3s", "--leader-elect-identity=replica-a"},
			want: apiserver.LeaderElectionConfig{Identity: "replica-a", TTL: 3 * time.Second},
		},
		{
			name: "election off",
			args: []string{"--leader-elect=false"},
			want: apiserver.LeaderElectionConfig{Disabled: true, TTL: 15 * time.Second},
		},
		{
			name: "election off ignores the lease duration",
			args: []string{"--leader-elect=false", "--leader-elect-lease-duration=0s"},
			want: apiserver.LeaderElectionConfig{Disabled: true},
		},
		{
			name:    "lease under a second",
			args:    []string{"--leader-elect-lease-duration=500ms"},
			wantErr: "--leader-elect-lease-duration must be whole seconds, at least 1s, got 500ms",
		},
		{
			name:    "lease not whole seconds",
			args:    []string{"--leader-elect-lease-duration=1500ms"},
			wantErr: "--leader-elect-lease-duration must be whole seconds, at least 1s, got 1.5s",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := completed(t, tt.args...)
			checkError(t, o.Validate(), tt.wantErr)
			if tt.wantErr != "" {
				return
			}
			if diff := cmp.Diff(tt.want, o.LeaderElection.config()); diff != "" {
				t.Errorf("election configuration (-want +got):\n%s", diff)
			}
		})
	}
}
