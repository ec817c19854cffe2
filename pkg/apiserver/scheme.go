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

package apiserver

import (
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	coreinstall "github.com/kube-events/events-apiserver/pkg/apis/core/install"
	eventsinstall "github.com/kube-events/events-apiserver/pkg/apis/events/install"
	summariesinstall "github.com/kube-events/events-apiserver/pkg/apis/summaries/install"
)

var (
	// Scheme knows the internal Event, core/v1, events.k8s.io/v1beta1 and
	// v1, the event summaries, and the meta types every API server serves.
	Scheme = runtime.NewScheme()
	// Codecs serializes Scheme's types as JSON, YAML, protobuf and CBOR.
	Codecs = serializer.NewCodecFactory(Scheme)
	// ParameterCodec decodes query parameters into options types.
	ParameterCodec = runtime.NewParameterCodec(Scheme)
)

func init() {
	coreinstall.Install(Scheme)
	eventsinstall.Install(Scheme)
	summariesinstall.Install(Scheme)
	utilruntime.Must(metainternalversion.AddToScheme(Scheme))

	// Options types (ListOptions, GetOptions, ...) in the unversioned v1
	// group that generic handlers decode request parameters into, and the
	// unversioned Status and discovery types.
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	metav1.AddToGroupVersion(Scheme, unversioned)
	Scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{},
		&metav1.APIVersions{},
		&metav1.APIGroupList{},
		&metav1.APIGroup{},
		&metav1.APIResourceList{},
	)
}
