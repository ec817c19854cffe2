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

// Package robustness is the robustness harness, modeled on etcd's
// tests/robustness: it runs the events-apiserver binary on an etcd of the
// envtest assets, drives random concurrent traffic through unmodified
// client-go (writes, paged lists at every resourceVersion semantics, gets,
// watches with and without initial events, selectors and resumption,
// and pages of history) while faults strike etcd (SIGSTOP, SIGKILL,
// compaction, NOSPACE), the server's connections to etcd are cut and a
// watcher stops reading, records every answer and etcd's own revision
// history (a watch of the events prefix with PrevKV), and then checks
// every list, get, watch and history page against that history (package
// validate). It is seeded: the seed is printed, and -robustness.seed
// repeats a run's choices.
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test -count=1 -v ./test/robustness \
//	  -robustness.duration=5m -robustness.store-cache=compact,watch-cache
//
// docs/robustness.md describes the traffic, the faults and the checks.
package robustness
