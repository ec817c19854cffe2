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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the group of the event policy's configuration kinds.
const GroupName = "eventpolicy.config.events.k8s.io"

// SchemeGroupVersion is the version of EventPolicy.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// The groups of the admission plugins' former configuration kinds.
var (
	RateLimitGroupVersion = schema.GroupVersion{Group: "eventratelimit.admission.events.k8s.io", Version: "v1alpha1"}
	SeriesGroupVersion    = schema.GroupVersion{Group: "eventseries.admission.events.k8s.io", Version: "v1alpha1"}
)

var (
	// SchemeBuilder collects the functions that register this version.
	SchemeBuilder      runtime.SchemeBuilder
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme registers the kinds of this version, their conversions
	// and their defaults.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	// The generated conversion and defaulting functions register themselves
	// through localSchemeBuilder.
	localSchemeBuilder.Register(addKnownTypes, addDefaultingFuncs)
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &EventPolicy{})
	scheme.AddKnownTypes(RateLimitGroupVersion, &EventRateLimitConfiguration{})
	scheme.AddKnownTypes(SeriesGroupVersion, &EventSeriesConfiguration{})
	return nil
}
