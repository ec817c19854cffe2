package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-events/events-apiserver/test/freeport"
)

// startTimeout bounds the start of one process until it serves.
const startTimeout = 2 * time.Minute

// process is a child process the suite starts, kills and restarts with the
// same command line. Its output goes to a file, shown when a test fails.
type process struct {
	name   string
	path   string
	args   []string
	logs   string
	cmd    *exec.Cmd
	exited chan struct{}
}

// start starts the process; it dies with the test binary.
func (p *process) start() error {
	if p.cmd != nil {
		select {
		case <-p.exited:
		default:
			return fmt.Errorf("%s is running", p.name)
		}
	}
	out, err := os.OpenFile(p.logs, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
	return nil
}

// signal sends sig to the running process.
func (p *process) signal(sig syscall.Signal) error {
	if p.cmd == nil {
		return fmt.Errorf("%s never started", p.name)
	}
	return p.cmd.Process.Signal(sig)
}

// kill sends SIGKILL and waits until the process is gone.
func (p *process) kill() error {
	if err := p.signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.exited
	return nil
}

// stop sends SIGTERM (SIGCONT first, in case it is paused) and waits,
// killing it after a minute.
func (p *process) stop() {
	if p.cmd == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.signal(syscall.SIGCONT)
	_ = p.signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		_ = p.kill()
	}
}

// tail is the end of the process's output.
func (p *process) tail() string {
	b, err := os.ReadFile(p.logs)
	if err != nil {
		return err.Error()
	}
	const max = 8 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// cleanup stops the process when the test ends and shows its output if
// the test failed.
func (p *process) cleanup(t *testing.T) {
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s output (end):\n%s", p.name, p.tail())
		}
	})
}

// etcdMember is one member of an etcd cluster of the envtest binary.
type etcdMember struct {
	process
	clientURL string
}

// etcdCluster is etcd, one member or several, on loopback.
type etcdCluster struct {
	members []*etcdMember
	client  *clientv3.Client
}

// startEtcd starts an etcd cluster of n members with extra flags (for
// example --quota-backend-bytes) and waits until it serves.
func startEtcd(t *testing.T, n int, extra ...string) *etcdCluster {
	t.Helper()
	var clientURLs, peerURLs, initial []string
	ports, err := freeport.Ports(2 * n)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		clientURLs = append(clientURLs, fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]))
		peerURLs = append(peerURLs, fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]))
		initial = append(initial, fmt.Sprintf("etcd-%d=%s", i, peerURLs[i]))
	}
	c := &etcdCluster{}
	dir := t.TempDir()
	for i := range n {
		name := fmt.Sprintf("etcd-%d", i)
		m := &etcdMember{clientURL: clientURLs[i], process: process{
			name: name,
			path: etcdBinary,
			logs: filepath.Join(dir, name+".log"),
			args: append([]string{
				"--name=" + name,
				"--data-dir=" + filepath.Join(dir, name),
				"--listen-client-urls=" + clientURLs[i],
				"--advertise-client-urls=" + clientURLs[i],
				"--listen-peer-urls=" + peerURLs[i],
				"--initial-advertise-peer-urls=" + peerURLs[i],
				"--initial-cluster=" + strings.Join(initial, ","),
				"--initial-cluster-state=new",
				"--unsafe-no-fsync",
				"--log-level=warn",
			}, extra...),
		}}
		if err := m.start(); err != nil {
			t.Fatalf("starting %s: %v", name, err)
		}
		m.cleanup(t)
		c.members = append(c.members, m)
	}
	c.client, err = clientv3.New(clientv3.Config{Endpoints: clientURLs, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.client.Close() })
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, startTimeout, true, func(ctx context.Context) (bool, error) {
		for _, m := range c.members {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := c.client.Status(ctx, m.clientURL)
			cancel()
			if err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("etcd not serving: %v", err)
	}
	return c
}

// endpoints are the members' client URLs, for --etcd-servers.
func (c *etcdCluster) endpoints() string {
	var urls []string
	for _, m := range c.members {
		urls = append(urls, m.clientURL)
	}
	return strings.Join(urls, ",")
}

// leader returns the member that leads now, and a follower.
func (c *etcdCluster) leader(ctx context.Context) (leader, follower *etcdMember, err error) {
	for _, m := range c.members {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		status, err := c.client.Status(ctx, m.clientURL)
		cancel()
		if err != nil {
			continue
		}
		if status.Leader == status.Header.MemberId {
			leader = m
		} else {
			follower = m
		}
	}
	if leader == nil || follower == nil {
		return nil, nil, errors.New("no leader and follower found")
	}
	return leader, follower, nil
}

// server is the events-apiserver binary running standalone on a fixed
// loopback port and data directory, so that a restart is the same server.
type server struct {
	process
	config *rest.Config
}

// startServer runs the server with extra flags and waits until /readyz is ok.
func startServer(t *testing.T, extra ...string) *server {
	t.Helper()
	dir := t.TempDir()
	s := &server{process: process{
		name: "events-apiserver",
		path: serverBinary,
		logs: filepath.Join(dir, "server.log"),
		args: append([]string{
			"--data-dir=" + filepath.Join(dir, "data"),
			"--secure-port=" + strconv.Itoa(freeport.Port(t)),
			"--standalone",
			"--embedded-etcd-log-level=error",
			"-v=1",
		}, extra...),
	}}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	s.cleanup(t)
	kubeconfig := filepath.Join(dir, "data", "kubeconfig")
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, startTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-s.exited:
			return false, errors.New("the server exited")
		default:
		}
		_, err := os.Stat(kubeconfig) // written once ready
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("events-apiserver not ready: %v\n%s", err, s.tail())
	}
	if s.config, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		t.Fatal(err)
	}
	s.config.QPS, s.config.Burst = -1, -1
	return s
}
