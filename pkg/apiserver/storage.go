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
	"k8s.io/apimachinery/pkg/runtime"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	basecompatibility "k8s.io/component-base/compatibility"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	"github.com/kube-events/events-apiserver/pkg/apis/events"
	eventsv1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1"
	eventsv1beta1 "github.com/kube-events/events-apiserver/pkg/apis/events/v1beta1"
)

// DefaultEtcdPathPrefix is kube-apiserver's, so that events are stored at
// /registry/events/<namespace>/<name> exactly as kube-apiserver stores them.
const DefaultEtcdPathPrefix = "/registry"

// StorageMediaType is how events are encoded in etcd: protobuf, as
// kube-apiserver encodes them.
const StorageMediaType = runtime.ContentTypeProtobuf

// NewStorageFactory returns the storage factory for events: core/v1 Events
// at <prefix>/events, encoded as mediaType, read into the internal Event;
// events.k8s.io events cohabit with them, so an event written through any
// version is the same etcd key read through every other. It also makes
// admission webhooks with matchPolicy Equivalent see the two resources as
// one.
func NewStorageFactory(config storagebackend.Config, mediaType string, effectiveVersion basecompatibility.EffectiveVersion) *serverstorage.DefaultStorageFactory {
	coreEvents := core.Resource("events")
	eventsEvents := events.Resource("events")

	encoding := serverstorage.NewDefaultResourceEncodingConfigForEffectiveVersion(Scheme, effectiveVersion)
	encoding.SetResourceEncoding(coreEvents, corev1.SchemeGroupVersion, core.SchemeGroupVersion)
	encoding.SetResourceEncoding(eventsEvents, corev1.SchemeGroupVersion, core.SchemeGroupVersion)

	resources := serverstorage.NewResourceConfig()
	resources.EnableVersions(corev1.SchemeGroupVersion, eventsv1beta1.SchemeGroupVersion, eventsv1.SchemeGroupVersion)

	factory := serverstorage.NewDefaultStorageFactory(config, mediaType, Codecs, encoding, resources, nil)
	factory.AddCohabitatingResources(coreEvents, eventsEvents)
	return factory
}
