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

package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/test/harness"
)

// faultDuration is how long etcd or the server stays away in the faults
// that kill a process.
const faultDuration = 5 * time.Second

// pauseDuration is how long etcd stays paused (SIGSTOP).
const pauseDuration = 10 * time.Second

// recoveryTimeout bounds how long the server may take to be ready and
// take writes again after a fault ended, without intervention.
const recoveryTimeout = 2 * time.Minute

// env is what one fault runs against: etcd (nil with the embedded one),
// the server and the namespace of its events.
type env struct {
	etcd      *harness.Etcd
	server    *harness.Server
	namespace string
	// ttl is the server's --event-ttl, defaultEventTTL when zero.
	ttl time.Duration
	// expired counts the acknowledged creates that inject verified and
	// found expired (see verifyTTL).
	expired int
}

// eventTTL is how long the server keeps an event after its last write.
func (e *env) eventTTL() time.Duration {
	if e.ttl == 0 {
		return defaultEventTTL
	}
	return e.ttl
}

// faultCase is one fault of the suite.
type faultCase struct {
	name string
	// start starts etcd and the server.
	start func(t *testing.T) *env
	// inject runs the fault during the load and returns when its cause
	// ended (etcd or the server back, etcd resumed, NOSPACE raised), and
	// the writes it already verified (those that expire before the end;
	// it counts those that had expired when it read them in e.expired).
	inject func(t *testing.T, e *env, l *load) (end time.Time, verified map[string]written)
	// etcdAway: etcd was unreachable, so /readyz must have gone not-ready
	// (and come back by itself) while /livez stayed ok.
	etcdAway bool
	note     string
}

// TestFaults runs every fault, one after the other, each on its own etcd
// and server, under a steady load of six reporters (two per version).
func TestFaults(t *testing.T) {
	for _, fc := range []faultCase{
		{
			name:     "1. etcd SIGKILL, back after 5s",
			start:    externalEtcd(1),
			etcdAway: true,
			inject: func(t *testing.T, e *env, l *load) (time.Time, map[string]written) {
				member := e.etcd.Members[0]
				if err := member.Kill(); err != nil {
					t.Fatal(err)
				}
				<-time.After(faultDuration)
				if err := member.Start(); err != nil {
					t.Fatal(err)
				}
				return time.Now(), nil
			},
		},
		{
			name:  "1. embedded etcd: server SIGKILL, back after 5s",
			start: embeddedEtcd,
			inject: func(t *testing.T, e *env, l *load) (time.Time, map[string]written) {
				if err := e.server.Kill(); err != nil {
					t.Fatal(err)
				}
				<-time.After(faultDuration)
				if err := e.server.Start(); err != nil {
					t.Fatal(err)
				}
				return time.Now(), nil
			},
		},
		{
			name:  "2. server SIGKILL, restarted on the same data",
			start: externalEtcd(1),
			inject: func(t *testing.T, e *env, l *load) (time.Time, map[string]written) {
				if err := e.server.Kill(); err != nil {
					t.Fatal(err)
				}
				if err := e.server.Start(); err != nil {
					t.Fatal(err)
				}
				return time.Now(), nil
			},
		},
		{
			name:     "3. etcd SIGSTOP for 10s",
			start:    externalEtcd(1),
			etcdAway: true,
			inject: func(t *testing.T, e *env, l *load) (time.Time, map[string]written) {
				member := e.etcd.Members[0]
				if err := member.Pause(); err != nil {
					t.Fatal(err)
				}
				<-time.After(pauseDuration)
				if err := member.Resume(); err != nil {
					t.Fatal(err)
				}
				return time.Now(), nil
			},
		},
		noSpace(),
		{
			name:  "5. 3-member etcd: follower, then leader SIGKILL",
			start: externalEtcd(3),
			inject: func(t *testing.T, e *env, l *load) (time.Time, map[string]written) {
				ctx := context.Background()
				_, follower, err := e.etcd.Leader(ctx)
				if err != nil {
					t.Fatal(err)
				}
				killFor(t, follower.Process, faultDuration)
				waitMembers(t, e.etcd)
				l.waitAcked(t, 30, recoveryTimeout)
				leader, _, err := e.etcd.Leader(ctx)
				if err != nil {
					t.Fatal(err)
				}
				killFor(t, leader.Process, faultDuration)
				return time.Now(), nil
			},
		},
	} {
		t.Run(fc.name, func(t *testing.T) { runFault(t, fc) })
	}
}

