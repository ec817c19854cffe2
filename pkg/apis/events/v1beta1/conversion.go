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

package v1beta1

import (
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
)

func addFieldLabelConversionFuncs(scheme *runtime.Scheme) error {
	return eventconversion.AddFieldLabelConversionFunc(scheme, SchemeGroupVersion.WithKind("Event"), eventconversion.EventsFieldLabels())
}

// Convert_v1beta1_Event_To_core_Event maps the events.k8s.io names onto the
// internal (core/v1-shaped) fields: regarding, note and the deprecated* fields,
// including deprecatedHost.
func Convert_v1beta1_Event_To_core_Event(in *Event, out *core.Event, s conversion.Scope) error {
	if err := autoConvert_v1beta1_Event_To_core_Event(in, out, s); err != nil {
		return err
	}
	if err := corev1.Convert_v1_ObjectReference_To_core_ObjectReference(&in.Regarding, &out.InvolvedObject, s); err != nil {
		return err
	}
	if err := corev1.Convert_v1_EventSource_To_core_EventSource(&in.DeprecatedSource, &out.Source, s); err != nil {
		return err
	}
	out.Message = in.Note
	out.FirstTimestamp = in.DeprecatedFirstTimestamp
	out.LastTimestamp = in.DeprecatedLastTimestamp
	out.Count = in.DeprecatedCount
	// deprecatedHost is the proposal's spelling of deprecatedSource.host.
	out.Source.Host, out.DeprecatedHost = eventconversion.Host(in.DeprecatedSource.Host, in.DeprecatedHost)
	return nil
}

// Convert_core_Event_To_v1beta1_Event maps the internal fields onto the
// events.k8s.io names. A legacy event without a reporting controller of its
// own shows its source.component as reportingController.
func Convert_core_Event_To_v1beta1_Event(in *core.Event, out *Event, s conversion.Scope) error {
	if err := autoConvert_core_Event_To_v1beta1_Event(in, out, s); err != nil {
		return err
	}
	if err := corev1.Convert_core_ObjectReference_To_v1_ObjectReference(&in.InvolvedObject, &out.Regarding, s); err != nil {
		return err
	}
	if err := corev1.Convert_core_EventSource_To_v1_EventSource(&in.Source, &out.DeprecatedSource, s); err != nil {
		return err
	}
	out.Note = in.Message
	out.DeprecatedFirstTimestamp = in.FirstTimestamp
	out.DeprecatedLastTimestamp = in.LastTimestamp
	out.DeprecatedCount = in.Count
	out.ReportingController = eventconversion.ReportingController(in.ReportingController, in.Source.Component)
	out.DeprecatedHost = in.Source.Host
	return nil
}
