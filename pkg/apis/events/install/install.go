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

// Package install registers events.k8s.io (internal, v1beta1, v1) in a scheme.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/kube-events/events-apiserver/pkg/apis/events"
	eventsv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	eventsv1beta1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1beta1"
)

// Install registers the events.k8s.io group. v1beta1 comes first in priority:
// it is the version this server exists to serve (see artifacts/ for the
// APIService that makes it the group's preferred version in a cluster).
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(events.AddToScheme(scheme))
	utilruntime.Must(eventsv1beta1.AddToScheme(scheme))
	utilruntime.Must(eventsv1.AddToScheme(scheme))
	utilruntime.Must(scheme.SetVersionPriority(eventsv1beta1.SchemeGroupVersion, eventsv1.SchemeGroupVersion))
}
