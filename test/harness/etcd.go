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

package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/test/freeport"
)

// etcdStartTimeout bounds the start of an etcd cluster until it serves.
const etcdStartTimeout = 2 * time.Minute

// EtcdMember is one member of an Etcd: a Process with its client URL.
type EtcdMember struct {
	*Process
	ClientURL string
}

// Etcd is an etcd cluster of one member or more, of an etcd binary (the
// envtest assets'), on loopback ports, plain HTTP.
type Etcd struct {
	Members []*EtcdMember
	// Endpoints are the members' client URLs.
	Endpoints []string
	// Client is connected to every endpoint.
	Client *clientv3.Client
}

// StartEtcd starts an etcd cluster of n members of binary, each with its
// data and log (<name>.log) in dir and extra flags (for example
// --quota-backend-bytes), and waits until every member serves. The caller
// must Stop it.
func StartEtcd(binary, dir string, n int, extra ...string) (*Etcd, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ports, err := freeport.Ports(2 * n)
	if err != nil {
		return nil, err
	}
	var peerURLs, initial []string
	e := &Etcd{}
	for i := range n {
		e.Endpoints = append(e.Endpoints, fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]))
		peerURLs = append(peerURLs, fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]))
		initial = append(initial, fmt.Sprintf("etcd-%d=%s", i, peerURLs[i]))
	}
	for i := range n {
		name := fmt.Sprintf("etcd-%d", i)
		m := &EtcdMember{ClientURL: e.Endpoints[i], Process: &Process{
			Name:    name,
			Path:    binary,
			LogPath: filepath.Join(dir, name+".log"),
			Args: append([]string{
				"--name=" + name,
				"--data-dir=" + filepath.Join(dir, name),
				"--listen-client-urls=" + e.Endpoints[i],
				"--advertise-client-urls=" + e.Endpoints[i],
				"--listen-peer-urls=" + peerURLs[i],
				"--initial-advertise-peer-urls=" + peerURLs[i],
				"--initial-cluster=" + strings.Join(initial, ","),
				"--initial-cluster-state=new",
				"--unsafe-no-fsync",
				"--log-level=warn",
			}, extra...),
		}}
		e.Members = append(e.Members, m)
		if err := m.Start(); err != nil {
			return nil, errors.Join(err, e.Stop())
		}
	}
	e.Client, err = clientv3.New(clientv3.Config{Endpoints: e.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, errors.Join(err, e.Stop())
	}
	if err := e.WaitServing(context.Background(), etcdStartTimeout); err != nil {
		return nil, errors.Join(err, e.Stop())
	}
	return e, nil
}

// WaitServing waits, at most timeout, until every member answers a status
// request.
func (e *Etcd) WaitServing(ctx context.Context, timeout time.Duration) error {
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, m := range e.Members {
			select {
			case <-m.Exited():
				return false, fmt.Errorf("%s exited: %v; output: %s", m.Name, m.Err(), m.Tail())
			default:
			}
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, lastErr = e.Client.Status(ctx, m.ClientURL)
			cancel()
			if lastErr != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil && lastErr != nil {
		err = fmt.Errorf("%w (last error: %v)", err, lastErr)
	}
	if err != nil {
		return fmt.Errorf("etcd not serving: %w", err)
	}
	return nil
}

// Leader returns the member that leads now, and a follower.
func (e *Etcd) Leader(ctx context.Context) (leader, follower *EtcdMember, err error) {
	for _, m := range e.Members {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		status, err := e.Client.Status(ctx, m.ClientURL)
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

// Stop closes the client and stops every member (SIGTERM, SIGKILL after
// 10s), waiting until they have exited.
func (e *Etcd) Stop() error {
	var errs []error
	if e.Client != nil {
		if err := e.Client.Close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
		e.Client = nil
	}
	for _, m := range e.Members {
		if m.Running() {
			_ = m.Stop(10 * time.Second) // etcd's exit status after SIGTERM says nothing
		}
	}
	return errors.Join(errs...)
}
