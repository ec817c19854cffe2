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

// Package validation holds the create and update rules for the internal
// Event. The rules depend on the API version a write came in through:
// events.k8s.io (v1beta1 and v1) writes are held to the strict rules of that
// API, core/v1 writes to the looser legacy rules that kubelets and
// controllers have relied on for years. Errors name fields as the client
// wrote them (regarding, note, deprecatedSource... for events.k8s.io;
// involvedObject, message, source... for core/v1).
//
// The rules follow kube-apiserver's pkg/apis/core/validation/events.go
// (Kubernetes v1.37), with these differences:
//   - events.k8s.io/v1beta1 writes get the strict rules, as v1 writes do;
//   - series.state, which upstream lacks, must be a known state in every
//     version, and a v1beta1 deprecatedHost that disagrees with
//     deprecatedSource.host is rejected;
//   - the series rules (series.go): what a series carries, how it may
//     change, and that Finished is final, for every writer (clients through
//     any version, the mirror, the server's controllers); the rules that
//     depend on the clock are the EventSeries admission plugin's;
//   - on strict create every missing or malformed reporting field is
//     reported, not only those checked when eventTime is set;
//   - the immutability of reportingController compares what events.k8s.io
//     clients read (reportingController, or source.component when an event has
//     none), so a read-modify-write of a legacy event through events.k8s.io
//     is not refused.
package validation
