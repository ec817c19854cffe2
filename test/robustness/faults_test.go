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

package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-events/events-apiserver/test/harness"
)

// faults strikes etcd and the server's watchers during a run.
type faults struct {
	seed     uint64
	rec      *record
	etcd     *harness.Etcd
	recorder *recorder
	config   *rest.Config
	// compacted is the last revision compacted.
	compacted int64
	// slow holds the slow watchers still open.
	slow sync.WaitGroup
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// run injects a random fault every 2 to 6 seconds until ctx is done, and
// leaves etcd running. A fault that cannot be injected is an error.
func (f *faults) run(ctx context.Context) error {
	defer f.slow.Wait()
	r := rand.New(rand.NewPCG(f.seed, 2000))
	member := f.etcd.Members[0]
	for {
		sleep(ctx, time.Duration(2000+r.IntN(4000))*time.Millisecond)
		if ctx.Err() != nil {
			return nil
		}
		switch x := r.IntN(10); {
		case x < 2:
			f.rec.fault("etcd-sigstop")
			if err := member.Pause(); err != nil {
				return err
			}
			sleep(ctx, time.Duration(500+r.IntN(3500))*time.Millisecond)
			if err := member.Resume(); err != nil {
				return err
			}
		case x < 4:
			f.rec.fault("etcd-sigkill")
			if err := member.Kill(); err != nil {
				return err
			}
			sleep(ctx, time.Duration(500+r.IntN(2500))*time.Millisecond)
			if err := member.Start(); err != nil {
				return err
			}
			if err := f.etcd.WaitServing(context.Background(), time.Minute); err != nil {
				return err
			}
		case x < 8:
			if err := f.compact(ctx, r); err != nil {
				return err
			}
		default:
			f.rec.fault("slow-watcher")
			d := time.Duration(3+r.IntN(15)) * time.Second
			f.slow.Add(1)
			go func() {
				defer f.slow.Done()
				f.slowWatcher(ctx, d)
			}()
		}
	}
}

// compact compacts etcd at a random revision the recorder has passed,
// half the time at the recorder's head: past what the server has seen
// when its feed lags.
func (f *faults) compact(ctx context.Context, r *rand.Rand) error {
	head, err := f.recorder.Head()
	if err != nil {
		return err
	}
	if head <= f.compacted+1 {
		return nil
	}
	rev := head
	kind := "compact-head"
	if r.IntN(2) == 0 {
		rev = f.compacted + 1 + r.Int64N(head-f.compacted)
		kind = "compact"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := f.etcd.Client.Compact(ctx, rev); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("compacting at %d: %w", rev, err)
	}
	f.compacted = rev
	f.rec.fault(kind)
	return nil
}

// slowWatcher opens a watch of every event from resourceVersion 0 on a
// connection of its own and never reads it, for d.
func (f *faults) slowWatcher(ctx context.Context, d time.Duration) {
	config := rest.CopyConfig(f.config)
	// HTTP/1.1: a connection of its own, whose socket buffers fill.
	config.NextProtos = []string{"http/1.1"}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		f.rec.fault("slow-watcher-not-started")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	body, err := client.CoreV1().RESTClient().Get().Resource("events").
		Param("watch", "true").Param("resourceVersion", "0").Stream(ctx)
	if err != nil {
		f.rec.fault("slow-watcher-not-started")
		return
	}
	<-ctx.Done()
	_ = body.Close()
}
