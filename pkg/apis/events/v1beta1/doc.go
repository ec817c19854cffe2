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

// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/kube-events/events-apiserver/pkg/apis/core
// +k8s:conversion-gen-external-types=github.com/kube-events/events-apiserver/pkg/apis/events/v1beta1
// +k8s:defaulter-gen=TypeMeta
// +k8s:protobuf-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.k8s.eventsapiserver.events.v1beta1
// +groupName=events.k8s.io

// Package v1beta1 is events.k8s.io/v1beta1 Event: field for field, JSON and protobuf,
// the same as k8s.io/api/events/v1beta1.Event, plus series.state and the proposal's deprecatedHost.
// It converts to and from the internal core.Event.
package v1beta1
