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

package ownerchain

// NeedsChain tells whether an event with annotations is to be given its
// chain (again): it has none, or a pending one. A chain stored without the
// pending mark is final: it is kept on updates, and neither resolved again
// nor completed when the event is archived.
func NeedsChain(annotations map[string]string) bool {
	_, chain := annotations[Annotation]
	return !chain || IsPending(annotations)
}

// IsPending tells whether an event with annotations has a pending chain
// (PendingAnnotation).
func IsPending(annotations map[string]string) bool {
	_, pending := annotations[PendingAnnotation]
	return pending
}
