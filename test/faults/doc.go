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

// Package faults is the fault suite: it runs the events-apiserver binary
// and the envtest etcd binary as separate processes, drives a steady create
// load through unmodified client-go (core/v1, events.k8s.io/v1beta1 and v1)
// and, during it, kills, pauses or fills etcd, kills or restarts the
// server, and then checks that every acknowledged create is still readable
// with its content and that the server became ready again by itself.
//
// Its tests print a table per fault (acknowledged creates, lost creates,
// client errors by code, time to ready); the README's "Faults" section
// holds the numbers. Run it with
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test -count=1 -v ./test/faults/
package faults
