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

package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/klog/v2"

	"github.com/kube-events/events-apiserver/pkg/leaderelection"
)

// CheckPrefix begins the name of every loop's health checks:
// /livez/controller/<name> and /dependencyz/controller/<name>.
const CheckPrefix = "controller/"

// DependencyPath is where the loops' dependency checks are served: in
// neither /livez nor /readyz, since a dependency that does not answer is
// neither this process's fault nor a reason to take it out of service.
const DependencyPath = "/dependencyz"

// DefaultProgressDeadline is Config.ProgressDeadline's default.
const DefaultProgressDeadline = 5 * time.Minute

// ElectionCheck is the name of the health check of the election loop.
const ElectionCheck = CheckPrefix + "leader-election"

// Config says which controllers a Manager runs, and how.
type Config struct {
	// Name names the post-start hook that starts the controllers and the
	// pre-shutdown hook that stops them.
	Name string
	// Election, when set, is the election under which the Elected
	// controllers run: only while this replica leads. Nil runs them on this
	// replica without one, for a single replica.
	Election *leaderelection.Config
	// Elected are the loops one replica at a time runs.
	Elected []Controller
	// EveryReplica are the loops every replica runs, whatever the election:
	// work that must go on while no replica can be elected (the etcd
	// maintenance) or that concerns this replica's own state (the flush of
	// its folded counts).
	EveryReplica []Controller
	// Stopped, when set, is called once every controller has stopped, to
	// release what they shared (the etcd client of the election).
	Stopped func() error
	// ProgressDeadline is how long a Reporter may have work without making
	// progress, while its dependency answers, before its /livez check
	// fails; DefaultProgressDeadline if zero.
	ProgressDeadline time.Duration
}

// Manager runs a set of controllers from Start to Stop. It is the one
// place that starts, stops and watches the server's loops.
type Manager struct {
	name         string
	election     *leaderelection.Config
	elected      []*loop
	everyReplica []*loop
	stopped      func() error
	deadline     time.Duration
	electionLoop *loop // the campaign, when there is an election

	mu       sync.Mutex
	cancel   context.CancelFunc
	done     chan struct{}
	released bool
}

// NewManager returns a Manager for cfg; every controller needs a name of
// its own.
func NewManager(cfg Config) (*Manager, error) {
	m := &Manager{name: cfg.Name, election: cfg.Election, stopped: cfg.Stopped, deadline: cfg.ProgressDeadline}
	if m.deadline <= 0 {
		m.deadline = DefaultProgressDeadline
	}
	names := map[string]bool{campaign{}.Name(): cfg.Election != nil}
	add := func(controllers []Controller) ([]*loop, error) {
		var loops []*loop
		for _, c := range controllers {
			if c.Name() == "" || names[c.Name()] {
				return nil, fmt.Errorf("controller names must be unique and not empty, got %q twice or empty", c.Name())
			}
			names[c.Name()] = true
			loops = append(loops, &loop{controller: c, deadline: m.deadline})
		}
		return loops, nil
	}
	var err error
	if m.elected, err = add(cfg.Elected); err != nil {
		return nil, err
	}
	if m.everyReplica, err = add(cfg.EveryReplica); err != nil {
		return nil, err
	}
	if m.election != nil && len(m.elected) > 0 {
		m.electionLoop = &loop{controller: campaign{m}, deadline: m.deadline}
	}
	return m, nil
}

// Install starts the controllers from the server's post-start hook, stops
// them from its pre-shutdown hook (before storage goes away), adds their
// health checks to /livez and serves their dependency checks on
// DependencyPath.
//
// The health checks are on /livez, not /readyz: a loop serves no request,
// so moving traffic away from the replica would not bring it back; its
// goroutine is gone or stuck, and what brings it back is a new process
// (which, on the leader, also hands the elected loops to another replica).
// The dependency checks are on neither: a new process would wait for the
// dependency just the same, and the replica serves meanwhile.
func (m *Manager) Install(server *genericapiserver.GenericAPIServer) error {
	if err := server.AddPostStartHook(m.name, func(hook genericapiserver.PostStartHookContext) error {
		m.Start(hook)
		return nil
	}); err != nil {
		return err
	}
	if err := server.AddPreShutdownHook(m.name, m.Stop); err != nil {
		return err
	}
	healthz.InstallPathHandler(server.Handler.NonGoRestfulMux, DependencyPath, m.DependencyChecks()...)
	return server.AddLivezChecks(0, m.HealthChecks()...)
}

// HealthChecks are one check per loop, named CheckPrefix+name, failing
// while the loop is dead (its Run returned before Stop) or, for a
// Reporter, wedged: it has had work for longer than the progress deadline
// without progress while its dependency answers. A loop that does not run
// (this replica does not lead) is healthy. With an election, ElectionCheck
// fails if the campaign ended before Stop.
func (m *Manager) HealthChecks() []healthz.HealthChecker {
	var checks []healthz.HealthChecker
	for _, l := range m.loops() {
		checks = append(checks, healthz.NamedCheck(CheckPrefix+l.controller.Name(), l.check))
	}
	return checks
}

// DependencyChecks are one check per Reporter, named CheckPrefix+name,
// failing while the loop runs and its last call to its dependency failed.
func (m *Manager) DependencyChecks() []healthz.HealthChecker {
	var checks []healthz.HealthChecker
	for _, l := range m.loops() {
		if _, ok := l.controller.(Reporter); ok {
			checks = append(checks, healthz.NamedCheck(CheckPrefix+l.controller.Name(), l.dependencyCheck))
		}
	}
	return checks
}

