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

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/pkg/ownerchain"
	"github.com/kube-events/events-apiserver/test/markdown"
)

// treeNamespace holds the Deployment whose ownership tree is queried.
const treeNamespace = "e2e-tree"

// treeEvent is an event of the ancestor query, as kubectl prints it.
type treeEvent struct {
	Metadata struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Reason          string `json:"reason"`
	DeprecatedCount int    `json:"deprecatedCount"`
	Series          *struct {
		Count int `json:"count"`
	} `json:"series"`
	Regarding struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	} `json:"regarding"`
}

// occurrences counts an event as the summaries do.
func (e treeEvent) occurrences() int {
	n := max(e.DeprecatedCount, 1)
	if e.Series != nil {
		n = max(n, e.Series.Count)
	}
	return n
}

// treeDeployment is a Deployment whose pods crash-loop (the server's image
// with an unknown flag), replaced all at once on a rollout (Recreate: the
// old ReplicaSet is scaled down and its pods deleted first).
func treeDeployment(revision string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: tree
  namespace: %[1]s
spec:
  replicas: 2
  strategy: {type: Recreate}
  selector:
    matchLabels: {app: tree}
  template:
    metadata:
      labels: {app: tree}
      annotations: {e2e/revision: %[3]q}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: crash
        image: %[2]s
        imagePullPolicy: IfNotPresent
        args: [--no-such-flag]
`, treeNamespace, serverImage, revision)
}

// treeNeighbour is a steady Deployment beside tree whose name tree's is a
// prefix of: none of its events is tree's.
func treeNeighbour() string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: treehouse
  namespace: %[1]s
spec:
  replicas: 1
  selector:
    matchLabels: {app: treehouse}
  template:
    metadata:
      labels: {app: treehouse}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: steady
        image: %[2]s
        imagePullPolicy: IfNotPresent
`, treeNamespace, sandboxImage)
}

