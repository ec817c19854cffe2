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

// Package ownerchain is the codec of what an event keeps of the ownership
// tree of the object it is about: the chain of controller owners of its
// regarding object (a Pod's ReplicaSet, then that ReplicaSet's
// Deployment), nearest first, kept in the Annotation so that the events of
// a Pod deleted long ago still answer regarding.ancestor=Deployment/web.
// Package ancestry resolves the chain in the cluster; this one is a leaf
// that imports no client, for the API packages, the stores, the archive
// and the kubectl plugin.
//
// The annotation and not a field: kube-apiserver (which writes the events
// of offload mode into this server's etcd) and every client that updates
// an event through the k8s.io/api types keep annotations, and drop fields
// they do not know.
//
// The chain is a JSON array of strings, two for each ancestor, its
// "Kind/name" and its UID:
//
//	["ReplicaSet/web-7d4f9","5c2e…","Deployment/web","8a1b…"]
//
// Kinds, names and UIDs hold no quote or backslash, so a term's value is
// in the chain exactly when its quoted form is a substring of it
// (Contains); the archive finds it with LogsQL's json_array_contains_any.
package ownerchain
