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
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
	"github.com/kube-events/events-apiserver/test/robustness/validate"
)

// faults strikes etcd and the server's watchers during a run.
type faults struct {
	seed     uint64
	rec      *record
	etcd     *harness.Etcd
	recorder *recorder
	server   *harness.Server
	// link is the server's only way to etcd: cut, it closes every
	// connection, the feed's watch with them.
	link *framework.Link
	// relists is the metric that counts the store's relists.
	relists string
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
		switch x := r.IntN(20); {
		case x < 3:
			f.rec.fault("etcd-sigstop")
			if err := member.Pause(); err != nil {
				return err
			}
			sleep(ctx, time.Duration(500+r.IntN(3500))*time.Millisecond)
			if err := member.Resume(); err != nil {
				return err
			}
		case x < 6:
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
		case x < 12:
			if err := f.compact(ctx, r); err != nil {
				return err
			}
		case x < 15:
			if err := f.cutFeed(ctx, r); err != nil {
				return err
			}
		case x < 17:
			if err := f.noSpace(ctx, r); err != nil {
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
	config := rest.CopyConfig(f.server.RestConfig)
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

// feedTimeout bounds how long the server's store may take to follow etcd
// again once the link to etcd is back.
const feedTimeout = 30 * time.Second

// cutFeed closes every connection of the server to etcd, its feed's watch
// among them, and keeps the link down up to a second. The store must
// follow etcd again from where its watch ended, without a relist: its
// relists counter must not move, unless the store was behind a
// compaction before the cut (then a relist is its only way on).
func (f *faults) cutFeed(ctx context.Context, r *rand.Rand) error {
	before, beforeErr := f.storeRevision(ctx)
	relists, relistsErr := f.relistCount(ctx)
	judged := beforeErr == nil && relistsErr == nil && before >= f.compacted
	f.rec.fault("feed-cut")
	f.link.Cut()
	sleep(ctx, time.Duration(r.IntN(1000))*time.Millisecond)
	f.link.Restore()
	// Resumed: the store serves a write acknowledged after the link came back.
	wrote := f.rec.watermark.Load()
	var last int64
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, feedTimeout, true, func(ctx context.Context) (bool, error) {
		rv, err := f.storeRevision(ctx)
		last = rv
		return err == nil && rv > wrote, nil
	})
	switch {
	case ctx.Err() != nil:
		return nil
	case err != nil:
		f.rec.violation(validate.Violation{Kind: kindFeed, Op: "feed-cut",
			Detail: fmt.Sprintf("the store did not follow etcd again within %v of the cut: at %d, a write returned %d before", feedTimeout, last, wrote)})
		return nil
	}
	after, err := f.relistCount(ctx)
	if judged && err == nil && after > relists {
		f.rec.violation(validate.Violation{Kind: kindFeed, Op: "feed-cut",
			Detail: fmt.Sprintf("the store relisted (%s %v -> %v) after a cut, at %d before it, past the last compaction at %d", f.relists, relists, after, before, f.compacted)})
	}
	return nil
}

// kindFeed is a store that relisted or did not follow etcd again after its
// connections to etcd were cut.
const kindFeed = "feed"

// storeRevision is the store's revision: a list at resourceVersion 0's.
func (f *faults) storeRevision(ctx context.Context) (int64, error) {
	client, err := kubernetes.NewForConfig(f.server.RestConfig)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := client.CoreV1().Events("").List(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 1})
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(list.ResourceVersion, 10, 64)
}

// relistCount is the store's relists so far.
func (f *faults) relistCount(ctx context.Context) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := f.server.Metrics(ctx)
	if err != nil {
		return 0, err
	}
	return m.Value(f.relists, map[string]string{"resource": "events"}), nil
}

// Settings of the NOSPACE fault: etcd's quota, and the filler written past
// it under a key of its own, outside the events' prefix.
const (
	noSpaceQuota  = 32 << 20
	fillerKey     = "/robustness/filler"
	fillerSize    = 1 << 20
	maxFillerPuts = 4 * noSpaceQuota / fillerSize
	// clearTimeout bounds an operator's compaction, defragmentation and
	// disarm.
	clearTimeout = time.Minute
)

// noSpace fills etcd until it raises its NOSPACE alarm, leaves it so for
// 1 to 4 s (the server answers writes 503 meanwhile), and clears it as an
// operator would: the filler deleted, etcd compacted (never past the
// recorder), defragmented and the alarm disarmed.
func (f *faults) noSpace(ctx context.Context, r *rand.Rand) error {
	f.rec.fault("etcd-nospace")
	value := strings.Repeat("x", fillerSize)
	full := false
	for range maxFillerPuts {
		_, err := f.etcd.Client.Put(ctx, fillerKey, value)
		if errors.Is(err, rpctypes.ErrNoSpace) {
			full = true
			break
		}
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			return fmt.Errorf("filling etcd: %w", err)
		}
	}
	if !full && ctx.Err() == nil {
		return fmt.Errorf("etcd took %d puts of %d bytes without raising NOSPACE", maxFillerPuts, fillerSize)
	}
	sleep(ctx, time.Duration(1000+r.IntN(3000))*time.Millisecond)
	return f.clearNoSpace()
}

// clearNoSpace frees etcd's space and disarms its alarms.
func (f *faults) clearNoSpace() error {
	ctx, cancel := context.WithTimeout(context.Background(), clearTimeout)
	defer cancel()
	deleted, err := f.etcd.Client.Delete(ctx, fillerKey)
	if err != nil {
		return fmt.Errorf("deleting the filler: %w", err)
	}
	rev := deleted.Header.Revision
	if err := f.recorder.reach(ctx, rev, clearTimeout); err != nil {
		return err
	}
	if rev > f.compacted {
		if _, err := f.etcd.Client.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
			return fmt.Errorf("compacting at %d: %w", rev, err)
		}
		f.compacted = rev
	}
	for _, m := range f.etcd.Members {
		if _, err := f.etcd.Client.Defragment(ctx, m.ClientURL); err != nil {
			return fmt.Errorf("defragmenting %s: %w", m.Name, err)
		}
	}
	alarms, err := f.etcd.Client.AlarmList(ctx)
	if err != nil {
		return fmt.Errorf("listing etcd's alarms: %w", err)
	}
	for _, a := range alarms.Alarms {
		if _, err := f.etcd.Client.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: a.Alarm}); err != nil {
			return fmt.Errorf("disarming %v: %w", a.Alarm, err)
		}
	}
	return nil
}