// TestOwnershipTree (mirror mode, after TestDefaultOverlay): a Deployment
// whose pods crash-loop is rolled out again (its first ReplicaSet scaled
// down, its pods deleted) and loses a pod; regarding.ancestor=Deployment/tree
// with history.since answers the events of the Deployment, of both
// ReplicaSets and of every pod it ever had, the deleted ones included, and
// none of the steady Deployment beside it.
func TestOwnershipTree(t *testing.T) {
	ctx := context.Background()
	c := suite.cluster
	ensureNamespace(t, ctx, treeNamespace)
	applyYAML(t, ctx, treeNeighbour())
	applyYAML(t, ctx, treeDeployment("1"))

	pods := sets.New[string]()
	// crashing waits until the tree's pods have been started (and so
	// failed) at least once, and notes their names.
	crashing := func(n int) []string {
		t.Helper()
		var names []string
		err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			list, err := c.Client.CoreV1().Pods(treeNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=tree"})
			if err != nil {
				return false, nil
			}
			names = names[:0]
			for _, p := range list.Items {
				if p.DeletionTimestamp != nil {
					continue
				}
				for _, s := range p.Status.ContainerStatuses {
					if s.RestartCount > 0 || s.LastTerminationState.Terminated != nil || s.State.Terminated != nil {
						names = append(names, p.Name)
						break
					}
				}
			}
			return len(names) == n, nil
		})
		if err != nil {
			t.Fatalf("the tree's pods: want %d that have crashed, got %v", n, names)
		}
		pods.Insert(names...)
		return names
	}
	first := crashing(2)
	mustKubectl(t, ctx, "-n", treeNamespace, "rollout", "status", "deployment/treehouse", "--timeout=3m")
	applyYAML(t, ctx, treeDeployment("2"))
	second := crashingAfter(t, ctx, crashing, sets.New(first...))
	mustKubectl(t, ctx, "-n", treeNamespace, "delete", "pod", second[0], "--wait=true", "--timeout=2m")
	crashingAfter(t, ctx, crashing, sets.New(append(first, second[0])...))
	deleted := append(append([]string{}, first...), second[0])
	logf(t, "tree: pods %v, deleted %v", sets.List(pods), deleted)

	replicaSets, err := c.Client.AppsV1().ReplicaSets(treeNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=tree"})
	if err != nil {
		t.Fatal(err)
	}
	rsNames := sets.New[string]()
	for _, rs := range replicaSets.Items {
		rsNames.Insert(rs.Name)
	}
	if rsNames.Len() != 2 {
		t.Fatalf("ReplicaSets of tree: %v, want 2 (one per revision)", sets.List(rsNames))
	}

	// Each pod's events arrive through the mirror; wait for all of them.
	var events []treeEvent
	byKind := map[string]sets.Set[string]{}
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		out, err := kubectl(ctx, "", "get", "events.events.k8s.io", "-n", treeNamespace,
			"--field-selector", "regarding.ancestor=Deployment/tree,history.since=1h", "-o", "json")
		if err != nil {
			return false, nil
		}
		var list struct {
			Items []treeEvent `json:"items"`
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			return false, err
		}
		events = list.Items
		byKind = map[string]sets.Set[string]{}
		for _, e := range events {
			if byKind[e.Regarding.Kind] == nil {
				byKind[e.Regarding.Kind] = sets.New[string]()
			}
			byKind[e.Regarding.Kind].Insert(e.Regarding.Name)
		}
		return byKind["Pod"].IsSuperset(pods) && byKind["ReplicaSet"].Equal(rsNames) && byKind["Deployment"].Has("tree"), nil
	})
	counts := map[string]int{}
	for _, e := range events {
		counts[e.Regarding.Kind]++
	}
	logf(t, "regarding.ancestor=Deployment/tree,history.since=1h: %d events; by kind %v; objects %v", len(events), counts, byKind)
	if err != nil {
		t.Fatalf("the tree's events: want every pod %v, the ReplicaSets %v and the Deployment, got %v", sets.List(pods), sets.List(rsNames), byKind)
	}

	for _, e := range events {
		switch e.Regarding.Kind {
		case "Deployment":
			if e.Regarding.Name != "tree" {
				t.Errorf("event %s regards Deployment %s, not tree", e.Metadata.Name, e.Regarding.Name)
			}
		case "ReplicaSet":
			if !rsNames.Has(e.Regarding.Name) {
				t.Errorf("event %s regards ReplicaSet %s, not one of tree's", e.Metadata.Name, e.Regarding.Name)
			}
		case "Pod":
			if !pods.Has(e.Regarding.Name) {
				t.Errorf("event %s regards Pod %s, not one of tree's", e.Metadata.Name, e.Regarding.Name)
			}
			chain, err := ownerchain.Decode(e.Metadata.Annotations[ownerchain.Annotation])
			if err != nil || len(chain) != 2 || chain[0].Kind != "ReplicaSet" || !rsNames.Has(chain[0].Name) ||
				chain[1].Kind != "Deployment" || chain[1].Name != "tree" {
				t.Errorf("event %s (%s of Pod %s): chain %+v (%v), want its ReplicaSet, then Deployment tree",
					e.Metadata.Name, e.Reason, e.Regarding.Name, chain, err)
			}
		default:
			t.Errorf("event %s regards a %s, not a part of the tree", e.Metadata.Name, e.Regarding.Kind)
		}
	}
	var missing []string
	for _, name := range deleted {
		if !byKind["Pod"].Has(name) {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("deleted pods without events in the answer: %s", strings.Join(missing, ", "))
	}

	// The plugin draws the same tree, through kubectl, from this API only.
	names := map[string]string{"tree": "tree"}
	for i, rs := range sortedByCreation(t, ctx, rsNames) {
		names[rs] = fmt.Sprintf("rs-%d", i+1)
	}
	for _, pod := range sets.List(pods) {
		names[pod] = "pod-of-" + podReplicaSet(pod, rsNames, names)
	}
	drawing := eventtree(t, ctx, "deployment/tree", "-n", treeNamespace, "--since", "1h", "--width", "100", "--no-color")
	logf(t, "kubectl eventtree deployment/tree:\n%s", drawing)
	golden := filepath.Join("testdata", "eventtree-tree.golden")
	got := normaliseTree(drawing, names)
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("kubectl eventtree, normalised (-%s +got):\n%s", golden, diff)
	}

	// The tree's summary counts what its events count: each event's
	// occurrences (its series' count, else its count, else one). Scaled to
	// nothing, the tree stops crashing, and the two settle on one number.
	mustKubectl(t, ctx, "-n", treeNamespace, "scale", "deployment/tree", "--replicas=0")
	const treeSelector = "regarding.ancestor=Deployment/tree,history.since=1h"
	var listed, summarized int
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		out, err := kubectl(ctx, "", "get", "events.events.k8s.io", "-n", treeNamespace, "--field-selector", treeSelector, "-o", "json")
		if err != nil {
			return false, nil
		}
		var list struct {
			Items []treeEvent `json:"items"`
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			return false, err
		}
		listed = 0
		for _, e := range list.Items {
			listed += e.occurrences()
		}
		if out, err = kubectl(ctx, "", "get", "eventsummaries", "-n", treeNamespace, "--field-selector", treeSelector, "-o", "json"); err != nil {
			return false, nil
		}
		var summaries struct {
			Items []struct {
				Occurrences int `json:"occurrences"`
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(out), &summaries); err != nil {
			return false, err
		}
		summarized = 0
		for _, s := range summaries.Items {
			summarized += s.Occurrences
		}
		return listed == summarized, nil
	})
	logf(t, "occurrences of the tree: %d in its events, %d in its summaries", listed, summarized)
	if err != nil {
		t.Errorf("the tree's summaries count %d occurrences, its events %d", summarized, listed)
	}
	table := mustKubectl(t, ctx, "get", "eventsummaries", "-n", treeNamespace, "--field-selector", treeSelector)
	logf(t, "kubectl get eventsummaries -n %s --field-selector %s:\n%s", treeNamespace, treeSelector, table)
	if !strings.HasPrefix(table, "TYPE ") || !strings.Contains(table, "BackOff") {
		t.Errorf("kubectl get eventsummaries: want a table with the pods' BackOff, got:\n%s", table)
	}

	replayQuestions(t, ctx, strings.NewReplacer(
		"-n shop", "-n "+treeNamespace,
		"Deployment/web", "Deployment/tree",
		"deployment/web", "deployment/tree",
		"web-6947cd568-ffpkp", first[0],
	))
}

