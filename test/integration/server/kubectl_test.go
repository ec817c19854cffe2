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

package server

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// table is kubectl's tabular output: the column names and, for each row,
// the cells under them.
type table struct {
	columns []string
	rows    []map[string]string
}

// parseTable splits kubectl's output at the offsets of the header's column
// names, which kubectl aligns every cell on; cells may contain spaces and
// may be empty.
func parseTable(t *testing.T, out string, columns []string) table {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := lines[0]
	var offsets []int
	rest := 0
	for _, c := range columns {
		i := strings.Index(header[rest:], c)
		if i < 0 {
			t.Fatalf("header %q has no column %q after offset %d; want columns %q", header, c, rest, columns)
		}
		offsets = append(offsets, rest+i)
		rest += i + len(c)
	}
	if got := strings.Join(strings.Fields(header), " "); got != strings.Join(columns, " ") {
		t.Fatalf("header %q, want exactly the columns %q", header, columns)
	}
	tab := table{columns: columns}
	for _, line := range lines[1:] {
		row := map[string]string{}
		for i, c := range columns {
			start, end := offsets[i], len(line)
			if i+1 < len(offsets) {
				end = min(offsets[i+1], len(line))
			}
			if start < len(line) {
				row[c] = strings.TrimSpace(line[start:end])
			}
		}
		tab.rows = append(tab.rows, row)
	}
	return tab
}

// row returns the row whose column has value.
func (tab table) row(t *testing.T, column, value string) map[string]string {
	t.Helper()
	for _, r := range tab.rows {
		if r[column] == value {
			return r
		}
	}
	t.Fatalf("no row with %s %q in %v", column, value, tab.rows)
	return nil
}

var (
	eventColumns     = []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}
	wideEventColumns = []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE", "FIRST SEEN", "COUNT", "NAME", "ACTION", "RELATED", "SERIES"}
)

// TestKubectlGetEvents prints events with the real kubectl through core/v1
// and events.k8s.io, narrow and wide: kube-apiserver's columns, a repeated
// event or series shown as "<last> (xN over <since first>)", and, wide, the
// action, related object and series count and state.
func TestKubectlGetEvents(t *testing.T) {
	t.Parallel()
	namespace := namespaceFor(t)
	c := clientsFor(t, shared)[0]
	createIn(t, coreV1, c, legacyEvent(namespace, "repeated"))
	createIn(t, eventsV1, c, newEvent(namespace, "series"))

	// legacyEvent: 3 times over the last minute; newEvent: a series of 4
	// over the last two minutes.
	repeatedLastSeen := regexp.MustCompile(`^\d+s \(x3 over \d+s\)$`)
	seriesLastSeen := regexp.MustCompile(`^\d+s \(x4 over 2m(\d+s)?\)$`)

	for _, resource := range []string{"events", "events.events.k8s.io", "ev"} {
		t.Run(resource, func(t *testing.T) {
			t.Parallel()
			out, errOut, err := framework.Kubectl(t, shared.KubeconfigPath, "get", resource, "-n", namespace)
			if err != nil {
				t.Fatalf("kubectl get %s: %v\n%s", resource, err, errOut)
			}
			tab := parseTable(t, out, eventColumns)
			if len(tab.rows) != 2 {
				t.Fatalf("%d rows, want 2:\n%s", len(tab.rows), out)
			}
			repeated := tab.row(t, "REASON", "BackOff")
			if !repeatedLastSeen.MatchString(repeated["LAST SEEN"]) || repeated["TYPE"] != "Warning" ||
				repeated["OBJECT"] != "pod/pod-repeated" || repeated["MESSAGE"] != "Back-off restarting failed container app" {
				t.Errorf("repeated legacy event row: %q", repeated)
			}
			series := tab.row(t, "REASON", "ScalingReplicaSet")
			if !seriesLastSeen.MatchString(series["LAST SEEN"]) || series["TYPE"] != "Normal" ||
				series["OBJECT"] != "deployment/deploy-series" || series["MESSAGE"] != "Scaled up replica set rs-series to 3" {
				t.Errorf("series row: %q", series)
			}

			out, errOut, err = framework.Kubectl(t, shared.KubeconfigPath, "get", resource, "-n", namespace, "-o", "wide")
			if err != nil {
				t.Fatalf("kubectl get %s -o wide: %v\n%s", resource, err, errOut)
			}
			tab = parseTable(t, out, wideEventColumns)
			repeated = tab.row(t, "NAME", "repeated")
			if !repeatedLastSeen.MatchString(repeated["LAST SEEN"]) || repeated["SUBOBJECT"] != "spec.containers{app}" ||
				repeated["SOURCE"] != "kubelet, node-1" || repeated["COUNT"] != "3" || !regexp.MustCompile(`^\d+s$`).MatchString(repeated["FIRST SEEN"]) ||
				repeated["ACTION"] != "" || repeated["RELATED"] != "" || repeated["SERIES"] != "" {
				t.Errorf("repeated legacy event wide row: %q", repeated)
			}
			series = tab.row(t, "NAME", "series")
			if !seriesLastSeen.MatchString(series["LAST SEEN"]) || series["SUBOBJECT"] != "" ||
				series["SOURCE"] != "example.com/deployment-controller, controller-0" || series["COUNT"] != "4" ||
				!regexp.MustCompile(`^2m(\d+s)?$`).MatchString(series["FIRST SEEN"]) ||
				series["ACTION"] != "Scale" || series["RELATED"] != "replicaset/rs-series" || !regexp.MustCompile(`^x4 (Ongoing|Unknown)$`).MatchString(series["SERIES"]) {
				t.Errorf("series wide row: %q", series)
			}
		})
	}
}

