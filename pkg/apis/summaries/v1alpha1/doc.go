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
// +k8s:conversion-gen=github.com/kube-events/events-apiserver/pkg/apis/summaries
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.kubeevents.summaries.v1alpha1
// +groupName=summaries.kube-events.io

// Package v1alpha1 serves the event summaries as summaries.kube-events.io/v1alpha1:
// a read-only, namespaced resource, eventsummaries, listed with every field
// selector events accept (history.since included).
package v1alpha1
