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
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/core/install"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/test/harness"
)

// crashingArchive keeps what is appended in memory, durable once a Sync
// returns. crash drops what no Sync covered, as an engine killed before
// its flush does, and fails every call until restore.
type crashingArchive struct {
	archive.Archive // the methods the archiver does not call

	mu             sync.Mutex
	durable, since map[string]bool // uid@resourceVersion
	// lost are the states a crash lost: as the real archives do, a Sync
	// fails while a state appended since the last one is missing.
	lost map[string]bool
	down bool
	// failed counts the calls that failed, by method.
	failed map[string]int
}

func newCrashingArchive() *crashingArchive {
	return &crashingArchive{durable: map[string]bool{}, since: map[string]bool{}, lost: map[string]bool{}, failed: map[string]int{}}
}

func (a *crashingArchive) Append(_ context.Context, records []archive.Record) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.down {
		a.failed["Append"]++
		return archive.Unavailable("down")
	}
	for _, r := range records {
		a.since[r.UID+"@"+r.ResourceVersion] = true
		delete(a.lost, r.UID+"@"+r.ResourceVersion)
	}
	return nil
}

func (a *crashingArchive) Sync(context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.down {
		a.failed["Sync"]++
		return archive.Unavailable("down")
	}
	if len(a.lost) > 0 {
		a.failed["Sync"]++
		return archive.Unavailable("%d states appended since the last Sync are missing", len(a.lost))
	}
	for k := range a.since {
		a.durable[k] = true
	}
	clear(a.since)
	return nil
}

func (a *crashingArchive) Stats(context.Context) (archive.Stats, error) {
	return archive.Stats{}, nil
}

func (a *crashingArchive) crash() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range a.since {
		a.lost[k] = true
	}
	clear(a.since)
	a.down = true
}

func (a *crashingArchive) restore() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.down = false
}

func (a *crashingArchive) failures(method string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failed[method]
}

// appended is everything appended, durable or not.
func (a *crashingArchive) appended() map[string]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	all := map[string]bool{}
	for k := range a.durable {
		all[k] = true
	}
	for k := range a.since {
		all[k] = true
	}
	return all
}

func (a *crashingArchive) durableStates() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for k := range a.durable {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestArchiverAppendsAgainAfterCrash crashes the archive after it took
// states and before a Sync made them durable, and checks that the
// archiver appends them again from its checkpoint once the archive is
// back, instead of moving the checkpoint past states the archive lost:
// whether it learns of the crash from a failed Append or a failed Sync.
func TestArchiverAppendsAgainAfterCrash(t *testing.T) {
	for _, tc := range []struct {
		name string
		// writeWhileDown writes an event while the archive is down, so
		// that an Append fails; otherwise the archiver learns of the crash
		// from a Sync.
		writeWhileDown bool
		failed         string
	}{
		{name: "append fails", writeWhileDown: true, failed: "Append"},
		{name: "sync fails", failed: "Sync"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testArchiverAppendsAgainAfterCrash(t, tc.writeWhileDown, tc.failed)
		})
	}
}

func testArchiverAppendsAgainAfterCrash(t *testing.T, writeWhileDown bool, failed string) {
	_, ctx := ktesting.NewTestContext(t)
	etcd := harness.StartTestEtcd(t)
	newClient := func() (*clientv3.Client, error) {
		return clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	}
	client, err := newClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	scheme := runtime.NewScheme()
	install.Install(scheme)
	codec := serializer.NewCodecFactory(scheme).LegacyCodec(corev1.SchemeGroupVersion)

	a := newCrashingArchive()
	archiver, err := New(Config{Archive: a, NewClient: newClient, StoragePrefix: "/registry", ResourcePrefix: "events", Codec: codec})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		archiver.Run(runCtx)
	}()
	t.Cleanup(func() {
		stop()
		<-done
	})

	var want []string
	put := func(i int) int64 {
		t.Helper()
		event := &core.Event{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e%d", i), Namespace: "ns", UID: types.UID(fmt.Sprintf("uid-%d", i))},
			EventTime:  metav1.NewMicroTime(time.Now()),
		}
		data, err := runtime.Encode(codec, event)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Put(ctx, "/events/ns/"+event.Name, string(data))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%s@%d", event.UID, resp.Header.Revision))
		return resp.Header.Revision
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return cond(), nil
		}); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	checkpointAt := func(revision int64) func() bool {
		return func() bool {
			cp, ok, err := ReadCheckpoint(ctx, client)
			return err == nil && ok && cp.Revision >= revision
		}
	}

	waitFor("the first checkpoint", checkpointAt(put(0)))
	// Taken, perhaps not yet durable: the crash comes at once.
	put(1)
	waitFor("the append", func() bool { return a.appended()[want[1]] })
	a.crash()
	if writeWhileDown {
		put(2)
	}
	waitFor("a failed "+failed, func() bool { return a.failures(failed) > 0 })
	a.restore()
	last := put(3)
	waitFor("the checkpoint past every state", checkpointAt(last))
	if diff := cmp.Diff(want, a.durableStates()); diff != "" {
		t.Errorf("durable states once the checkpoint passed them (-want +got):\n%s", diff)
	}
}

// TestStoppedArchiverReportsNoLag: once Run returns (the replica's term
// ended), its lag gauges read 0, so that only the leader's report a lag.
func TestStoppedArchiverReportsNoLag(t *testing.T) {
	a, err := New(Config{Archive: newCrashingArchive(), Codec: unstructured.UnstructuredJSONScheme,
		NewClient: func() (*clientv3.Client, error) { return nil, errors.New("no etcd") }})
	if err != nil {
		t.Fatal(err)
	}
	lagSeconds.Set(5)
	lagRevisions.Set(7)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	a.Run(ctx)
	for _, g := range []struct {
		name  string
		gauge metrics.GaugeMetric
	}{{"lag_seconds", lagSeconds}, {"lag_revisions", lagRevisions}} {
		if v, err := testutil.GetGaugeMetricValue(g.gauge); err != nil || v != 0 {
			t.Errorf("%s after Run: %v (%v), want 0", g.name, v, err)
		}
	}
}
