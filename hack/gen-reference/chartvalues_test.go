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

package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValueRows(t *testing.T) {
	cases := []struct {
		name   string
		values string
		want   []valueRow
	}{
		{
			name: "scalars, lists and pass-through mappings are rows",
			values: `# The file's header.

# How many.
replicas: 2
# Added | flags.
extraArgs: ["--v=2"]
# Requests and limits.
resources:
  requests: {cpu: 100m}
`,
			want: []valueRow{
				{key: "replicas", value: "`2`", description: "How many."},
				{key: "extraArgs", value: "`[\"--v=2\"]`", description: `Added \| flags.`},
				{key: "resources", value: "`{\"requests\":{\"cpu\":\"100m\"}}`", description: "Requests and limits."},
			},
		},
		{
			name: "a mapping with commented keys is a group",
			values: `# The archive.
history:
  # false: none.
  enabled: true
  image: vl
`,
			want: []valueRow{
				{key: "history", description: "The archive."},
				{key: "history.enabled", value: "`true`", description: "false: none."},
				{key: "history.image", value: "`\"vl\"`"},
			},
		},
		{
			name: "an indented example is code",
			values: `# The policy, e.g.
#   folding: {after: 20}
# {}: the built-in one.
eventPolicy: {}
`,
			want: []valueRow{
				{key: "eventPolicy", value: "`{}`", description: "The policy, e.g. `folding: {after: 20}` {}: the built-in one."},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := valueRows([]byte(tc.values))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(valueRow{})); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithValuesTableNeedsTheMarkers(t *testing.T) {
	if _, err := withValuesTable([]byte("# chart\n"), []byte("a: 1\n")); err == nil {
		t.Error("a README without the markers: no error, want one")
	}
}
