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

// Package readme replays the README's kubectl walk-through, command by
// command and as written, against the server as `make run` starts it: the
// standalone default on its embedded etcd, with its data directory at
// .cache/run of the directory the commands run in. A walk-through that no
// longer works as written fails here.
//
// Run with the envtest assets of hack/envtest-assets.sh:
//
//	KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh)" go test ./test/integration/readme/
package readme

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// walkthroughHeading opens the README section whose ```sh blocks are
// replayed; the section ends at the next heading of its level.
const walkthroughHeading = "## Walk-through with kubectl"

// commandTimeout bounds one command; a watch is stopped once it printed
// what it watches for.
const commandTimeout = 30 * time.Second

// heredoc matches the start of a here-document and captures its delimiter.
var heredoc = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)

// assignment matches a line that only sets a shell variable, exported or
// not; it is kept for the commands after it.
var assignment = regexp.MustCompile(`^(export\s+)?[A-Za-z_][A-Za-z0-9_]*=`)

// commands splits the ```sh blocks of the section under heading into shell
// commands: a line, with the lines a trailing backslash continues and the
// body of a here-document. Blank lines and comment lines are skipped.
func commands(markdown, heading string) ([]string, error) {
	var (
		cmds      []string
		inSection bool
		inBlock   bool
		current   []string
		delimiter string
		found     bool
	)
	level := strings.SplitN(heading, " ", 2)[0] + " "
	scanner := bufio.NewScanner(strings.NewReader(markdown))
	for scanner.Scan() {
		line := scanner.Text()
		switch {
		case !inBlock && line == heading:
			inSection, found = true, true
			continue
		case !inBlock && inSection && strings.HasPrefix(line, level):
			inSection = false
			continue
		case !inSection:
			continue
		case !inBlock && strings.HasPrefix(line, "```"):
			inBlock = strings.TrimSpace(strings.TrimPrefix(line, "```")) == "sh"
			if !inBlock {
				// Another language's block (console output, yaml): skip to its end.
				for scanner.Scan() && !strings.HasPrefix(scanner.Text(), "```") {
				}
			}
			continue
		case !inBlock:
			continue
		}

		if delimiter != "" {
			current = append(current, line)
			if line == delimiter {
				cmds, current, delimiter = append(cmds, strings.Join(current, "\n")), nil, ""
			}
			continue
		}
		if strings.HasPrefix(line, "```") {
			if len(current) > 0 {
				return nil, fmt.Errorf("the block ends inside the command %q", strings.Join(current, "\n"))
			}
			inBlock = false
			continue
		}
		trimmed := strings.TrimSpace(line)
		if len(current) == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		current = append(current, line)
		if m := heredoc.FindStringSubmatch(line); m != nil {
			delimiter = m[1]
			continue
		}
		if strings.HasSuffix(trimmed, `\`) {
			continue
		}
		cmds, current = append(cmds, strings.Join(current, "\n")), nil
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("no heading %q", heading)
	}
	if delimiter != "" || len(current) > 0 || inBlock {
		return nil, fmt.Errorf("the section ends inside a command or block: %q", strings.Join(current, "\n"))
	}
	return cmds, nil
}

func TestCommands(t *testing.T) {
	const heading = "## Try it"
	for _, tc := range []struct {
		name     string
		markdown string
		want     []string
		wantErr  bool
	}{{
		name: "lines, comments, continuations and here-documents",
		markdown: "# x\n\n## Before\n```sh\nkubectl before\n```\n" + heading + "\ntext\n```sh\n" +
			"export KUBECONFIG=$PWD/kubeconfig\n\n# a comment\nkubectl get events   # trailing comment\n" +
			"kubectl get \\\n  events -o wide\n" +
			"kubectl create -f - <<'EOF'\nkind: Event\n# not a comment here\nEOF\n```\n" +
			"```console\n$ kubectl not-replayed\n```\n### Sub\n```sh\nNOW=$(date)\n```\n" +
			"## After\n```sh\nkubectl after\n```\n",
		want: []string{
			"export KUBECONFIG=$PWD/kubeconfig",
			"kubectl get events   # trailing comment",
			"kubectl get \\\n  events -o wide",
			"kubectl create -f - <<'EOF'\nkind: Event\n# not a comment here\nEOF",
			"NOW=$(date)",
		},
	}, {
		name:     "no such heading",
		markdown: "## Other\n```sh\nkubectl get events\n```\n",
		wantErr:  true,
	}, {
		name:     "unterminated here-document",
		markdown: heading + "\n```sh\nkubectl create -f - <<EOF\nkind: Event\n```\n",
		wantErr:  true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := commands(tc.markdown, heading)
			if (err != nil) != tc.wantErr {
				t.Fatalf("commands: error %v, want an error: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConsoleTranscript(t *testing.T) {
	const heading = "## Refusals"
	for _, tc := range []struct {
		name     string
		markdown string
		want     []step
		wantErr  bool
	}{{
		name: "commands and their output, console blocks only",
		markdown: "## Before\n```console\n$ kubectl before\n```\n" + heading + "\n```console\n" +
			"$ kubectl patch a\nThe Event \"a\" is invalid:\n  more\n\n$ kubectl patch b\n$ kubectl get c\nc\n```\n" +
			"```yaml\n$ not: a command\n```\n## After\n```console\n$ kubectl after\n```\n",
		want: []step{
			{command: "kubectl patch a", output: "The Event \"a\" is invalid:\n  more"},
			{command: "kubectl patch b"},
			{command: "kubectl get c", output: "c"},
		},
	}, {
		name:     "output without a command",
		markdown: heading + "\n```console\noutput\n```\n",
		wantErr:  true,
	}, {
		name:     "no such heading",
		markdown: "## Other\n",
		wantErr:  true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := consoleTranscript(tc.markdown, heading)
			if (err != nil) != tc.wantErr {
				t.Fatalf("consoleTranscript: error %v, want an error: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(step{})); diff != "" {
				t.Errorf("consoleTranscript (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWalkthrough runs the README's walk-through as a user of `make run`
// would: in a directory holding the server's data at .cache/run, with the
// kubectl of the envtest assets first on PATH, each command in bash with
// the variables the earlier ones set. A command fails the test when it
// exits non-zero or prints anything on stderr (kubectl's errors, warnings
// and "No resources found" all go there). A watch must print the events it
// selects, without an error, and is then stopped, as a user stops it.
// Then the refusals docs/series.md shows for the walk-through's series must
// print what the page says.
func TestWalkthrough(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := commands(string(readme), walkthroughHeading)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if len(cmds) == 0 {
		t.Fatalf("README.md: no command under %q", walkthroughHeading)
	}

	checkout := t.TempDir()
	framework.StartServer(t, framework.WithServerDataDir(filepath.Join(checkout, ".cache", "run")))
	kubectl := framework.EnvtestAsset(t, "kubectl")
	env := []string{
		"HOME=" + t.TempDir(),
		"PATH=" + filepath.Dir(kubectl) + string(os.PathListSeparator) + os.Getenv("PATH"),
	}

	var variables []string
	for _, cmd := range cmds {
		if assignment.MatchString(cmd) {
			variables = append(variables, cmd)
		} else if !strings.HasPrefix(cmd, "kubectl ") {
			t.Fatalf("the walk-through runs kubectl only; found %q", cmd)
		}
		script := strings.Join(append(append([]string{"set -o errexit -o nounset -o pipefail"}, variables...), cmd), "\n")
		if strings.Contains(cmd, " --watch") || strings.Contains(cmd, " -w ") {
			runWatch(t, checkout, env, script, cmd)
			continue
		}
		stdout, stderr, err := run(context.Background(), checkout, env, script)
		if err != nil || stderr != "" {
			t.Fatalf("%s\nfailed: %v\nstdout:\n%s\nstderr:\n%s", cmd, err, stdout, stderr)
		}
		t.Logf("%s\n%s", cmd, stdout)
	}

	// docs/series.md shows the refusals of the walk-through's series, with
	// kubectl's answers: each must print exactly what the page says.
	series, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "series.md"))
	if err != nil {
		t.Fatal(err)
	}
	transcript, err := consoleTranscript(string(series), seriesRefusalsHeading)
	if err != nil {
		t.Fatalf("docs/series.md: %v", err)
	}
	if len(transcript) == 0 {
		t.Fatalf("docs/series.md: no command under %q", seriesRefusalsHeading)
	}
	for _, step := range transcript {
		script := strings.Join(append(append([]string{"set -o nounset -o pipefail"}, variables...), step.command), "\n")
		stdout, stderr, _ := run(context.Background(), checkout, env, script)
		if diff := cmp.Diff(step.output, strings.TrimRight(stdout+stderr, "\n")); diff != "" {
			t.Errorf("docs/series.md: $ %s\nprinted other than the page says (-page +printed):\n%s", step.command, diff)
		}
	}
}

// seriesRefusalsHeading opens the section of docs/series.md whose console
// transcript runs against the walk-through's series.
const seriesRefusalsHeading = "## Refusals: 422 Invalid"

// step is one command of a console transcript and what it printed.
type step struct {
	command, output string
}

// consoleTranscript reads the ```console blocks of the section under
// heading: each line starting with "$ " is a command, and the lines up to
// the next blank line or command are its output.
func consoleTranscript(markdown, heading string) ([]step, error) {
	_, section, found := strings.Cut(markdown, "\n"+heading+"\n")
	if !found {
		return nil, fmt.Errorf("no heading %q", heading)
	}
	level := strings.SplitN(heading, " ", 2)[0] + " "
	if i := strings.Index(section, "\n"+level); i >= 0 {
		section = section[:i]
	}
	var steps []step
	inBlock := false
	for _, line := range strings.Split(section, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			inBlock = !inBlock && strings.TrimPrefix(line, "```") == "console"
		case !inBlock || line == "":
		case strings.HasPrefix(line, "$ "):
			steps = append(steps, step{command: strings.TrimPrefix(line, "$ ")})
		case len(steps) == 0:
			return nil, fmt.Errorf("output before any command: %q", line)
		default:
			last := &steps[len(steps)-1]
			last.output = strings.TrimPrefix(last.output+"\n"+line, "\n")
		}
	}
	return steps, nil
}

// run runs script in bash in dir, bounded by commandTimeout.
func run(ctx context.Context, dir string, env []string, script string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := bashCommand(ctx, dir, env, script, &out, &errOut)
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("not done in %v: %w", commandTimeout, err)
	}
	return out.String(), errOut.String(), err
}

// runWatch starts a watch and waits until it printed a header and at least
// one event; it fails the test if the watch ends by itself or prints on
// stderr. It then stops the watch, as Ctrl-C does.
func runWatch(t *testing.T, dir string, env []string, script, display string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	cmd := bashCommand(ctx, dir, env, script, &out, &errOut)
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("%s: %v", display, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var early error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, commandTimeout, true, func(context.Context) (bool, error) {
		select {
		case err := <-exited:
			early = fmt.Errorf("the watch ended by itself: %v", err)
			return false, early
		default:
		}
		if errOut.String() != "" {
			return false, errors.New("the watch printed on stderr")
		}
		return strings.Count(out.String(), "\n") >= 2, nil
	})
	cancel()
	if early == nil {
		// Stopped by the cancel, as Ctrl-C ends it.
		t.Logf("stopped the watch: %v", <-exited)
	}
	if err != nil {
		t.Fatalf("%s\nfailed: %v\nstdout:\n%s\nstderr:\n%s", display, err, out.String(), errOut.String())
	}
	t.Logf("%s\n%s", display, out.String())
}

// bashCommand is script in bash, in a process group of its own so that a
// canceled context stops kubectl along with the shell.
func bashCommand(ctx context.Context, dir string, env []string, script string, stdout, stderr interface{ Write([]byte) (int, error) }) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// syncBuffer is a bytes.Buffer that a running command writes while the
// test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
