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

package controller_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/server/mux"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/controller"
	"github.com/kube-events/events-apiserver/pkg/controller/health"
)

// fake is a controller whose Run is run.
type fake struct {
	name string
	run  func(ctx context.Context)

	started  atomic.Bool
	finished atomic.Bool
}

// reporting is a fake that reports through tracker.
type reporting struct {
	*fake
	tracker *health.Tracker
}

func (r reporting) Health() *health.Tracker { return r.tracker }

func (f *fake) Name() string { return f.name }

func (f *fake) Run(ctx context.Context) {
	f.started.Store(true)
	defer f.finished.Store(true)
	if f.run != nil {
		f.run(ctx)
		return
	}
	<-ctx.Done()
}

// livez serves the manager's checks as the generic server does and
// returns /livez's status code and its verbose body.
func livez(t *testing.T, m *controller.Manager) func() (int, string) {
	return serve(t, m, "/livez")
}

// serve serves the manager's checks as the server does (its health checks
// on /livez, its dependency checks on controller.DependencyPath) and
// returns a getter of path's status code and verbose body.
func serve(t *testing.T, m *controller.Manager, path string) func() (int, string) {
	t.Helper()
	mux := mux.NewPathRecorderMux("test")
	healthz.InstallLivezHandler(mux, append([]healthz.HealthChecker{healthz.PingHealthz}, m.HealthChecks()...)...)
	healthz.InstallPathHandler(mux, controller.DependencyPath, m.DependencyChecks()...)
	server := httptest.NewServer(mux)
	t.Cleanup(server.Close)
	return func() (int, string) {
		resp, err := http.Get(server.URL + path + "?verbose")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
}

// waitFor polls condition until it holds, failing t after 10s.
func waitFor(t *testing.T, what string, condition func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return condition(), nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestHealthChecksReportDeadLoopsByName: a loop whose Run returns while
// the server runs, or that is wedged (work, no progress for longer than
// the progress deadline, its dependency answering), turns /livez red with
// its name; the other loops stay green.
func TestHealthChecksReportDeadLoopsByName(t *testing.T) {
	const deadline = time.Minute
	tests := []struct {
		name string
		// dying breaks the loop "dying" of a running manager.
		dying    func(m *controller.Manager, f *fake, clock *clocktesting.FakeClock, tracker *health.Tracker)
		run      func(ctx context.Context)
		wantLine string
	}{
		{
			name:     "Run returns",
			run:      func(context.Context) {},
			wantLine: "[-]controller/dying failed",
		},
		{
			name: "killed",
			dying: func(m *controller.Manager, f *fake, _ *clocktesting.FakeClock, _ *health.Tracker) {
				waitFor(t, "dying started", f.started.Load)
				if !controller.Kill(m, "dying") {
					t.Fatal("Kill found no running loop named dying")
				}
			},
			wantLine: "[-]controller/dying failed",
		},
		{
			name: "wedged: work and no progress while its dependency answers",
			dying: func(_ *controller.Manager, f *fake, clock *clocktesting.FakeClock, tracker *health.Tracker) {
				waitFor(t, "dying started", f.started.Load)
				tracker.Busy()
				tracker.Answered(t.Context())
				clock.Step(deadline + time.Second)
			},
			wantLine: "[-]controller/dying failed",
		},
		{
			name: "wedged: stopped retrying its failing dependency",
			dying: func(_ *controller.Manager, f *fake, clock *clocktesting.FakeClock, tracker *health.Tracker) {
				waitFor(t, "dying started", f.started.Load)
				tracker.Busy()
				tracker.Failed(t.Context(), errors.New("connection refused"), 10*time.Second)
				clock.Step(10*time.Second + deadline + time.Second)
			},
			wantLine: "[-]controller/dying failed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := clocktesting.NewFakeClock(time.Now())
			tracker := health.New("dying", clock)
			dying := &fake{name: "dying", run: tt.run}
			healthy := &fake{name: "healthy"}
			m, err := controller.NewManager(controller.Config{Name: "test", ProgressDeadline: deadline,
				Elected: []controller.Controller{healthy}, EveryReplica: []controller.Controller{reporting{dying, tracker}}})
			if err != nil {
				t.Fatal(err)
			}
			get := livez(t, m)
			if code, body := get(); code != http.StatusOK {
				t.Fatalf("/livez before start: %d\n%s", code, body)
			}
			m.Start(t.Context())
			t.Cleanup(func() { _ = m.Stop() })
			if tt.dying != nil {
				tt.dying(m, dying, clock, tracker)
			}
			var code int
			var body string
			waitFor(t, "/livez red", func() bool {
				code, body = get()
				return code == http.StatusInternalServerError
			})
			if !strings.Contains(body, tt.wantLine) || !strings.Contains(body, "[+]controller/healthy ok") {
				t.Errorf("/livez body lacks %q or the healthy loop:\n%s", tt.wantLine, body)
			}
		})
	}
}

// TestStopWaitsForWorkInFlightThenReleases: Stop ends every loop, returns
// after their work in flight, calls Stopped after them, and leaves every
// check green: loops asked to stop are not dead, and their own checks are
// no longer asked.
func TestStopWaitsForWorkInFlightThenReleases(t *testing.T) {
	var order []string
	slow := &fake{name: "slow", run: func(ctx context.Context) {
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond) // work in flight finishing
		order = append(order, "slow stopped")
	}}
	m, err := controller.NewManager(controller.Config{
		Name: "test", EveryReplica: []controller.Controller{slow},
		Stopped: func() error { order = append(order, "released"); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	get := livez(t, m)
	m.Start(t.Context())
	waitFor(t, "slow started", slow.started.Load)
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"slow stopped", "released"}, order); diff != "" {
		t.Errorf("stop order (-want +got):\n%s", diff)
	}
	if code, body := get(); code != http.StatusOK {
		t.Errorf("/livez after Stop: %d\n%s", code, body)
	}
	if err := m.Stop(); err != nil || len(order) != 2 {
		t.Errorf("second Stop: %v, order %v", err, order)
	}
}

func TestNamesMustBeUnique(t *testing.T) {
	_, err := controller.NewManager(controller.Config{
		Elected: []controller.Controller{&fake{name: "a"}}, EveryReplica: []controller.Controller{&fake{name: "a"}},
	})
	if err == nil {
		t.Fatal("two controllers named a: no error")
	}
}

// TestDependencyOutageIsNotLiveness: a loop whose dependency fails, and
// which keeps retrying, keeps /livez green however long the outage lasts
// (here 10 progress deadlines), while /dependencyz fails naming the loop and
// the error; once the dependency answers, /dependencyz is green again.
func TestDependencyOutageIsNotLiveness(t *testing.T) {
	const deadline = time.Minute
	tests := []struct {
		name string
		// busy: the loop has work waiting on the dependency.
		busy bool
	}{
		{name: "work waiting", busy: true},
		{name: "idle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := clocktesting.NewFakeClock(time.Now())
			tracker := health.New("archiver", clock)
			loop := reporting{&fake{name: "archiver"}, tracker}
			m, err := controller.NewManager(controller.Config{Name: "test", ProgressDeadline: deadline, EveryReplica: []controller.Controller{loop}})
			if err != nil {
				t.Fatal(err)
			}
			live, dependencies := serve(t, m, "/livez"), serve(t, m, controller.DependencyPath)
			m.Start(t.Context())
			t.Cleanup(func() { _ = m.Stop() })
			waitFor(t, "archiver started", loop.started.Load)
			if tt.busy {
				tracker.Busy()
			}
			// The loop retries every 30 s, as the archiver's backoff at its cap.
			for i := range 20 {
				tracker.Failed(t.Context(), errors.New("dial tcp 127.0.0.1:9428: connection refused"), 30*time.Second)
				clock.Step(30 * time.Second)
				if code, body := live(); code != http.StatusOK {
					t.Fatalf("/livez %v into the outage: %d\n%s", time.Duration(i+1)*30*time.Second, code, body)
				}
			}
			code, body := dependencies()
			if code != http.StatusInternalServerError || !strings.Contains(body, "[-]controller/archiver failed") {
				t.Errorf("%s during the outage: %d, want 500 naming the loop\n%s", controller.DependencyPath, code, body)
			}
			if err := tracker.DependencyErr(); err == nil || !strings.Contains(err.Error(), "connection refused") {
				t.Errorf("DependencyErr during the outage: %v, want the last error", err)
			}
			tracker.Progress(t.Context())
			if code, body := dependencies(); code != http.StatusOK {
				t.Errorf("%s once the dependency answered: %d\n%s", controller.DependencyPath, code, body)
			}
			if code, body := live(); code != http.StatusOK {
				t.Errorf("/livez once the dependency answered: %d\n%s", code, body)
			}
		})
	}
}

