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

package v1alpha1

import (
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/kube-events/events-apiserver/pkg/apis/eventpolicy"
)

// Convert_v1alpha1_Export_To_eventpolicy_Export converts the export
// selection; an unset namespaceRate (left unset only where defaulting did
// not run) is no bound.
func Convert_v1alpha1_Export_To_eventpolicy_Export(in *Export, out *eventpolicy.Export, s conversion.Scope) error {
	if err := autoConvert_v1alpha1_Export_To_eventpolicy_Export(in, out, s); err != nil {
		return err
	}
	out.NamespaceRate = eventpolicy.ExportRate{}
	if in.NamespaceRate != nil {
		out.NamespaceRate = eventpolicy.ExportRate{QPS: in.NamespaceRate.QPS, Burst: in.NamespaceRate.Burst}
	}
	return nil
}

// Convert_eventpolicy_Export_To_v1alpha1_Export converts the export
// selection back.
func Convert_eventpolicy_Export_To_v1alpha1_Export(in *eventpolicy.Export, out *Export, s conversion.Scope) error {
	if err := autoConvert_eventpolicy_Export_To_v1alpha1_Export(in, out, s); err != nil {
		return err
	}
	out.NamespaceRate = &ExportRate{QPS: in.NamespaceRate.QPS, Burst: in.NamespaceRate.Burst}
	return nil
}
