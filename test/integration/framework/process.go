package framework

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-events/events-apiserver/test/freeport"
)

// BuildServer builds cmd/events-apiserver into dir and returns the
// binary's path, for tests and benchmarks that run the server as a process
// of its own (its own /metrics, its own memory, a kill -9 that is real).
func BuildServer(ctx context.Context, dir string) (string, error) {
	root, err := aggregatedModuleRoot()
	if err != nil {
		return "", err
	}
	binary := filepath.Join(dir, "events-apiserver")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", binary, "./cmd/events-apiserver")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/events-apiserver: %w: %s", err, out)
	}
	return binary, nil
}

// ServerProcess is events-apiserver running as a child process in
// standalone mode, on the etcd its arguments name.
type ServerProcess struct {
	// RestConfig is the admin client configuration from the kubeconfig
	// the server wrote once ready.
	RestConfig *rest.Config
	// DataDir holds the certificates and the kubeconfig.
	DataDir string
	// LogPath receives the server's output.
	LogPath string

	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// StartServerProcess runs binary with --data-dir=dataDir, a free
// --secure-port, --standalone and args, and returns once the server wrote
// its kubeconfig (it is ready). Its output goes to dataDir/server.log. The
// process dies with the caller.
func StartServerProcess(ctx context.Context, binary, dataDir string, args ...string) (*ServerProcess, error) {
	ports, err := freeport.Ports(1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	p := &ServerProcess{DataDir: dataDir, LogPath: filepath.Join(dataDir, "server.log"), exited: make(chan struct{})}
	log, err := os.Create(p.LogPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	p.cmd = exec.Command(binary, append([]string{"--data-dir=" + dataDir, "--secure-port=" + strconv.Itoa(port),
		"--standalone"}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()

	kubeconfig := filepath.Join(dataDir, "kubeconfig")
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, serverStartTimeout, true, func(context.Context) (bool, error) {
		select {
		case <-p.exited:
			return false, fmt.Errorf("events-apiserver exited before it was ready: %v; see %s", p.err, p.LogPath)
		default:
		}
		_, err := os.Stat(kubeconfig)
		return err == nil, nil
	})
	if err == nil {
		p.RestConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		_ = p.Kill()
		return nil, err
	}
	p.RestConfig.QPS, p.RestConfig.Burst = -1, -1
	return p, nil
}

// Pid is the server's process id.
func (p *ServerProcess) Pid() int { return p.cmd.Process.Pid }

// Kill ends the server at once (SIGKILL), as a crash or a node loss does:
// no hook runs, no lease is revoked.
func (p *ServerProcess) Kill() error {
	_ = p.cmd.Process.Kill()
	<-p.exited
	return nil
}

// Stop ends the server gracefully (SIGTERM) and waits, at most a minute,
// for it to exit; an exit status other than 0 is an error.
func (p *ServerProcess) Stop() error {
	select {
	case <-p.exited:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.err
	case <-time.After(serverStopTimeout):
		_ = p.Kill()
		return fmt.Errorf("events-apiserver did not stop in %v after SIGTERM; see %s", serverStopTimeout, p.LogPath)
	}
}

// Log is what the server printed so far.
func (p *ServerProcess) Log() string {
	data, _ := os.ReadFile(p.LogPath)
	return string(data)
}

// Metrics reads the server's /metrics and returns every sample, keyed by
// its name and labels as /metrics prints them (`name{label="value"}`).
func (p *ServerProcess) Metrics(ctx context.Context) (map[string]float64, error) {
	client, err := kubernetes.NewForConfig(p.RestConfig)
	if err != nil {
		return nil, err
	}
	body, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return ParseMetrics(body), nil
}

// ParseMetrics parses the Prometheus text format into samples keyed by
// name and labels.
func ParseMetrics(body []byte) map[string]float64 {
	samples := map[string]float64{}
	scanner := bufio.NewScanner(bytes.NewReader(body))
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			samples[line[:i]] = v
		}
	}
	return samples
}

// RSS is the server's resident memory now and at its peak (VmRSS and VmHWM
// of /proc/<pid>/status), in bytes.
func (p *ServerProcess) RSS() (now, peak int64, err error) {
	return ProcessRSS(p.Pid())
}

// ProcessRSS is the resident memory of process pid now and at its peak.
func ProcessRSS(pid int) (now, peak int64, err error) {
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
		return 0, 0, errors.New("no VmRSS in /proc/" + strconv.Itoa(pid) + "/status")
	}
	return now, peak, nil
}

// LeaderSample is the gauge every server serves on /metrics: 1 on the
// replica that runs the controllers, 0 on the others.
const LeaderSample = `events_apiserver_leader{election="controllers"}`

// Leader waits, at most timeout, until exactly one of replicas (nil ones
// are skipped) reports leading the controllers election on /metrics, and
// returns its index. Two replicas reporting it at once is an error: leave
// out a replica that is handing over.
func Leader(ctx context.Context, timeout time.Duration, replicas ...*ServerProcess) (int, error) {
	lead := -1
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		lead = -1
		for i, r := range replicas {
			if r == nil {
				continue
			}
			m, err := r.Metrics(ctx)
			if err != nil {
				return false, nil
			}
			if m[LeaderSample] != 1 {
				continue
			}
			if lead >= 0 {
				return false, fmt.Errorf("replicas %d and %d lead the controllers at once", lead, i)
			}
			lead = i
		}
		return lead >= 0, nil
	})
	if err != nil {
		return -1, fmt.Errorf("no single leader of the controllers election: %w", err)
	}
	return lead, nil
}
