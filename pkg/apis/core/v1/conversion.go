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

package v1

import (
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
)

func addFieldLabelConversionFuncs(scheme *runtime.Scheme) error {
	return eventconversion.AddFieldLabelConversionFunc(scheme, SchemeGroupVersion.WithKind("Event"), eventconversion.CoreV1FieldLabels())
}

// Convert_core_Event_To_v1_Event converts every field core/v1 has; the
// internal DeprecatedHost only carries a v1beta1 conflict to validation.
func Convert_core_Event_To_v1_Event(in *core.Event, out *Event, s conversion.Scope) error {
	return autoConvert_core_Event_To_v1_Event(in, out, s)
}
