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
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	admissionmetrics "k8s.io/apiserver/pkg/admission/metrics"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-events/events-apiserver/pkg/admission/eventratelimit"
	"github.com/kube-events/events-apiserver/pkg/admission/eventseries"
	"github.com/kube-events/events-apiserver/pkg/admission/memorypressure"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
)

// standaloneAdmissionPlugins are the admission plugins that need no
// kube-apiserver: no namespaces to look up, no webhook or policy
// configurations to watch. Only they run in standalone mode.
var standaloneAdmissionPlugins = sets.New(eventratelimit.PluginName, eventseries.PluginName, memorypressure.PluginName)

// registerAdmissionPlugins registers the events server's own plugins next
// to the generic ones, with the event policy (eventPolicy), and turns them
// on by default. EventSeries comes after the mutating webhooks, so that it
// defaults the state of the event they produced, and before the validating
// plugins, which then see that state (mutating plugins all run before
// validating ones anyway). EventRateLimit, a validating plugin, comes after
// the validating steps that run in-process (EventSeries, the validating
// admission policies), so that a write they refuse costs no token, and
// before the validating webhooks, so that a write over budget is refused
// before the server calls out for it.
func (o *Options) registerAdmissionPlugins() {
	a := o.Recommended.Admission
	eventratelimit.Register(a.Plugins, o.eventPolicy)
	eventseries.Register(a.Plugins, o.eventPolicy)
	memorypressure.Register(a.Plugins, o.memory)
	ours := []string{eventseries.PluginName, memorypressure.PluginName, eventratelimit.PluginName}
	order := make([]string, 0, len(a.RecommendedPluginOrder)+len(ours))
	for _, name := range a.RecommendedPluginOrder {
		if slices.Contains(ours, name) {
			continue
		}
		if name == validatingwebhook.PluginName {
			order = append(order, memorypressure.PluginName, eventratelimit.PluginName)
		}
		order = append(order, name)
		if name == mutatingwebhook.PluginName {
			order = append(order, eventseries.PluginName)
		}
	}
	for _, name := range ours {
		if !slices.Contains(order, name) {
			order = append(order, name)
		}
	}
	a.RecommendedPluginOrder = order
}

// AdmissionPlugins returns the admission chain the server runs, in order:
// the recommended plugins, without the default-off and disabled ones, plus
// the enabled ones (the rule of the generic AdmissionOptions), and when
// standalone only those of them that need no kube-apiserver. Call it after
// Complete.
func (o *Options) AdmissionPlugins() []string {
	a := o.Recommended.Admission
	disabled := sets.New(a.DisablePlugins...).Union(a.DefaultOffPlugins).Difference(sets.New(a.EnablePlugins...))
	var names []string
	for _, name := range a.RecommendedPluginOrder {
		if disabled.Has(name) || (o.standalone && !standaloneAdmissionPlugins.Has(name)) {
			continue
		}
		names = append(names, name)
	}
	return names
}

// validateAdmission refuses, when standalone, to be asked explicitly for
// an admission plugin that cannot run without a kube-apiserver.
func (o *Options) validateAdmission() []error {
	if !o.standalone {
		return nil
	}
	var errs []error
	for _, name := range o.Recommended.Admission.EnablePlugins {
		if !standaloneAdmissionPlugins.Has(name) && slices.Contains(o.Recommended.Admission.Plugins.Registered(), name) {
			errs = append(errs, fmt.Errorf("--enable-admission-plugins: %s needs a kube-apiserver and cannot run standalone (standalone admission plugins: %s)",
				name, strings.Join(sets.List(standaloneAdmissionPlugins), ", ")))
		}
	}
	return errs
}

// applyAdmission sets the server's admission chain. Delegated, it is the
// generic one, whose plugins get the kube-apiserver's clients and informers.
// Standalone, it is built from AdmissionPlugins alone, reading their
// configuration from the same --admission-control-config-file.
func (o *Options) applyAdmission(cfg *genericapiserver.RecommendedConfig, kubeClient kubernetes.Interface, dynamicClient dynamic.Interface) error {
	r := o.Recommended
	if !o.standalone {
		initializers, err := r.ExtraAdmissionInitializers(cfg)
		if err != nil {
			return err
		}
		return r.Admission.ApplyTo(&cfg.Config, cfg.SharedInformerFactory, kubeClient, dynamicClient,
			r.FeatureGate, cfg.EffectiveVersion, initializers...)
	}

	names := o.AdmissionPlugins()
	configScheme := runtime.NewScheme()
	apiserverinstall.Install(configScheme)
	provider, err := admission.ReadAdmissionConfiguration(names, r.Admission.ConfigFile, configScheme)
	if err != nil {
		return fmt.Errorf("failed to read plugin config: %w", err)
	}
	chain, err := r.Admission.Plugins.NewFromPlugins(names, provider, admission.PluginInitializers{}, r.Admission.Decorators)
	if err != nil {
		return err
	}
	cfg.AdmissionControl = admissionmetrics.WithStepMetrics(chain)
	return nil
}

// seriesThresholds are the series thresholds of the event policy, for the
// series controllers; nil when the EventSeries plugin is not in the
// admission chain: no plugin, no series states to keep.
func (o *Options) seriesThresholds(policy *eventpolicy.EventPolicy) *eventpolicy.Series {
	if !slices.Contains(o.AdmissionPlugins(), eventseries.PluginName) {
		return nil
	}
	return &policy.Series
}

// folding is the folding of the event policy, for the store; nil when
// folding is off or the EventRateLimit plugin, which bounds the writes
// folding saves, is not in the admission chain.
func (o *Options) folding(policy *eventpolicy.EventPolicy) *eventpolicy.Folding {
	if !policy.Folding.Enabled || !slices.Contains(o.AdmissionPlugins(), eventratelimit.PluginName) {
		return nil
	}
	return &policy.Folding
}
