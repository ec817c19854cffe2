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
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-events/events-apiserver/pkg/admission/eventratelimit"
	"github.com/kube-events/events-apiserver/pkg/admission/eventseries"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
)

// standaloneAdmissionPlugins are the admission plugins that need no
// kube-apiserver: no namespaces to look up, no webhook or policy
// configurations to watch. Only they run in standalone mode.
var standaloneAdmissionPlugins = sets.New(eventratelimit.PluginName, eventseries.PluginName)

// registerAdmissionPlugins registers the events server's own plugins next
// to the generic ones and turns them on by default. EventRateLimit comes
// first, so that a write over budget is refused before any other plugin
// spends work on it. EventSeries comes after
// the mutating webhooks, so that it defaults the state of the event they
// produced, and before the validating plugins, which then see that state
// (mutating plugins all run before validating ones anyway).
func registerAdmissionPlugins(a *genericoptions.AdmissionOptions) {
	eventratelimit.Register(a.Plugins)
	eventseries.Register(a.Plugins)
	order := make([]string, 0, len(a.RecommendedPluginOrder)+2)
	order = append(order, eventratelimit.PluginName)
	for _, name := range a.RecommendedPluginOrder {
		if name == eventratelimit.PluginName {
			continue
		}
		order = append(order, name)
		if name == mutatingwebhook.PluginName {
			order = append(order, eventseries.PluginName)
		}
	}
	if !slices.Contains(order, eventseries.PluginName) {
		order = append(order, eventseries.PluginName)
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

// seriesSweeperThresholds are the thresholds of the EventSeries plugin from
// --admission-control-config-file, for the sweeper; nil when the plugin is
// not in the admission chain.
func (o *Options) seriesSweeperThresholds() (*eventseries.Thresholds, error) {
	if !slices.Contains(o.AdmissionPlugins(), eventseries.PluginName) {
		return nil, nil
	}
	thresholds, err := eventseries.LoadThresholdsFromAdmissionConfigFile(o.Recommended.Admission.ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("%s configuration: %w", eventseries.PluginName, err)
	}
	return &thresholds, nil
}

// foldConfig is the folding configuration of the EventRateLimit plugin from
// --admission-control-config-file, for the store; nil when the plugin is
// not in the admission chain or folding is off.
func (o *Options) foldConfig() (*eventregistry.FoldConfig, error) {
	if !slices.Contains(o.AdmissionPlugins(), eventratelimit.PluginName) {
		return nil, nil
	}
	cfg, err := eventratelimit.LoadFromAdmissionConfigFile(o.Recommended.Admission.ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("%s configuration: %w", eventratelimit.PluginName, err)
	}
	return cfg.Fold, nil
}
