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

// Package livestore is the compact live store of events: a
// storage.Interface that serves lists, gets and watches from memory in
// place of k8s.io/apiserver's watch cache, and writes through to etcd.
//
// The watch cache holds every object decoded, with its labels, fields and
// index entries as Go maps and pointers: about 1.6 KiB of live heap per
// event, which the collector re-marks on every cycle. This store holds each
// object once, as the bytes the storage codec writes, in arenas outside the
// Go heap (Table), with postings per indexed value keyed by a hash, and
// decodes only what a list, get or watch returns. Watchers are fed from the
// same etcd watch that feeds the table, and resume from a bounded history
// of recent changes (the ring), as the watch cache's.
package livestore
