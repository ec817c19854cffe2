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

package robustness

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-events/events-apiserver/test/harness"
)

var (
	seed       = flag.Uint64("robustness.seed", 0, "The seed of the traffic's and the faults' random choices; 0 picks one (printed).")
	duration   = flag.Duration("robustness.duration", time.Minute, "How long the traffic and the faults run, per store cache.")
	storeCache = flag.String("robustness.store-cache", "compact,watch-cache", "The --store-cache values to run the server with, one run each, comma separated.")
	buildTags  = flag.String("robustness.tags", "livestore_debug", "The build tags of the server: livestore_debug (the default) makes a read of memory the live store freed fault at once.")
)

// serverBinary is the events-apiserver built once by TestMain.
var serverBinary string

// etcdBinary is the etcd of the envtest assets.
var etcdBinary string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run with KUBEBUILDER_ASSETS=\"$(hack/envtest-assets.sh)\"")
		return 1
	}
	etcdBinary = filepath.Join(assets, "etcd")
	dir, err := os.MkdirTemp("", "events-apiserver-robustness-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	var tags []string
	if *buildTags != "" {
		tags = strings.Split(*buildTags, ",")
	}
	if serverBinary, err = harness.BuildServer(context.Background(), dir, tags...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
