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
	"github.com/spf13/cobra"
	cliflag "k8s.io/component-base/cli/flag"
	"sigs.k8s.io/yaml"

	"github.com/kube-events/events-apiserver/pkg/admission/eventratelimit"
	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy/load"
)

// KubeEventRateLimitCommandName is the subcommand that prints
// kube-apiserver's EventRateLimit configuration.
const KubeEventRateLimitCommandName = "kube-apiserver-eventratelimit"

// kubeAdmissionConfiguration is kube-apiserver's admission configuration
// file (apiserver.config.k8s.io/v1 AdmissionConfiguration) with the one
// plugin entry the command prints.
type kubeAdmissionConfiguration struct {
	APIVersion string                     `json:"apiVersion"`
	Kind       string                     `json:"kind"`
	Plugins    []kubeAdmissionPluginEntry `json:"plugins"`
}

type kubeAdmissionPluginEntry struct {
	Name          string `json:"name"`
	Configuration any    `json:"configuration"`
}

// newKubeEventRateLimitCommand returns the command that prints the
// configuration of kube-apiserver's own EventRateLimit admission plugin for
// the event policy's limits, so that core/v1 writers, which kube-apiserver
// stores itself in offload and takeover modes, are held to them too.
//
// cols is the terminal's width for the help.
func newKubeEventRateLimitCommand(cols int) *cobra.Command {
	var policyFile string
	var admissionConfiguration bool
	cmd := &cobra.Command{
		Use:   KubeEventRateLimitCommandName,
		Short: "Print kube-apiserver's EventRateLimit configuration for the event policy's limits",
		Long: `Print, as YAML, the configuration of kube-apiserver's own EventRateLimit
admission plugin (eventratelimit.admission.k8s.io/v1alpha1 Configuration)
that holds core/v1 event writers to the limits of the event policy: Reporter
becomes User, Object becomes SourceAndObject, Namespace stays Namespace.
Without --event-policy-config, the default policy's limits.

kube-apiserver then needs --enable-admission-plugins=...,EventRateLimit and,
in its --admission-control-config-file, an entry for the plugin with this
configuration (or --admission-configuration prints a whole file with it).`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			versioned, err := decodePolicyFile(policyFile)
			if err != nil {
				return err
			}
			policy, err := load.Complete(versioned)
			if err != nil {
				return err
			}
			config, err := eventratelimit.NewKubeAPIServerConfiguration(policy.Limits)
			if err != nil {
				return err
			}
			var out any = config
			if admissionConfiguration {
				out = kubeAdmissionConfiguration{
					APIVersion: "apiserver.config.k8s.io/v1",
					Kind:       "AdmissionConfiguration",
					Plugins:    []kubeAdmissionPluginEntry{{Name: eventratelimit.PluginName, Configuration: config}},
				}
			}
			data, err := yaml.Marshal(out)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	var fss cliflag.NamedFlagSets
	fs := fss.FlagSet("policy")
	fs.StringVar(&policyFile, "event-policy-config", "", "File with the event policy (kind EventPolicy) whose limits to translate, as given to the server.")
	fs.BoolVar(&admissionConfiguration, "admission-configuration", false, "Print a whole admission configuration file (apiserver.config.k8s.io/v1 AdmissionConfiguration) with the plugin's entry, for --admission-control-config-file.")
	cmd.Flags().AddFlagSet(fs)
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)
	return cmd
}