// TestKubectlExplain reads the documentation of series.state, which only
// this server has, from its OpenAPI through the real kubectl.
func TestKubectlExplain(t *testing.T) {
	t.Parallel()
	cases := []struct {
		apiVersion string
		header     []string
		doc        string
	}{
		{"events.k8s.io/v1beta1", []string{"GROUP:      events.k8s.io", "KIND:       Event", "VERSION:    v1beta1"}, "state is where the series stands: Ongoing while the reporter still observes"},
		{"events.k8s.io/v1", []string{"GROUP:      events.k8s.io", "KIND:       Event", "VERSION:    v1"}, "state is where the series stands: Ongoing while the reporter still observes"},
		{"v1", []string{"KIND:       Event", "VERSION:    v1"}, "State of the series: Ongoing while the reporter still observes it"},
	}
	for _, tc := range cases {
		t.Run(tc.apiVersion, func(t *testing.T) {
			t.Parallel()
			out, errOut, err := framework.Kubectl(t, shared.KubeconfigPath, "explain", "events.series.state", "--api-version="+tc.apiVersion)
			if err != nil {
				t.Fatalf("kubectl explain: %v\n%s", err, errOut)
			}
			for _, want := range append(tc.header, "FIELD: state <string>") {
				if !strings.Contains(out, want) {
					t.Errorf("kubectl explain output lacks %q:\n%s", want, out)
				}
			}
			if doc := strings.Join(strings.Fields(out), " "); !strings.Contains(doc, tc.doc) {
				t.Errorf("kubectl explain output lacks the documentation %q:\n%s", tc.doc, out)
			}
		})
	}
}

// TestKubectlCreateAndSelect is the README's walk-through in
// short: kubectl creates an event from YAML through core/v1, selects it
// through events.k8s.io by regarding.name and reportingController.
func TestKubectlCreateAndSelect(t *testing.T) {
	t.Parallel()
	namespace := namespaceFor(t)
	manifest := `apiVersion: v1
kind: Event
metadata:
  name: walkthrough
  namespace: ` + namespace + `
involvedObject:
  kind: Pod
  name: web-0
  namespace: ` + namespace + `
reason: Started
message: Started container app
type: Normal
source:
  component: kubelet
`
	path := t.TempDir() + "/event.yaml"
	writeFile(t, path, manifest)
	if out, errOut, err := framework.Kubectl(t, shared.KubeconfigPath, "create", "-f", path); err != nil || !strings.Contains(out, "event/walkthrough created") {
		t.Fatalf("kubectl create: %v\n%s%s", err, out, errOut)
	}
	for _, selector := range []string{"regarding.name=web-0", "reportingController=kubelet", "type=Normal,reason=Started"} {
		out, errOut, err := framework.Kubectl(t, shared.KubeconfigPath, "get", "events.v1.events.k8s.io", "-n", namespace,
			"--field-selector", selector, "-o", "jsonpath={.items[*].note}")
		if err != nil || out != "Started container app" {
			t.Errorf("kubectl get --field-selector %s: %q, %v\n%s", selector, out, err, errOut)
		}
	}
	out, errOut, err := framework.Kubectl(t, shared.KubeconfigPath, "get", "events.v1.events.k8s.io", "-n", namespace, "--field-selector", "source=kubelet")
	if err == nil || !strings.Contains(errOut, "field label not supported: source") {
		t.Errorf("kubectl get with an unknown field selector: %v\n%s%s", err, out, errOut)
	}
}
