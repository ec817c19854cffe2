package apiserver

import (
	"context"
	"testing"
	"time"
)

func TestSweeperRunnerStopsWhatItStarted(t *testing.T) {
	var r sweeperRunner
	r.stop() // a server that never started: nothing to wait for

	started, finished := make(chan struct{}), make(chan struct{})
	r.start(context.Background(), func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		time.Sleep(10 * time.Millisecond) // a sweep finishing its write
		close(finished)
	})
	<-started
	r.stop()
	select {
	case <-finished:
	default:
		t.Fatal("stop returned before the sweeper did")
	}
}

func TestSweeperRunnerEndsWithItsContext(t *testing.T) {
	var r sweeperRunner
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	r.start(ctx, func(ctx context.Context) {
		<-ctx.Done()
		close(ended)
	})
	cancel()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("sweeper still running after its context ended")
	}
	r.stop()
}