// replayQuestions runs every command of docs/questions.md, about the tree
// (names replaced), as a reader would: each must succeed, print nothing on
// stderr and print what the page shows: the same table header, or a
// drawing of the same object, and at least one row.
func replayQuestions(t *testing.T, ctx context.Context, names *strings.Replacer) {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(suite.root, "docs", "questions.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := markdown.Transcript(string(page), "# Questions and answers")
	if err != nil {
		t.Fatalf("docs/questions.md: %v", err)
	}
	if len(steps) == 0 {
		t.Fatal("docs/questions.md: no command")
	}
	plugins := pluginDir(t, ctx)
	c := suite.cluster
	for _, step := range steps {
		command := names.Replace(step.Command)
		cmd := exec.CommandContext(ctx, "bash", "-c", command)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig,
			"PATH="+plugins+string(os.PathListSeparator)+c.Assets+string(os.PathListSeparator)+os.Getenv("PATH"))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil || stderr.Len() > 0 {
			t.Errorf("docs/questions.md: $ %s\nfailed: %v\n%s%s", command, err, stdout.String(), stderr.String())
			continue
		}
		logf(t, "docs/questions.md: $ %s\n%s", command, stdout.String())
		got := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
		want := strings.Split(names.Replace(step.Output), "\n")
		if len(got) < 2 || firstWords(got[0]) != firstWords(want[0]) {
			t.Errorf("docs/questions.md: $ %s\nprinted %q first and %d lines, the page shows %q first",
				command, got[0], len(got), want[0])
		}
	}
}

// firstWords is what a printout's first line must keep from the page's: a
// table's header, or the object a drawing is of.
func firstWords(line string) string {
	words := strings.Fields(line)
	if len(words) > 0 && strings.ToUpper(words[0]) != words[0] {
		return words[0]
	}
	return strings.Join(words, " ")
}

