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
	"fmt"
	"io"
	"os"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"

	"github.com/kube-events/events-apiserver/pkg/admission/eventratelimit"
	"github.com/kube-events/events-apiserver/pkg/admission/eventseries"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/load"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/v1alpha1"
)

// policyKind is the kind --event-policy-config holds.
const policyKind = "EventPolicy"

// formerPolicyKinds are the configuration kinds that the admission
// configuration file's entries of the events plugins held before the event
// policy had a file of its own; each sets its part of the policy.
var formerPolicyKinds = map[string]string{
	eventratelimit.PluginName: "EventRateLimitConfiguration", // limits, folding
	eventseries.PluginName:    "EventSeriesConfiguration",    // series
}

// eventPolicy is the event policy the admission plugins, the store and the
// series controllers share, decoded once (the first call) from
// --event-policy-config; without it, from the former plugin configuration
// kinds in the entries of the enabled events plugins in
// --admission-control-config-file, which are converted; without either, the
// defaults. Giving both is an error that says where to move the settings.
// The admission chain's factories call it; call it after Complete.
func (o *Options) eventPolicy() (*eventpolicy.EventPolicy, error) {
	if o.policy == nil && o.policyErr == nil {
		o.policy, o.policyErr = o.loadPolicy()
	}
	return o.policy, o.policyErr
}

func (o *Options) loadPolicy() (*eventpolicy.EventPolicy, error) {
	policy, err := decodePolicyFile(o.EventPolicyConfig)
	if err != nil {
		return nil, err
	}

	configFile := o.Recommended.Admission.ConfigFile
	if configFile != "" {
		configScheme := runtime.NewScheme()
		apiserverinstall.Install(configScheme)
		plugins := slices.DeleteFunc(o.AdmissionPlugins(), func(name string) bool { return formerPolicyKinds[name] == "" })
		provider, err := admission.ReadAdmissionConfiguration(plugins, configFile, configScheme)
		if err != nil {
			return nil, fmt.Errorf("reading the event policy from --admission-control-config-file: %w", err)
		}
		for _, plugin := range plugins {
			converted, err := mergeFormerPolicy(policy, provider, plugin, o.EventPolicyConfig != "")
			if err != nil {
				return nil, fmt.Errorf("--admission-control-config-file %s: %w", configFile, err)
			}
			if converted {
				o.convertedPolicyKinds = append(o.convertedPolicyKinds, formerPolicyKinds[plugin])
			}
		}
	}
	return load.Complete(policy)
}

// decodePolicyFile decodes the EventPolicy in the file of
// --event-policy-config, not defaulted; no file sets nothing.
func decodePolicyFile(path string) (*v1alpha1.EventPolicy, error) {
	if path == "" {
		return &v1alpha1.EventPolicy{}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--event-policy-config: %w", err)
	}
	policy, kind, err := load.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("--event-policy-config %s: %w", path, err)
	}
	if kind != policyKind && kind != "" {
		return nil, fmt.Errorf("--event-policy-config %s: got kind %s, want %s (%s)", path, kind, policyKind, v1alpha1.SchemeGroupVersion)
	}
	return policy, nil
}

// mergeFormerPolicy copies the part of the policy that plugin's entry in
// the admission configuration sets (its former configuration kind) into
// policy and tells whether there was one; an entry without configuration
// sets nothing.
func mergeFormerPolicy(policy *v1alpha1.EventPolicy, provider admission.ConfigProvider, plugin string, policyFileGiven bool) (bool, error) {
	config, err := provider.ConfigFor(plugin)
	if err != nil || config == nil {
		return false, err
	}
	data, err := io.ReadAll(config)
	if err != nil {
		return false, err
	}
	decoded, kind, err := load.Decode(data)
	if err != nil {
		return false, fmt.Errorf("plugin %s: %w", plugin, err)
	}
	want := formerPolicyKinds[plugin]
	switch {
	case kind == "":
		return false, nil
	case kind != want:
		return false, fmt.Errorf("plugin %s: got kind %s, want %s; the event policy (kind %s) is given with --event-policy-config", plugin, kind, want, policyKind)
	case policyFileGiven:
		return false, fmt.Errorf("plugin %s configures the event policy with an %s, and so does --event-policy-config: "+
			"move its settings into the %s and remove the plugin's configuration", plugin, kind, policyKind)
	}
	if plugin == eventratelimit.PluginName {
		policy.Limits, policy.Folding = decoded.Limits, decoded.Folding
	} else {
		policy.Series = decoded.Series
	}
	return true, nil
}
