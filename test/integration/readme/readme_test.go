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
	"github.com/kube-events/events-apiserver/test/markdown"
)

// walkthroughHeading opens the README section whose ```sh blocks are
// replayed; the section ends at the next heading of its level.
const walkthroughHeading = "## Walk-through with kubectl"

// assignment matches a line that only sets a shell variable, exported or
// not; it is kept for the commands after it.
var assignment = regexp.MustCompile(`^(export\s+)?[A-Za-z_][A-Za-z0-9_]*=`)

// commandTimeout bounds one command; a watch is stopped once it printed
// what it watches for.
const commandTimeout = 30 * time.Second

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
	cmds, err := markdown.Commands(string(readme), walkthroughHeading)
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
	transcript, err := markdown.Transcript(string(series), seriesRefusalsHeading)
	if err != nil {
		t.Fatalf("docs/series.md: %v", err)
	}
	if len(transcript) == 0 {
		t.Fatalf("docs/series.md: no command under %q", seriesRefusalsHeading)
	}
	for _, step := range transcript {
		script := strings.Join(append(append([]string{"set -o nounset -o pipefail"}, variables...), step.Command), "\n")
		stdout, stderr, _ := run(context.Background(), checkout, env, script)
		if diff := cmp.Diff(step.Output, strings.TrimRight(stdout+stderr, "\n")); diff != "" {
			t.Errorf("docs/series.md: $ %s\nprinted other than the page says (-page +printed):\n%s", step.Command, diff)
		}
	}
}

// seriesRefusalsHeading opens the section of docs/series.md whose console
// transcript runs against the walk-through's series.
const seriesRefusalsHeading = "## Refusals: 422 Invalid"

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
