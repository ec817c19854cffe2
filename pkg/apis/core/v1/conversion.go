package v1

import (
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
)

func addFieldLabelConversionFuncs(scheme *runtime.Scheme) error {
	return eventconversion.AddFieldLabelConversionFunc(scheme, SchemeGroupVersion, eventconversion.CoreV1FieldLabels())
}

// Convert_core_Event_To_v1_Event converts every field core/v1 has; the
// internal DeprecatedHost only carries a v1beta1 conflict to validation.
func Convert_core_Event_To_v1_Event(in *core.Event, out *Event, s conversion.Scope) error {
	return autoConvert_core_Event_To_v1_Event(in, out, s)
}
