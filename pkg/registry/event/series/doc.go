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

// Package series keeps the state of event series true for every event in
// the store, whoever wrote it: the state controller gives a state to series
// stored without one (written by kube-apiserver in offload mode, copied by
// the mirror, or written while the EventSeries plugin was off), and the
// sweeper marks abandoned series Unknown. Both are server controllers, run
// on one replica at a time, and write through the registry store with
// event.InternalWriteContext, so that the strategy judges their writes as it
// judges a client's. The clock-dependent rules they apply, and their
// thresholds, are the event policy's (pkg/apis/eventpolicy), which the
// EventSeries admission plugin applies too.
package series
