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

// Package recorder is an event recorder for controllers that speaks event
// series the way "Make Kubernetes Events useful and safe" asks: it
// implements client-go's tools/events EventRecorder and EventBroadcaster,
// so adopting it is a one-line change, and it
//
//   - creates the first occurrence of an event without series, turns it
//     into a series with one update on the next isomorphic occurrence
//     (series.count, lastObservedTime, state Ongoing), and then counts
//     further occurrences locally, without API calls;
//   - re-sends every live series once per heartbeat interval (30m) and
//     finishes it (state Finished, final count) once no occurrence came
//     for the finish threshold (6m);
//   - retries throttled (429) and failed (5xx, unreachable) writes with
//     exponential backoff and jitter, never sooner than Retry-After, keeping
//     them in a bounded buffer that drops oldest-first, counted and logged;
//   - on start, lists the events it reported before (reportingController
//     and reportingInstance) and continues their live series.
//
// It works against events-apiserver and against a plain kube-apiserver
// (events.k8s.io/v1), where series.state, which k8s.io/api's EventSeries
// lacks, is simply dropped. It imports only client-go, apimachinery,
// k8s.io/api, k8s.io/utils, klog and component-base/metrics.
//
// The README section "Recording events with series" shows how a
// controller switches to it and what it costs in API calls.
package recorder
