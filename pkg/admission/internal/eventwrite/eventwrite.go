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

// Package eventwrite tells the server's admission plugins which requests
// write an event: the one test each of them applies first.
package eventwrite

import (
	"k8s.io/apiserver/pkg/admission"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/events"
)

// Is reports whether a is a request on events themselves (not a
// subresource), through core/v1 or events.k8s.io.
func Is(a admission.Attributes) bool {
	resource := a.GetResource()
	return resource.Resource == "events" && a.GetSubresource() == "" &&
		(resource.Group == core.GroupName || resource.Group == events.GroupName)
}
