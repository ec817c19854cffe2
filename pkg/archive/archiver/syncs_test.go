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

package archiver

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kube-events/events-apiserver/pkg/archive"
)

// heldSyncs is an archive whose Syncs return only when the test releases
// them, one by one, in any order. Only Sync is called.
type heldSyncs struct {
	archive.Archive
	started chan chan error
}

func (a *heldSyncs) Sync(ctx context.Context) error {
	release := make(chan error)
	select {
	case a.started <- release:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-release:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestCheckpointsOverlapSyncs checks the checkpoint loop: a Sync starts
// on the tick after new appends even while an earlier one is in flight,
// each Sync's revision is written only once it and every earlier one
// returned, in the order they started (the checkpoint never moves back),
// and a failed Sync ends the loop without a checkpoint past the last one,
// not even for a later Sync that succeeded, and hands its error to the
// follow (which appends again from the checkpoint).
func TestCheckpointsOverlapSyncs(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	client := startEtcd(t)
	clk := testingclock.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	held := &heldSyncs{started: make(chan chan error)}
	a, err := New(Config{Archive: held, Codec: unstructured.UnstructuredJSONScheme, Clock: clk,
		NewClient: func() (*clientv3.Client, error) { return client, nil }})
	if err != nil {
		t.Fatal(err)
	}
	f := &follower{Archiver: a, client: client, unconfirmed: make(chan error, 1)}
	f.checkpointed.Store(10)
	f.appended.Store(10)

	// The checkpoint's writes, in order.
	var (
		mu      sync.Mutex
		written []int64
	)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watch := client.Watch(watchCtx, CheckpointKey)
	go func() {
		for resp := range watch {
			for _, ev := range resp.Events {
				var cp Checkpoint
				if err := json.Unmarshal(ev.Kv.Value, &cp); err == nil {
					mu.Lock()
					written = append(written, cp.Revision)
					mu.Unlock()
				}
			}
		}
	}()
	waitWritten := func(want ...int64) {
		t.Helper()
		var got []int64
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			mu.Lock()
			got = append([]int64(nil), written...)
			mu.Unlock()
			return len(got) >= len(want), nil
		})
		if diff := cmp.Diff(want, got); err != nil || diff != "" {
			t.Fatalf("checkpoints written (-want +got):\n%s", diff)
		}
	}

	loopCtx, stopLoop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.checkpointLoop(loopCtx)
	}()
	defer func() {
		stopLoop()
		<-done
	}()
	// nextSync moves the clock a tick at a time until the loop starts a
	// Sync, and returns its release.
	nextSync := func() chan error {
		t.Helper()
		var release chan error
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			clk.Step(checkpointEvery)
			select {
			case release = <-held.started:
				return true, nil
			default:
				return false, nil
			}
		})
		if err != nil {
			t.Fatalf("no Sync started: %v", err)
		}
		return release
	}

	f.appended.Store(20)
	first := nextSync()
	f.appended.Store(30)
	second := nextSync() // while the first is in flight
	second <- nil
	first <- nil
	waitWritten(20, 30)

	f.appended.Store(40)
	third := nextSync()
	f.appended.Store(50)
	fourth := nextSync() // in flight when the third fails
	third <- errors.New("disk full")
	fourth <- nil
	select {
	case err := <-f.unconfirmed:
		if err == nil {
			t.Fatal("the follow was handed a nil error")
		}
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	// The loop ends on its next tick, and writes nothing more.
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		clk.Step(checkpointEvery)
		select {
		case <-done:
			return true, nil
		case release := <-held.started:
			t.Errorf("a Sync started after a failed one")
			release <- nil
			return false, nil
		default:
			return false, nil
		}
	})
	if err != nil {
		t.Fatalf("the checkpoint loop did not end after a failed Sync: %v", err)
	}
	waitWritten(20, 30)
}
