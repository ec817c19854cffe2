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

package leaderelection

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/metrics/testutil"

	"github.com/kube-events/events-apiserver/pkg/embedded/etcd"
)

// startEtcd runs a real (embedded) etcd for the test and returns a client
// factory for it.
func startEtcd(t *testing.T) func() *clientv3.Client {
	t.Helper()
	server, err := etcd.Start(t.Context(), etcd.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	tlsConfig, err := transport.TLSInfo{CertFile: server.CertFile, KeyFile: server.KeyFile, TrustedCAFile: server.TrustedCAFile}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	return func() *clientv3.Client {
		client, err := clientv3.New(clientv3.Config{Endpoints: []string{server.ClientURL}, TLS: tlsConfig, DialTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = client.Close() })
		return client
	}
}

// candidate is one replica taking part in an election in the background.
type candidate struct {
	identity string
	cancel   context.CancelFunc
	done     chan struct{}

	mu      sync.Mutex
	leading bool
	terms   int
}

func (c *candidate) state() (leading bool, terms int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leading, c.terms
}

func runCandidate(t *testing.T, cfg Config) *candidate {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	c := &candidate{identity: cfg.Identity, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		if err := Run(ctx, cfg, func(ctx context.Context) {
			c.mu.Lock()
			c.leading, c.terms = true, c.terms+1
			c.mu.Unlock()
			<-ctx.Done()
			c.mu.Lock()
			c.leading = false
			c.mu.Unlock()
		}); err != nil {
			t.Errorf("Run(%s): %v", cfg.Identity, err)
		}
	}()
	t.Cleanup(c.stop)
	return c
}

// stop ends the candidate's Run and waits for it.
func (c *candidate) stop() {
	c.cancel()
	<-c.done
}

// currentLeader reads the identity in the election key.
func currentLeader(ctx context.Context, client *clientv3.Client, name string) (string, error) {
	session, err := concurrency.NewSession(client, concurrency.WithTTL(5))
	if err != nil {
		return "", err
	}
	defer session.Close() //nolint:errcheck // a test observer's session
	resp, err := concurrency.NewElection(session, Key(name)).Leader(ctx)
	if err == concurrency.ErrElectionNoLeader {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(resp.Kvs[0].Value), nil
}

// waitForLeader waits until exactly one of candidates leads, as it sees it
// and as the election key says, and returns it.
func waitForLeader(t *testing.T, client *clientv3.Client, name string, candidates ...*candidate) *candidate {
	t.Helper()
	var leader *candidate
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		leader = nil
		for _, c := range candidates {
			if leading, _ := c.state(); leading {
				if leader != nil {
					t.Fatalf("%s and %s lead at the same time", leader.identity, c.identity)
				}
				leader = c
			}
		}
		if leader == nil {
			return false, nil
		}
		key, err := currentLeader(ctx, client, name)
		return err == nil && key == leader.identity, nil
	})
	if err != nil {
		t.Fatalf("no single leader with the election key naming it: %v", err)
	}
	return leader
}

func TestOneLeaderAndHandOverOnStop(t *testing.T) {
	newClient := startEtcd(t)
	observer := newClient()
	const name = "handover"
	a := runCandidate(t, Config{Client: newClient(), Name: name, Identity: "a", TTL: 5 * time.Second})
	b := runCandidate(t, Config{Client: newClient(), Name: name, Identity: "b", TTL: 5 * time.Second})

	first := waitForLeader(t, observer, name, a, b)
	if got := gauge(t, name); got != 1 {
		t.Errorf("events_apiserver_leader{election=%q} = %v while leading, want 1", name, got)
	}
	other := b
	if first == b {
		other = a
	}
	if _, terms := other.state(); terms != 0 {
		t.Fatalf("%s led too, %d times", other.identity, terms)
	}

	// A leader that stops resigns: the other takes over well before the TTL.
	stoppedAt := time.Now()
	first.stop()
	if leading, _ := first.state(); leading {
		t.Fatal("Run returned while its lead function was still running")
	}
	if second := waitForLeader(t, observer, name, other); second != other {
		t.Fatalf("leader after %s stopped = %s", first.identity, second.identity)
	}
	if took := time.Since(stoppedAt); took > 5*time.Second {
		t.Errorf("hand-over took %v, longer than the session TTL: the stopped leader did not resign", took)
	}
}

func TestLeaderWhoseSessionExpiresStopsLeading(t *testing.T) {
	newClient := startEtcd(t)
	observer := newClient()
	const name = "expiry"
	a := runCandidate(t, Config{Client: newClient(), Name: name, Identity: "a", TTL: 2 * time.Second})
	waitForLeader(t, observer, name, a)

	// Revoking every lease is what etcd does to a leader that could not
	// renew its lease in time (a network partition, a stalled process).
	leases, err := observer.Leases(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, lease := range leases.Leases {
		if _, err := observer.Revoke(t.Context(), lease.ID); err != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, terms := a.state()
		return terms >= 2, nil
	})
	if err != nil {
		t.Fatalf("the candidate did not notice the lost lease and lead again: %v", err)
	}
	waitForLeader(t, observer, name, a)
}

func TestRunStopsWhenLeadReturns(t *testing.T) {
	newClient := startEtcd(t)
	observer := newClient()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const name = "returns"
	terms := 0
	err := Run(ctx, Config{Client: newClient(), Name: name, Identity: "a", TTL: 2 * time.Second}, func(context.Context) {
		terms++
		if terms == 2 {
			cancel()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if terms != 2 {
		t.Errorf("lead ran %d times, want 2: a lead that returns is elected again until ctx ends", terms)
	}
	if got := gauge(t, name); got != 0 {
		t.Errorf("events_apiserver_leader{election=%q} = %v after Run returned, want 0", name, got)
	}
	if key, err := currentLeader(t.Context(), observer, name); err != nil || key != "" {
		t.Errorf("election key after Run returned = %q, %v; want none", key, err)
	}
}

func TestConfigErrors(t *testing.T) {
	client := &clientv3.Client{}
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no client", Config{Name: "x"}},
		{"no name", Config{Client: client}},
		{"TTL below a second", Config{Client: client, Name: "x", TTL: time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Run(t.Context(), tc.cfg, func(context.Context) { t.Error("lead ran") }); err == nil {
				t.Error("Run accepted the configuration")
			}
		})
	}
}

// gauge reads events_apiserver_leader{election=name}.
func gauge(t *testing.T, name string) float64 {
	t.Helper()
	v, err := testutil.GetGaugeMetricValue(leader.WithLabelValues(name))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestDefaultIdentity: the host name and a UUID, different for every
// process (two on one host are two candidates).
func TestDefaultIdentity(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	first, second := DefaultIdentity(), DefaultIdentity()
	for _, id := range []string{first, second} {
		suffix, ok := strings.CutPrefix(id, host+"_")
		if !ok {
			t.Fatalf("identity %q does not start with the host name %q", id, host)
		}
		if _, err := uuid.Parse(suffix); err != nil {
			t.Errorf("identity %q: %q is not a UUID: %v", id, suffix, err)
		}
	}
	if first == second {
		t.Errorf("two identities are both %q", first)
	}
}
