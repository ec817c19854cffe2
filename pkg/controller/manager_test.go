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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/server/mux"

	"github.com/kube-events/events-apiserver/pkg/controller"
)

// fake is a controller whose Run is run, and whose HealthCheck returns
// *health when set.
type fake struct {
	name   string
	run    func(ctx context.Context)
	health atomic.Pointer[error]

	started  atomic.Bool
	finished atomic.Bool
}

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

func (f *fake) HealthCheck() error {
	if err := f.health.Load(); err != nil {
		return *err
	}
	return nil
}

// livez serves the manager's checks as the generic server does and
// returns /livez's status code and its verbose body.
func livez(t *testing.T, m *controller.Manager) func() (int, string) {
	t.Helper()
	mux := mux.NewPathRecorderMux("test")
	healthz.InstallLivezHandler(mux, append([]healthz.HealthChecker{healthz.PingHealthz}, m.HealthChecks()...)...)
	server := httptest.NewServer(mux)
	t.Cleanup(server.Close)
	return func() (int, string) {
		resp, err := http.Get(server.URL + "/livez?verbose")
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

// TestHealthChecksReportDeadLoopsByName: a loop whose Run returns or
// panics while the server runs, or whose own check fails, turns /livez red
// with its name; the other loops stay green.
func TestHealthChecksReportDeadLoopsByName(t *testing.T) {
	tests := []struct {
		name string
		// dying breaks the loop "dying" of a running manager.
		dying    func(m *controller.Manager, f *fake)
		run      func(ctx context.Context)
		wantLine string
	}{
		{
			name:     "Run returns",
			run:      func(context.Context) {},
			wantLine: "[-]controller/dying failed",
		},
		{
			name:     "Run panics",
			run:      func(context.Context) { panic("boom") },
			wantLine: "[-]controller/dying failed",
		},
		{
			name: "killed by the test hook",
			dying: func(m *controller.Manager, f *fake) {
				waitFor(t, "dying started", f.started.Load)
				if !m.Kill("dying") {
					t.Fatal("Kill found no running loop named dying")
				}
			},
			wantLine: "[-]controller/dying failed",
		},
		{
			name: "its own check fails",
			dying: func(m *controller.Manager, f *fake) {
				err := errors.New("not synced for 5m")
				f.health.Store(&err)
			},
			wantLine: "[-]controller/dying failed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dying := &fake{name: "dying", run: tt.run}
			healthy := &fake{name: "healthy"}
			m, err := controller.NewManager(controller.Config{Name: "test", Elected: []controller.Controller{healthy}, EveryReplica: []controller.Controller{dying}})
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
				tt.dying(m, dying)
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
	// A loop that does not run is not asked how it is.
	err = errors.New("not synced")
	slow.health.Store(&err)
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
