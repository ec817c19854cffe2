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

package chart

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestEtcdImageIsTheTestedEtcd: the bundled etcd users run is the etcd the
// server is built with (go.mod's go.etcd.io/etcd/server/v3, the embedded
// etcd), the integration tests run (hack/envtest-assets.sh) and the
// end-to-end suite builds and packs under the manifest's tag
// (hack/cluster-assets.sh): one version, registry.k8s.io/etcd:<version>-0
// in components/bundled-etcd, the chart's values and its README.
func TestEtcdImageIsTheTestedEtcd(t *testing.T) {
	root := repoRoot(t)
	read := func(path string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	find := func(path, pattern string) string {
		t.Helper()
		m := regexp.MustCompile(pattern).FindStringSubmatch(read(path))
		if m == nil {
			t.Fatalf("%s: nothing matches %s", path, pattern)
		}
		return m[1]
	}
	version := find("go.mod", `(?m)^\s*go\.etcd\.io/etcd/server/v3 (v\S+)$`)
	for _, script := range []string{"hack/envtest-assets.sh", "hack/cluster-assets.sh"} {
		if got := find(script, `(?m)^ETCD_VERSION="\$\{ETCD_VERSION:-(v\S+)\}"$`); got != version {
			t.Errorf("%s builds etcd %s; go.mod has %s", script, got, version)
		}
	}
	want := "registry.k8s.io/etcd:" + strings.TrimPrefix(version, "v") + "-0"

	var statefulset appsv1.StatefulSet
	decode(t, objects(t, read("artifacts/components/bundled-etcd/statefulset.yaml")), "apps/v1 StatefulSet events-apiserver/events-etcd", &statefulset)
	if got := statefulset.Spec.Template.Spec.Containers[0].Image; got != want {
		t.Errorf("components/bundled-etcd runs %s, want %s", got, want)
	}
	if got := find("charts/events-apiserver/values.yaml", `(?m)^  image: (\S+etcd\S+)$`); got != want {
		t.Errorf("the chart's etcd.image is %s, want %s", got, want)
	}
	if got := find("charts/events-apiserver/README.md", "(?m)^\\| `etcd\\.image` \\| `\"([^\"]+)\"`"); got != want {
		t.Errorf("the chart's README says etcd.image is %s, want %s", got, want)
	}
}