func (m *Manager) loops() []*loop {
	loops := append(append([]*loop{}, m.elected...), m.everyReplica...)
	if m.electionLoop != nil {
		loops = append(loops, m.electionLoop)
	}
	return loops
}

// Start runs the every-replica controllers, and the elected ones under the
// election (or at once without one), until Stop or ctx ends. It does
// nothing if already started.
func (m *Manager) Start(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cancel != nil || m.released {
		return
	}
	ctx, m.cancel = context.WithCancel(ctx)
	m.done = make(chan struct{})
	var wg sync.WaitGroup
	for _, l := range m.everyReplica {
		wg.Go(func() { l.run(ctx) })
	}
	switch {
	case m.electionLoop != nil:
		wg.Go(func() { m.electionLoop.run(ctx) })
	case len(m.elected) > 0:
		wg.Go(func() { m.lead(ctx) })
	}
	go func(done chan struct{}) {
		wg.Wait()
		close(done)
	}(m.done)
}

// lead runs the elected controllers until ctx ends and waits for all.
// Once this replica no longer leads, their health no longer concerns it:
// what died under its leadership is forgotten.
func (m *Manager) lead(ctx context.Context) {
	var wg sync.WaitGroup
	for _, l := range m.elected {
		wg.Go(func() { l.run(ctx) })
	}
	wg.Wait()
	for _, l := range m.elected {
		l.forget()
	}
}

// Stop ends what Start started, waits for the controllers' work in flight,
// then calls Config.Stopped. Later calls do nothing.
func (m *Manager) Stop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cancel != nil {
		m.cancel()
		<-m.done
		m.cancel = nil
	}
	if m.released || m.stopped == nil {
		m.released = true
		return nil
	}
	m.released = true
	return m.stopped()
}

// kill ends the named controller's Run as if its goroutine had died, and
// reports whether it was running: the health checks then report it dead
// until it runs again. Tests reach it through export_test.go.
func (m *Manager) kill(name string) bool {
	for _, l := range m.loops() {
		if l.controller.Name() == name {
			return l.kill()
		}
	}
	return false
}

// campaign is the election loop, as a controller: it campaigns and runs
// the elected controllers while this replica leads.
type campaign struct{ m *Manager }

func (c campaign) Name() string { return "leader-election" }

func (c campaign) Run(ctx context.Context) {
	if err := leaderelection.Run(ctx, *c.m.election, c.m.lead); err != nil {
		klog.FromContext(ctx).Error(err, "Not campaigning: the elected controllers will not run on this replica")
	}
}

// loop is one controller and what its health check reads.
type loop struct {
	controller Controller
	deadline   time.Duration // the progress deadline of a Reporter

	mu      sync.Mutex
	cancel  context.CancelFunc // ends the running Run; nil when not running
	killed  bool
	failure error // why the last Run ended before it was asked to
}

// errStopped is the failure of a Run that returned while its context went on.
var errStopped = errors.New("stopped while the server runs")

// run runs the controller until ctx ends and records a Run that returned
// before. A Run that panics crashes the process, after logging the panic,
// as utilruntime.HandleCrash does in Kubernetes components: the loop's
// state, and whatever it shared, is unknown, and the kubelet's restart of
// the process is what brings it back (on the leader, handing the elected
// loops to another replica meanwhile).
func (l *loop) run(ctx context.Context) {
	name := l.controller.Name()
	logger := klog.FromContext(ctx)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if reporter, ok := l.controller.(Reporter); ok {
		reporter.Health().Reset()
	}
	l.mu.Lock()
	l.cancel, l.killed, l.failure = cancel, false, nil
	l.mu.Unlock()

	logger.Info("Starting controller", "controller", name)
	failure := func() error {
		defer utilruntime.HandleCrashWithLogger(logger.WithValues("controller", name))
		l.controller.Run(klog.NewContext(runCtx, logger.WithName(name)))
		if ctx.Err() == nil {
			return errStopped
		}
		return nil
	}()
	switch {
	case failure != nil:
		logger.Error(failure, "Controller died; its health check fails until the server restarts", "controller", name)
	default:
		logger.Info("Stopped controller", "controller", name)
	}

	l.mu.Lock()
	l.cancel, l.failure = nil, failure
	l.mu.Unlock()
}

// forget clears the failure of a Run that no longer runs.
func (l *loop) forget() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failure = nil
}

// kill cancels the running Run's context alone.
func (l *loop) kill() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel == nil {
		return false
	}
	l.killed = true
	l.cancel()
	return true
}

// check is the loop's health check.
func (l *loop) check(*http.Request) error {
	l.mu.Lock()
	running, failure := l.cancel != nil && !l.killed, l.failure
	l.mu.Unlock()
	if failure != nil {
		return fmt.Errorf("controller %s: %w", l.controller.Name(), failure)
	}
	if reporter, ok := l.controller.(Reporter); ok && running {
		if err := reporter.Health().Wedged(l.deadline); err != nil {
			return fmt.Errorf("controller %s: %w", l.controller.Name(), err)
		}
	}
	return nil
}

// dependencyCheck is the loop's dependency check: a Reporter's dependency
// error while it runs.
func (l *loop) dependencyCheck(*http.Request) error {
	l.mu.Lock()
	running := l.cancel != nil && !l.killed
	l.mu.Unlock()
	if !running {
		return nil
	}
	if err := l.controller.(Reporter).Health().DependencyErr(); err != nil {
		return fmt.Errorf("controller %s: %w", l.controller.Name(), err)
	}
	return nil
}