// runFault starts fc's environment and load, injects the fault, waits for
// the server to be ready and take writes again, and checks every
// acknowledged create.
func runFault(t *testing.T, fc faultCase) {
	e := fc.start(t)
	l := startLoad(t, e.server.RestConfig, e.namespace, steadyReporters())
	h := watchHealth(t, e.server.RestConfig)
	l.waitAcked(t, 60, time.Minute)

	end, verified := fc.inject(t, e, l)
	readyAt := h.waitReady(t, end, recoveryTimeout)
	var writeAt time.Time
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, recoveryTimeout, true, func(context.Context) (bool, error) {
		writeAt = l.firstAckAfter(end)
		return !writeAt.IsZero(), nil
	})
	if err != nil {
		t.Fatalf("no create acknowledged within %v of the end of the fault", recoveryTimeout)
	}
	l.waitAcked(t, 30, recoveryTimeout)
	l.stop()
	h.stop()

	acked, errs, maxLatency, hung := l.snapshot()
	remaining := map[string]written{}
	for name, w := range acked {
		if _, ok := verified[name]; !ok {
			remaining[name] = w
		}
	}
	lost, expired := verifyTTL(t, e.server.RestConfig, e.namespace, remaining, e.eventTTL())
	notReady, wentUnready, livezFailures := h.summary()
	record(result{
		fault: fc.name, acknowledged: len(acked), lost: len(lost), expired: expired + e.expired, errors: errs, maxLatency: maxLatency,
		notReady: notReady, timeToReady: readyAt.Sub(end), timeToWrite: writeAt.Sub(end), note: fc.note,
	})

	if len(lost) > 0 {
		t.Errorf("%d of %d acknowledged creates lost or changed:\n%s", len(lost), len(acked), strings.Join(first(lost, 20), "\n"))
	}
	if hung > 0 {
		t.Errorf("%d creates got no answer within %v", hung, serverRequestTimeout+clientSlack)
	}
	if len(livezFailures) > 0 {
		t.Errorf("/livez failed while the server answered:\n%s", strings.Join(first(livezFailures, 10), "\n"))
	}
	if fc.etcdAway && !wentUnready {
		t.Errorf("/readyz stayed ok while etcd was away")
	}
	t.Logf("%s: %d acknowledged, %d lost, %d expired before they were read, errors %s, max latency %v, not ready %v, ready %v and writable %v after the fault; first error per code: %v",
		fc.name, len(acked), len(lost), expired+e.expired, formatCodes(errs), maxLatency, notReady, readyAt.Sub(end), writeAt.Sub(end), l.errorSamples())
}

// externalEtcd starts an etcd cluster of n members of the envtest binary
// and the server on it.
func externalEtcd(n int) func(t *testing.T) *env {
	return func(t *testing.T) *env {
		etcd := startEtcd(t, n)
		return &env{etcd: etcd, server: startServer(t, "--etcd-servers="+endpoints(etcd)), namespace: namespaceFor(t)}
	}
}

// embeddedEtcd starts the server on its embedded etcd.
func embeddedEtcd(t *testing.T) *env {
	return &env{server: startServer(t), namespace: namespaceFor(t)}
}

// killFor kills p with SIGKILL and starts it again after d.
func killFor(t *testing.T, p *harness.Process, d time.Duration) {
	t.Helper()
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	<-time.After(d)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
}

// waitMembers waits until every member of e answers.
func waitMembers(t *testing.T, e *harness.Etcd) {
	t.Helper()
	if err := e.WaitServing(context.Background(), recoveryTimeout); err != nil {
		t.Fatalf("etcd members not all back: %v", err)
	}
}

// namespaceFor is a namespace (and event name prefix) for the test.
func namespaceFor(t *testing.T) string {
	name := strings.ToLower(t.Name())
	var b strings.Builder
	for _, r := range name {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
			b.WriteRune('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 40 {
		s = strings.Trim(s[:40], "-")
	}
	return s
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "...")
	}
	return s
}
