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
// +k8s:conversion-gen=github.com/kube-events/events-apiserver/pkg/apis/eventpolicy
// +k8s:defaulter-gen=TypeMeta
// +groupName=eventpolicy.config.events.k8s.io

// Package v1alpha1 is the file format of the event policy, given with
// --event-policy-config:
//
//	apiVersion: eventpolicy.config.events.k8s.io/v1alpha1
//	kind: EventPolicy
//	limits:                # default: the three below; [] limits nothing
//	- {type: Reporter, qps: 20, burst: 200}
//	- {type: Object, qps: 10, burst: 100}
//	- {type: Namespace, qps: 200, burst: 2000}
//	folding: {enabled: true, after: 10, window: 10m, flushInterval: 1s, cacheSize: 4096}
//	series: {finishAfter: 6m, heartbeatInterval: 30m, heartbeatSlack: 6m, sweepInterval: 1m}
//
// It also holds the two configuration kinds the admission plugins read
// before the policy had a home of its own (EventRateLimitConfiguration,
// EventSeriesConfiguration, in their own groups): an admission
// configuration file that gives them is still read, and converted.
package v1alpha1
