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

package eventseries

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/load"
)

// TestRegister: the registered factory builds the plugin with the series
// thresholds of the policy it is given, whatever configuration the chain
// hands it, and fails the chain when the policy could not be loaded.
func TestRegister(t *testing.T) {
	custom := load.Default()
	custom.Series.FinishAfter = metav1.Duration{Duration: time.Minute}
	tests := []struct {
		name    string
		policy  *eventpolicy.EventPolicy
		err     error
		want    eventpolicy.Series
		wantErr string
	}{
		{name: "defaults", policy: load.Default(), want: load.Default().Series},
		{name: "the policy's thresholds", policy: custom, want: custom.Series},
		{name: "no policy fails the server start", err: errors.New("invalid event policy"), wantErr: "invalid event policy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plugins := admission.NewPlugins()
			Register(plugins, func() (*eventpolicy.EventPolicy, error) { return tc.policy, tc.err })
			if got := plugins.Registered(); len(got) != 1 || got[0] != PluginName {
				t.Fatalf("registered %v, want [%s]", got, PluginName)
			}
			plugin, err := plugins.InitPlugin(PluginName, strings.NewReader("ignored"), noInitializer{})
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
	if _, err := NewPlugin(eventpolicy.Series{FinishAfter: metav1.Duration{Duration: time.Minute}}, nil); err == nil ||
		!strings.Contains(err.Error(), "heartbeatInterval") || !strings.Contains(err.Error(), "heartbeatSlack") {
		t.Errorf("got %v, want errors for heartbeatInterval and heartbeatSlack", err)
	}
}

// noInitializer stands in for the server's plugin initializers, which the
// plugin does not need.
type noInitializer struct{}

func (noInitializer) Initialize(admission.Interface) {}
