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
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPackageMetrics(t *testing.T) {
	const header = `package p

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const namespace, subsystem = "ns", "sub"
const prefix = namespace + "_x"
`
	for _, tc := range []struct {
		name    string
		source  string
		want    []metric
		wantErr string
	}{{
		name: "constants, concatenation and labels",
		source: header + `
var requests = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace: namespace, Subsystem: subsystem, Name: "requests_total",
	Help:           "Requests, " + "by code.",
	StabilityLevel: metrics.STABLE,
}, []string{"code", "verb"})

var size = metrics.NewGauge(&metrics.GaugeOpts{Name: prefix + "_size", Help: "Size."})

func register() { legacyregistry.MustRegister(requests, size) }
`,
		want: []metric{
			{pkg: "p", name: "ns_sub_requests_total", kind: "counter", stability: "STABLE", help: "Requests, by code.", labels: []string{"code", "verb"}},
			{pkg: "p", name: "ns_x_size", kind: "gauge", stability: "ALPHA", help: "Size."},
		},
	}, {
		name: "a registered variable the generator did not read",
		source: header + `
var other = newMetric()

func register() { legacyregistry.MustRegister(other) }
`,
		wantErr: "other is registered but not defined",
	}, {
		name: "a name it cannot evaluate",
		source: header + `
var name = "computed"
var m = metrics.NewGauge(&metrics.GaugeOpts{Name: name})
`,
		wantErr: "Name: not a constant string",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "metrics.go"), []byte(tc.source), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := packageMetrics(dir, "p")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(metric{})); diff != "" {
				t.Errorf("metrics (-want +got):\n%s", diff)
			}
		})
	}
}
