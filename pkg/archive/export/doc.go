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

// Package export sends every archived state of every event to an
// OpenTelemetry (OTLP) logs receiver: an operator's Collector, or a
// backend that takes OTLP itself. It follows the archive, not etcd, by a
// cursor of its own (the resourceVersion exported up to, kept in etcd
// beside the archive checkpoint and written only by the elected replica),
// never past the archive checkpoint, so that it resumes after a restart,
// a leader change or a receiver outage as long as the archive's retention,
// and sends each state at least once: a state is exported again only when
// the cursor had not moved past its batch, so duplicates are bounded by
// one batch per interruption. Each record carries the event's UID and
// resourceVersion (log.record.uid) for receivers to de-duplicate.
package export