// update rewrites the golden files.
var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// eventtree runs the kubectl-eventtree plugin, built from this tree, as
// kubectl runs plugins: found on PATH as kubectl-eventtree.
func eventtree(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	dir := pluginDir(t, ctx)
	c := suite.cluster
	cmd := exec.CommandContext(ctx, filepath.Join(c.Assets, "kubectl"), append([]string{"eventtree"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl eventtree %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// pluginDir is a directory holding kubectl-eventtree, built from this
// tree once per test.
func pluginDir(t *testing.T, ctx context.Context) string {
	t.Helper()
	if dir, ok := builtPlugins[t.Name()]; ok {
		return dir
	}
	dir := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "kubectl-eventtree"), "./cmd/kubectl-eventtree")
	build.Dir = suite.root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kubectl-eventtree: %v\n%s", err, out)
	}
	builtPlugins[t.Name()] = dir
	return dir
}

// builtPlugins are the directories pluginDir built, by test.
var builtPlugins = map[string]string{}

// sortedByCreation orders ReplicaSets by creation: the first revision's first.
func sortedByCreation(t *testing.T, ctx context.Context, names sets.Set[string]) []string {
	t.Helper()
	list, err := suite.cluster.Client.AppsV1().ReplicaSets(treeNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=tree"})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].Annotations["deployment.kubernetes.io/revision"] < list.Items[j].Annotations["deployment.kubernetes.io/revision"]
	})
	var out []string
	for _, rs := range list.Items {
		if names.Has(rs.Name) {
			out = append(out, rs.Name)
		}
	}
	return out
}

// podReplicaSet is the normalised name of the ReplicaSet a pod's name
// starts with.
func podReplicaSet(pod string, replicaSets sets.Set[string], names map[string]string) string {
	for rs := range replicaSets {
		if strings.HasPrefix(pod, rs+"-") {
			return names[rs]
		}
	}
	return "?"
}

// treeRow is a row of the drawing: the tree, then the time axis between
// bars.
var treeRow = regexp.MustCompile(`^(.*?)\s*│[^│]*│$`)

// normaliseTree keeps what a run of the same story always draws: the tree's
// rows, objects named by names (generated names vary), without the time
// axis, the reasons and the counts (their timing varies), and sibling rows
// in order of their text (siblings created together come in either order).
func normaliseTree(drawing string, names map[string]string) string {
	var rows []string
	for _, line := range strings.Split(drawing, "\n") {
		m := treeRow.FindStringSubmatch(line)
		if m == nil {
			continue // the title, the axis' ticks and frame, the reasons, the legend
		}
		row := m[1]
		if i := strings.Index(row, "/"); i >= 0 {
			name, rest, _ := strings.Cut(row[i+1:], " ")
			if n, ok := names[name]; ok {
				name = n
			}
			// A deleted object is "(deleted)", or "✗" in a narrow row.
			rest = strings.Replace(rest, "✗", "(deleted)", 1)
			row = strings.TrimRight(row[:i+1]+name+" "+rest, " ")
		}
		rows = append(rows, row)
	}
	// The glyphs of the tree say which sibling is last: read each row as its
	// depth and object, and sort the siblings of each parent.
	type node struct {
		label    string
		children []*node
	}
	root := &node{}
	stack := []*node{root}
	for _, row := range rows {
		label := row
		for {
			trimmed := strings.TrimLeft(label, "│ ")
			trimmed = strings.TrimPrefix(strings.TrimPrefix(trimmed, "├── "), "└── ")
			if trimmed == label {
				break
			}
			label = trimmed
		}
		depth := (len([]rune(row)) - len([]rune(label))) / 4
		n := &node{label: label}
		stack = append(stack[:min(depth+1, len(stack))], n)
		parent := stack[len(stack)-2]
		parent.children = append(parent.children, n)
	}
	var b strings.Builder
	var walk func(n *node, depth int)
	walk = func(n *node, depth int) {
		sort.Slice(n.children, func(i, j int) bool { return n.children[i].label < n.children[j].label })
		for _, c := range n.children {
			b.WriteString(strings.Repeat("  ", depth) + c.label + "\n")
			walk(c, depth+1)
		}
	}
	walk(root, 0)
	return b.String()
}

// crashingAfter waits for two crashed pods of the tree other than before.
func crashingAfter(t *testing.T, ctx context.Context, crashing func(int) []string, before sets.Set[string]) []string {
	t.Helper()
	var fresh []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		fresh = fresh[:0]
		for _, name := range crashing(2) {
			if !before.Has(name) {
				fresh = append(fresh, name)
			}
		}
		return len(fresh) > 0, nil
	})
	if err != nil {
		t.Fatalf("no new crashed pod of the tree beside %v", sets.List(before))
	}
	return fresh
}
