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

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

var chain = []Ancestor{
	{Kind: "ReplicaSet", Name: "web-7d4f9", UID: "5c2e0f6a-1111-4c1e-9a57-2d1c4f3b6a01"},
	{Kind: "Deployment", Name: "web", UID: "8a1b7e2d-2222-4b0a-8c3e-6f5d4a3b2c01"},
}

func TestEncodeDecode(t *testing.T) {
	encoded := Encode(chain)
	want := `["ReplicaSet/web-7d4f9","5c2e0f6a-1111-4c1e-9a57-2d1c4f3b6a01","Deployment/web","8a1b7e2d-2222-4b0a-8c3e-6f5d4a3b2c01"]`
	if encoded != want {
		t.Errorf("Encode = %s, want %s", encoded, want)
	}
	decoded, err := Decode(encoded)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(chain, decoded); diff != "" {
		t.Errorf("Decode(Encode(chain)) (-want +got):\n%s", diff)
	}
	if Encode(nil) != "" {
		t.Errorf("Encode(nil) = %q, want \"\"", Encode(nil))
	}
	for _, bad := range []string{`{`, `["Deployment/web"]`, `["web","uid"]`} {
		if _, err := Decode(bad); err == nil {
			t.Errorf("Decode(%s): no error", bad)
		}
	}
}

func TestMatches(t *testing.T) {
	encoded := Encode(chain)
	for _, tc := range []struct {
		name  string
		value string
		want  bool
	}{
		{"the object itself by Kind/name", "Pod/web-7d4f9-x2x8k", true},
		{"the object itself by UID", "pod-uid", true},
		{"the nearest ancestor", "ReplicaSet/web-7d4f9", true},
		{"the top ancestor", "Deployment/web", true},
		{"an ancestor's UID", "8a1b7e2d-2222-4b0a-8c3e-6f5d4a3b2c01", true},
		{"a prefix of an ancestor's name", "Deployment/we", false},
		{"an ancestor's name with a suffix", "ReplicaSet/web-7d4f", false},
		{"another kind of the same name", "StatefulSet/web", false},
		{"a part of a UID", "8a1b7e2d", false},
		{"a name that is another's suffix", "Set/web-7d4f9", false},
		{"another object", "Deployment/api", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Matches("Pod", "web-7d4f9-x2x8k", "pod-uid", encoded, tc.value); got != tc.want {
				t.Errorf("Matches(%q) = %v, want %v", tc.value, got, tc.want)
			}
		})
	}
	if Matches("Pod", "p", "u", "", "Deployment/web") {
		t.Error("an event without a chain matched another object")
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		value    string
		ref, uid bool
	}{
		{"Deployment/web", true, false},
		{"CronJob/nightly.report", true, false},
		{"8a1b7e2d-2222-4b0a-8c3e-6f5d4a3b2c01", false, true},
		{"web", false, true},
		{"Deployment/", false, false},
		{"/web", false, false},
		{"Deployment/web/x", false, false},
		{"apps.Deployment/web", false, false},
		{`Deployment/a","b`, false, false},
		{`a","b`, false, false},
		{",", false, false},
		{"", false, false},
	} {
		t.Run(tc.value, func(t *testing.T) {
			if err := ValidateRef(tc.value); (err == nil) != tc.ref {
				t.Errorf("ValidateRef(%q) = %v, want valid %v", tc.value, err, tc.ref)
			}
			if err := ValidateUID(tc.value); (err == nil) != tc.uid {
				t.Errorf("ValidateUID(%q) = %v, want valid %v", tc.value, err, tc.uid)
			}
		})
	}
}
