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

// Package docs pins what the docs, the chart and the manifests say to what
// it describes: the server's flags they name exist, the memory figures they
// quote are the benchmark's (docs/performance.md, written from make bench),
// and what make test needs is stated where a developer reads first.
package docs

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kube-events/events-apiserver/cmd/events-apiserver/app"
)

// root is the module root, two directories up.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root(t), path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

var flagPattern = regexp.MustCompile(`--([a-z][a-z0-9-]+)`)

// otherPrograms are the flags the chart's files name that are not the
// server's, with the program they are given to.
var otherPrograms = map[string]string{
	"create-namespace":       "helm",
	"set":                    "helm",
	"etcd-servers-overrides": "kube-apiserver",
	"runtime-config":         "kube-apiserver",
	"quota-backend-bytes":    "etcd",
}

// TestFlagsTheChartNamesExist: every flag the chart's values, its README
// and the configured example's values name is one of the server's (a flag
// it does not register stops it at start), or one of otherPrograms'.
func TestFlagsTheChartNamesExist(t *testing.T) {
	flags := app.NewCommand(context.Background(), &app.MemoryLimit{}).Flags()
	for _, path := range []string{
		"charts/events-apiserver/values.yaml",
		"charts/events-apiserver/README.md",
		"artifacts/examples/configured/values.yaml",
	} {
		for i, line := range strings.Split(read(t, path), "\n") {
			for _, m := range flagPattern.FindAllStringSubmatch(line, -1) {
				name := m[1]
				if flags.Lookup(name) == nil && otherPrograms[name] == "" {
					t.Errorf("%s:%d names --%s, which the server does not register", path, i+1, name)
				}
			}
		}
	}
}

// memoryFigure is a figure of memory per event, e.g. "0.75 KiB per live
// event" or "3.8 to 4.1 KiB per event".
var memoryFigure = regexp.MustCompile(`([\d.]+(?: to [\d.]+)?) KiB(?: of [a-z ]+?)? per (?:live |cached )?event`)

// TestMemoryFiguresAreTheBenchmarks: every memory-per-event figure quoted
// in the docs, the manifests, the chart and the flags' help is one that
// docs/performance.md, written from make bench, states.
func TestMemoryFiguresAreTheBenchmarks(t *testing.T) {
	performance := read(t, "docs/performance.md")
	paths := []string{"README.md", "CHANGELOG.md", "docs/reference/flags.md", "charts/events-apiserver/values.yaml", "charts/events-apiserver/README.md"}
	for _, pattern := range []string{"docs/*.md", "artifacts/*/*.yaml", "artifacts/*/*/*.yaml"} {
		matches, err := filepath.Glob(filepath.Join(root(t), pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			rel, _ := filepath.Rel(root(t), m)
			if rel != "docs/performance.md" {
				paths = append(paths, rel)
			}
		}
	}
	found := 0
	for _, path := range paths {
		for i, line := range strings.Split(read(t, path), "\n") {
			for _, m := range memoryFigure.FindAllStringSubmatch(line, -1) {
				found++
				if !strings.Contains(performance, m[1]+" KiB") {
					t.Errorf("%s:%d quotes %q; docs/performance.md states no %s KiB", path, i+1, m[0], m[1])
				}
			}
		}
	}
	if found == 0 {
		t.Error("no memory figure found: the pattern no longer matches how the docs quote them")
	}
}

// TestMakeTestPrerequisites: README.md and docs/development.md say what
// make test (hack/test.sh) needs beyond Go and make: root, and every asset
// and package script it runs.
func TestMakeTestPrerequisites(t *testing.T) {
	script := read(t, "hack/test.sh") + read(t, "test/e2e/main_test.go")
	scripts := regexp.MustCompile(`hack/[a-z-]+-(?:assets|packages)\.sh`).FindAllString(script, -1)
	slices.Sort(scripts)
	scripts = slices.Compact(scripts)
	if !slices.Contains(scripts, "hack/cluster-packages.sh") {
		t.Fatalf("hack/test.sh and the e2e suite run %v; expected hack/cluster-packages.sh among them", scripts)
	}
	for _, path := range []string{"README.md", "docs/development.md"} {
		text := read(t, path)
		for _, s := range scripts {
			if !strings.Contains(text, s) {
				t.Errorf("%s does not name %s, which make test runs", path, s)
			}
		}
		for _, need := range []string{"root", "apt-get"} {
			if !strings.Contains(text, need) {
				t.Errorf("%s does not say that make test needs %s", path, need)
			}
		}
	}
}
