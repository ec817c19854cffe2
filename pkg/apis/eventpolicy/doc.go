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
// +groupName=eventpolicy.config.events.k8s.io

// Package eventpolicy is the event policy: the rate limits the
// EventRateLimit admission plugin enforces, the folding of isomorphic
// creates that the store does, and the series thresholds that the
// EventSeries plugin and the series controllers apply. It is decoded once
// (pkg/apis/eventpolicy/load) and handed to each of them; this is its
// internal form, never serialized.
package eventpolicy
