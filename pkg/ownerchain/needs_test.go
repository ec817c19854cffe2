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

import "testing"

func TestNeedsChain(t *testing.T) {
	for _, tt := range []struct {
		name        string
		annotations map[string]string
		want        bool
	}{
		{name: "no annotations", annotations: nil, want: true},
		{name: "other annotations only", annotations: map[string]string{"a": "b"}, want: true},
		{name: "a final chain", annotations: map[string]string{Annotation: `["ReplicaSet/web-1","u1"]`}, want: false},
		{name: "a pending chain", annotations: map[string]string{Annotation: `["ReplicaSet/web-1","u1"]`, PendingAnnotation: "timeout"}, want: true},
		{name: "pending with no ancestor yet", annotations: map[string]string{PendingAnnotation: "error"}, want: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := NeedsChain(tt.annotations); got != tt.want {
				t.Errorf("NeedsChain(%v) = %v, want %v", tt.annotations, got, tt.want)
			}
		})
	}
}
