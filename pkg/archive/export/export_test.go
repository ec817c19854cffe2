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

package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/core/install"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/archive/archiver"
	"github.com/kube-events/events-apiserver/pkg/archive/victorialogs"
	"github.com/kube-events/events-apiserver/test/harness"
)

// receiver is an in-memory OTLP receiver: it keeps the identities
// (log.record.uid) of what it takes, and refuses every batch while down.
type receiver struct {
	mu      sync.Mutex
	got     []string
	down    bool
	refused int
}

func (r *receiver) Export(_ context.Context, records []sdklog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		r.refused++
		return errors.New("receiver down")
	}
	for i := range records {
		r.got = append(r.got, attrs(&records[i])[AttrRecordUID])
	}
	return nil
}

func (r *receiver) Shutdown(context.Context) error   { return nil }
func (r *receiver) ForceFlush(context.Context) error { return nil }

func (r *receiver) setDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
}

func (r *receiver) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func (r *receiver) refusals() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused
}

// TestExportFollowsTheCursor runs the export against a real etcd and the
// embedded archive: it starts at the archive checkpoint, exports in order
// up to it and no further, waits out a receiver that refuses (losing
// nothing), and a new export (a restart, the next leader) resumes from the
// cursor without sending anything twice.
func TestExportFollowsTheCursor(t *testing.T) {
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
	a, err := victorialogs.OpenEmbedded(ctx, victorialogs.EmbeddedConfig{Dir: t.TempDir(), Retention: 48 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	scheme := runtime.NewScheme()
	install.Install(scheme)
	codec := serializer.NewCodecFactory(scheme).LegacyCodec(corev1.SchemeGroupVersion)

	// archive appends states at revisions revs and moves the checkpoint to
	// the last, as the archiver does.
	archiveStates := func(revs ...int64) {
		t.Helper()
		var records []archive.Record
		for _, rev := range revs {
			records = append(records, mustRecord(t, codec, rev))
		}
		if err := a.Append(ctx, records); err != nil {
			t.Fatal(err)
		}
		if err := a.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(archiver.Checkpoint{Revision: revs[len(revs)-1], Time: time.Now()})
		if _, err := client.Put(ctx, archiver.CheckpointKey, string(data)); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(revs ...int64) []string {
		var out []string
		for _, rev := range revs {
			out = append(out, fmt.Sprintf("uid-%d/%d", rev, rev))
		}
		return out
	}
	recv := &receiver{}
	run := func() (stop func()) {
		e, err := New(Config{Archive: a, NewClient: newClient, Decoder: codec, BatchSize: 3, PollInterval: 20 * time.Millisecond,
			NewExporter: func(context.Context) (sdklog.Exporter, error) { return recv, nil }})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.Run(runCtx)
		}()
		return func() {
			cancel()
			<-done
		}
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return cond(), nil
		}); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	cursorAt := func(rev int64) func() bool {
		return func() bool {
			c, ok, err := ReadCursor(ctx, client)
			return err == nil && ok && c.Revision == rev
		}
	}

	// Archived before the export first ran: not exported.
	archiveStates(10, 11)
	stop := run()
	waitFor("the first cursor", cursorAt(11))
	// Two batches of 3 and one of 1, in order.
	archiveStates(12, 13, 14, 15, 16, 17, 18)
	waitFor("the export of 12-18", cursorAt(18))

	recv.setDown(true)
	archiveStates(19, 20)
	waitFor("refusals", func() bool { return recv.refusals() >= 2 })
	// While it retries, the lag says how far behind the export is.
	waitFor("the lag of the refused states", func() bool {
		v, err := testutil.GetGaugeMetricValue(lagRevisions)
		return err == nil && v == 2
	})
	if c, _, _ := ReadCursor(ctx, client); c.Revision != 18 {
		t.Errorf("the cursor moved to %d while the receiver refused", c.Revision)
	}
	recv.setDown(false)
	waitFor("the export after the outage", cursorAt(20))
	stop()

	// Appended past the checkpoint: not exported until the checkpoint
	// passes it.
	if err := a.Append(ctx, []archive.Record{mustRecord(t, codec, 22)}); err != nil {
		t.Fatal(err)
	}
	stop = run()
	defer stop()
	archiveStates(21)
	waitFor("the export after a restart", cursorAt(21))
	archiveStates(22)
	waitFor("the export of 22", cursorAt(22))

	if diff := cmp.Diff(ids(12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22), recv.received()); diff != "" {
		t.Errorf("received (-want +got):\n%s", diff)
	}
	if got := strings.Count(fmt.Sprint(recv.received()), "uid-22/"); got != 1 {
		t.Errorf("uid-22 received %d times", got)
	}
}

func mustRecord(t *testing.T, codec runtime.Codec, rev int64) archive.Record {
	t.Helper()
	event := &core.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e%d", rev), Namespace: "ns", UID: types.UID(fmt.Sprintf("uid-%d", rev))},
		EventTime:  metav1.NewMicroTime(time.Now()), Type: "Normal", Reason: "Tested", Message: "state",
	}
	record, err := archiver.NewRecord(event, codec, rev)
	if err != nil {
		t.Fatal(err)
	}
	return record
}
