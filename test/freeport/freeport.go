// Package freeport finds loopback ports for tests to start servers on.
package freeport

import (
	"fmt"
	"net"
	"testing"
)

// Ports returns n distinct loopback ports that were free a moment ago: all
// n listeners are open at once, so no port is returned twice.
func Ports(n int) ([]int, error) {
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free loopback port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Port returns one free loopback port, failing t if there is none.
func Port(t testing.TB) int {
	t.Helper()
	ports, err := Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}
