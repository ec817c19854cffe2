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

package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/kube-events/events-apiserver/test/harness"
)

// serverBinary is the events-apiserver built once by TestMain.
var serverBinary string

// etcdBinary is the etcd of the envtest assets.
var etcdBinary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run with KUBEBUILDER_ASSETS=\"$(hack/envtest-assets.sh)\"")
		return 1
	}
	etcdBinary = filepath.Join(assets, "etcd")
	dir, err := os.MkdirTemp("", "events-apiserver-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if serverBinary, err = harness.BuildServer(context.Background(), dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	printResults()
	return code
}

// result is one row of the table the suite prints.
type result struct {
	fault string
	// acknowledged creates (2xx) and those not readable afterwards.
	acknowledged, lost int
	// expired counts acknowledged creates not readable afterwards that
	// may have expired (their TTL passed) by then: not lost.
	expired int
	// errors counts failed creates by HTTP code, or by "connection" when
	// the server was not there to answer.
	errors map[string]int
	// maxLatency is the slowest create, answered or not.
	maxLatency time.Duration
	// notReady is how long /readyz was not ok (or not answering).
	notReady time.Duration
	// timeToReady runs from the end of the fault (etcd or server back,
	// etcd resumed, NOSPACE raised) to /readyz ok.
	timeToReady time.Duration
	// timeToWrite runs from the end of the fault to the next acknowledged create.
	timeToWrite time.Duration
	note        string
}

var (
	resultsMu sync.Mutex
	results   []result
)

func record(r result) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	results = append(results, r)
}

// printResults prints the table of every fault that ran.
func printResults() {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if len(results) == 0 {
		return
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "FAULT\tACKNOWLEDGED\tLOST\tEXPIRED\tERRORS BY CODE\tMAX LATENCY\tNOT READY\tTIME TO READY\tTIME TO WRITE\tNOTE")
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.fault, r.acknowledged, r.lost, r.expired, formatCodes(r.errors),
			round(r.maxLatency), round(r.notReady), round(r.timeToReady), round(r.timeToWrite), r.note)
	}
	fmt.Println("fault suite results:")
	_ = w.Flush()
}

func formatCodes(codes map[string]int) string {
	if len(codes) == 0 {
		return "none"
	}
	var keys []string
	for k := range codes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s×%d", k, codes[k]))
	}
	return strings.Join(parts, " ")
}

func round(d time.Duration) string {
	return d.Round(100 * time.Millisecond).String()
}
