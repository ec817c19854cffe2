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

package framework

import (
	"errors"
	"io"
	"net"
	"sync"
)

// Link forwards TCP connections to an address, and can be cut: while cut,
// every open connection is closed and every new one closed as soon as it
// is accepted, which is how kube-apiserver down or a partition looks from
// the client's side. It forwards bytes, so TLS runs end to end.
type Link struct {
	listener net.Listener
	target   string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// StartLink listens on a free port of 127.0.0.1 and forwards to target
// ("host:port").
func StartLink(target string) (*Link, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &Link{listener: listener, target: target, conns: map[net.Conn]bool{}}
	l.wg.Go(l.accept)
	return l, nil
}

// Addr is the "host:port" to dial instead of the target.
func (l *Link) Addr() string { return l.listener.Addr().String() }

// Cut closes every open connection and refuses new ones until Restore.
func (l *Link) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = true
	for c := range l.conns {
		_ = c.Close()
	}
}

// Restore forwards new connections again.
func (l *Link) Restore() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = false
}

// Close stops listening and closes every connection.
func (l *Link) Close() error {
	err := l.listener.Close()
	l.Cut()
	l.wg.Wait()
	return err
}

func (l *Link) accept() {
	for {
		client, err := l.listener.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		l.wg.Go(func() { l.forward(client) })
	}
}

// forward copies both ways between client and a new connection to the
// target until either side closes or the link is cut.
func (l *Link) forward(client net.Conn) {
	if !l.track(client) {
		_ = client.Close()
		return
	}
	defer l.untrack(client)
	server, err := net.Dial("tcp", l.target)
	if err != nil {
		return
	}
	if !l.track(server) {
		_ = server.Close()
		return
	}
	defer l.untrack(server)
	done := make(chan struct{}, 2)
	pipe := func(to, from net.Conn) {
		_, _ = io.Copy(to, from)
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
}

// track notes an open connection; false while the link is cut.
func (l *Link) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut {
		return false
	}
	l.conns[c] = true
	return true
}

func (l *Link) untrack(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns, c)
	_ = c.Close()
}
