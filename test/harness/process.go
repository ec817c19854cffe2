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

// Package harness runs what the tests and benchmarks need as real
// processes and reads what those processes measure: one process manager
// (Process: start, stop, kill, pause and restart by pid, output to a file),
// the servers built on it (events-apiserver as Server, etcd of the envtest
// assets as Etcd), one build of the server (BuildServer) and one reader of
// Prometheus metrics (Metrics, on component-base's testutil). The
// integration framework, the fault suite, the benchmarks and
// hack/bench-mirror all use it.
package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a child process started, stopped, killed, paused and started
// again with the same command line. Its output is appended to LogPath. It
// dies with the test binary (Pdeathsig), even when that one is killed.
type Process struct {
	// Name names the process in errors.
	Name string
	// Path and Args are the command line.
	Path string
	Args []string
	// Env is added to this process's environment.
	Env []string
	// LogPath receives stdout and stderr, appended across restarts.
	LogPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// Start starts the process; it is an error if it is running.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.exited:
		default:
			return fmt.Errorf("%s is running", p.Name)
		}
	}
	out, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.Path, p.Args...)
	if len(p.Env) > 0 {
		cmd.Env = append(os.Environ(), p.Env...)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("starting %s: %w", p.Name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.err = cmd, exited, nil
	go func() {
		err := cmd.Wait()
		_ = out.Close()
		p.mu.Lock()
		if p.cmd == cmd {
			p.err = err
		}
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// Pid is the process id of the current run.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Exited is closed when the current run has exited.
func (p *Process) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// Err is how the current run exited (nil for status 0), once it has.
func (p *Process) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Running says whether the process was started and has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Signal sends sig to the current run.
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("%s never started", p.Name)
	}
	return cmd.Process.Signal(sig)
}

// Pause stops the process (SIGSTOP), as a stalled disk or VM does, and
// returns once every thread of it has stopped.
func (p *Process) Pause() error {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("%s never started", p.Name)
	}
	return StopProcess(cmd.Process)
}

// StopProcess sends SIGSTOP to process and waits until the kernel shows
// each of its threads stopped: the signal is only queued when kill(2)
// returns, and a thread already running may answer one more request.
func StopProcess(process *os.Process) error {
	if err := process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	tasks := fmt.Sprintf("/proc/%d/task", process.Pid)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		stopped, err := allThreadsStopped(tasks)
		if err != nil || stopped {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d did not stop within 10s of SIGSTOP", process.Pid)
		}
	}
}

// allThreadsStopped reads the state field of /proc/<pid>/task/*/stat.
func allThreadsStopped(tasks string) (bool, error) {
	entries, err := os.ReadDir(tasks)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join(tasks, e.Name(), "stat"))
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread exited
		}
		if err != nil {
			return false, err
		}
		// "pid (comm) S ...": comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			return false, fmt.Errorf("unexpected %s/%s/stat: %q", tasks, e.Name(), stat)
		}
		if state := stat[i+2]; state != 'T' && state != 't' {
			return false, nil
		}
	}
	return true, nil
}

// Resume continues a paused process (SIGCONT).
func (p *Process) Resume() error { return p.Signal(syscall.SIGCONT) }

// Kill ends the process at once (SIGKILL), as a crash or a node loss
// does, and waits until it is gone.
func (p *Process) Kill() error {
	if err := p.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.Exited()
	return nil
}

// Stop ends the process gracefully: SIGCONT (in case it is paused), then
// SIGTERM, and waits for it; after timeout it kills it and says so. An
// exit status other than 0 is an error. Stopping a process that is not
// running returns how it exited.
func (p *Process) Stop(timeout time.Duration) error {
	if !p.Running() {
		return p.Err()
	}
	_ = p.Resume()
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-p.Exited():
		return p.Err()
	case <-time.After(timeout):
		_ = p.Kill()
		return fmt.Errorf("%s did not stop in %v after SIGTERM; see %s", p.Name, timeout, p.LogPath)
	}
}

// Log is what the process printed so far, over all its runs.
func (p *Process) Log() string {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// Tail is the last 8 KiB of Log, for a failing test's output.
func (p *Process) Tail() string {
	const max = 8 << 10
	log := p.Log()
	if len(log) > max {
		log = log[len(log)-max:]
	}
	return log
}

// RSS is the process's resident memory now and at its peak (VmRSS and
// VmHWM of /proc/<pid>/status), in bytes.
func (p *Process) RSS() (now, peak int64, err error) {
	pid := p.Pid()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		field, value, ok := strings.Cut(line, ":")
		if !ok || field != "VmRSS" && field != "VmHWM" {
			continue
		}
		kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, err
		}
		if field == "VmRSS" {
			now = kib << 10
		} else {
			peak = kib << 10
		}
	}
	if now == 0 {
		return 0, 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
	}
	return now, peak, nil
}
