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
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestKubeEventRateLimitCommand(t *testing.T) {
	const policy = `apiVersion: eventpolicy.config.events.k8s.io/v1alpha1
kind: EventPolicy
limits:
- {type: Reporter, qps: 5, burst: 10}
- {type: Namespace, qps: 2.5, burst: 40, cacheSize: 64}
`
	tests := []struct {
		name    string
		policy  string // file contents; empty: no --event-policy-config
		args    []string
		want    string
		wantErr string
	}{
		{
			name:   "the plugin's configuration",
			policy: policy,
			want: `apiVersion: eventratelimit.admission.k8s.io/v1alpha1
kind: Configuration
limits:
- burst: 10
  cacheSize: 4096
  qps: 5
  type: User
- burst: 40
  cacheSize: 64
  qps: 3
  type: Namespace
`,
		},
		{
			name:   "a whole admission configuration",
			policy: policy,
			args:   []string{"--admission-configuration"},
			want: `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- configuration:
    apiVersion: eventratelimit.admission.k8s.io/v1alpha1
    kind: Configuration
    limits:
    - burst: 10
      cacheSize: 4096
      qps: 5
      type: User
    - burst: 40
      cacheSize: 64
      qps: 3
      type: Namespace
  name: EventRateLimit
`,
		},
		{
			name: "the default policy",
			want: `apiVersion: eventratelimit.admission.k8s.io/v1alpha1
kind: Configuration
limits:
- burst: 200
  cacheSize: 4096
  qps: 20
  type: User
- burst: 100
  cacheSize: 4096
  qps: 10
  type: SourceAndObject
- burst: 2000
  cacheSize: 4096
  qps: 200
  type: Namespace
`,
		},
		{
			name:    "a policy without limits",
			policy:  "apiVersion: eventpolicy.config.events.k8s.io/v1alpha1\nkind: EventPolicy\nlimits: []\n",
			wantErr: "the event policy has no limits",
		},
		{
			name:    "an invalid policy",
			policy:  "apiVersion: eventpolicy.config.events.k8s.io/v1alpha1\nkind: EventPolicy\nlimits: [{type: Reporter, qps: -1, burst: 1}]\n",
			wantErr: "limits[0].qps",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{KubeEventRateLimitCommandName}
			if tt.policy != "" {
				path := filepath.Join(t.TempDir(), "policy.yaml")
				if err := os.WriteFile(path, []byte(tt.policy), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--event-policy-config="+path)
			}
			cmd := NewCommand(context.Background(), &MemoryLimit{})
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&bytes.Buffer{})
			cmd.SetArgs(append(args, tt.args...))
			err := cmd.Execute()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, out.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}
