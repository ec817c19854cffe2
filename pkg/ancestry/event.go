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

package ancestry

import (
	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
)

// RegardingReference is what the resolver needs of the object event is
// about. A namespaced object's events are in its namespace, which a
// reference that leaves it out means. An object of another namespace is
// out of scope: its chain is not read on behalf of a writer who may write
// events only in its own (kube-apiserver's validation lets such an event
// through when it has an eventTime, and so does this server's).
func RegardingReference(event *core.Event) Reference {
	regarding := event.InvolvedObject
	ref := Reference{
		APIVersion: regarding.APIVersion,
		Kind:       regarding.Kind,
		Namespace:  regarding.Namespace,
		Name:       regarding.Name,
		UID:        regarding.UID,
	}
	switch ref.Namespace {
	case "":
		ref.Namespace = event.Namespace
	case event.Namespace:
	default:
		ref.OutOfScope = ReasonOtherNamespace
	}
	return ref
}

// SetChain sets event's annotations to chain: the ownerchain.Annotation when
// it has ancestors, the ownerchain.PendingAnnotation when it is pending; each
// is removed otherwise.
func SetChain(event *core.Event, chain Chain) {
	set := func(key, value string) {
		if value == "" {
			delete(event.Annotations, key)
			return
		}
		if event.Annotations == nil {
			event.Annotations = map[string]string{}
		}
		event.Annotations[key] = value
	}
	set(ownerchain.Annotation, ownerchain.Encode(chain.Ancestors))
	set(ownerchain.PendingAnnotation, chain.Pending)
}
