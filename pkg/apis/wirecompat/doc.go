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

// Package wirecompat holds the tests that prove this server speaks the same
// wire format as kube-apiserver for Events, so that the real clients
// (k8s.io/api types, client-go, kubectl, kubelets and controllers sending
// application/vnd.kubernetes.protobuf) work against it unchanged.
//
// The tests build Events with the real k8s.io/api core/v1, events/v1beta1 and
// events/v1 types (k8s.io/api is a test-only dependency of this module),
// encode them with apimachinery's JSON and protobuf serializers (the latter
// with Kubernetes' "k8s\x00" envelope), decode them into this server's types
// through a scheme built from its install packages, convert them to every
// served version and back, and compare the bytes:
//
//   - what a k8s.io/api client writes comes back byte-identical, in every
//     encoding, after a read through any served version, except where the
//     mapping documents a change (a legacy event read through events.k8s.io
//     gains a reportingController);
//   - what this server encodes, k8s.io/api decodes, and re-encodes to exactly
//     the server's bytes without this server's extension fields
//     (series.state, and v1beta1's deprecatedHost), which k8s.io/api does not
//     know and skips;
//   - golden cases, one or more per row of the field mapping, pin what each
//     version shows for an event written through another one;
//   - each version's field selector labels map to the canonical labels.
//
// The package has no non-test code.
package wirecompat
