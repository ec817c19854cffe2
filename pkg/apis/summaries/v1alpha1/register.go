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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	eventconversion "github.com/kube-events/events-apiserver/pkg/conversion"
)

// GroupName is the group of the event summaries.
const GroupName = "summaries.kube-events.io"

// SchemeGroupVersion is summaries.kube-events.io/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

var (
	// SchemeBuilder collects the functions that register this version.
	SchemeBuilder      = runtime.NewSchemeBuilder(addKnownTypes)
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme registers v1alpha1 EventSummaries, their conversions and
	// field labels.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	// The generated conversion functions register themselves through
	// localSchemeBuilder; field labels are hand-written.
	localSchemeBuilder.Register(addFieldLabelConversionFuncs)
}

// Resource takes an unqualified resource and returns a Group qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&EventSummary{},
		&EventSummaryList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

// addFieldLabelConversionFuncs lets a summary's field selector select the
// events it counts: every label core/v1 or events.k8s.io accepts for
// events, history terms included.
func addFieldLabelConversionFuncs(scheme *runtime.Scheme) error {
	return eventconversion.AddFieldLabelConversionFunc(scheme, SchemeGroupVersion.WithKind("EventSummary"), eventconversion.AllFieldLabels())
}