// panicChild names the environment variable that makes
// TestPanicCrashesTheProcess run the panicking manager in its child.
const panicChild = "CONTROLLER_TEST_PANIC_CHILD"

// TestPanicCrashesTheProcess: a controller that panics takes the process
// down, the panic and the loop's name logged, as utilruntime.HandleCrash
// does in Kubernetes components, rather than leaving a process in an
// unknown state running. The manager runs in a child process (this test
// binary again) whose exit is checked.
func TestPanicCrashesTheProcess(t *testing.T) {
	if os.Getenv(panicChild) != "" {
		m, err := controller.NewManager(controller.Config{Name: "test", EveryReplica: []controller.Controller{
			&fake{name: "healthy"},
			&fake{name: "panicking", run: func(context.Context) { panic("boom") }},
		}})
		if err != nil {
			t.Fatal(err)
		}
		m.Start(t.Context())
		// The panic ends the process; a child still running after a minute
		// exits 0, which fails the parent.
		<-time.After(time.Minute)
		return
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestPanicCrashesTheProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), panicChild+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("the process with a panicking controller: %v, want a non-zero exit\n%s", err, out)
	}
	for _, want := range []string{"Observed a panic", "boom", `controller="panicking"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the crashed process's output lacks %q:\n%s", want, out)
		}
	}
}
