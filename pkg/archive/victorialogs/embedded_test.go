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

package victorialogs

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/VictoriaMetrics/VictoriaLogs/lib/logstorage"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/archive/archivetest"
)

func TestEmbedded(t *testing.T) {
	archivetest.Run(t, func(t *testing.T) archivetest.Engine {
		_, ctx := ktesting.NewTestContext(t)
		retention := 48 * time.Hour
		a, err := OpenEmbedded(ctx, EmbeddedConfig{Dir: t.TempDir(), Retention: retention})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := a.Close(); err != nil {
				t.Error(err)
			}
		})
		return archivetest.Engine{Archive: a, Retention: retention}
	}, archivetest.Options{Delete: deleteEmbedded})
}

// deleteEmbedded runs a delete task of uid's rows on the embedded engine
// and waits until it is done.
func deleteEmbedded(t *testing.T, e archivetest.Engine, uid string) {
	t.Helper()
	storage := e.Archive.(*Embedded).storage
	f, err := logstorage.ParseFilter(colUID + ":=" + strconv.Quote(uid))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := storage.DeleteRunTask(ctx, "delete-"+uid, time.Now().UnixNano(), []logstorage.TenantID{{}}, f); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		active, err := storage.DeleteActiveTasks(ctx)
		return len(active) == 0, err
	})
	if err != nil {
		t.Fatalf("the delete task of %s did not end: %v", uid, err)
	}
}

// TestEmbeddedQueryTrace checks that a traced page reports each of its
// queries with its phase and the engine's statistics, and that
// EngineStats sees the synced rows on disk.
func TestEmbeddedQueryTrace(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	a, err := OpenEmbedded(ctx, EmbeddedConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	now := time.Now()
	var records []archive.Record
	for i := range 3 {
		records = append(records, archive.Record{
			UID: "uid-" + strconv.Itoa(i), Namespace: "ns", Name: "n" + strconv.Itoa(i), ResourceVersion: strconv.Itoa(10 + i),
			Time: now.Add(-time.Duration(i) * time.Minute), Object: []byte("{}"),
		})
	}
	if err := a.Append(ctx, records); err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := a.EngineStats(); got.RowsCount() != 3 || got.InmemoryParts != 0 {
		t.Errorf("after Sync the engine holds %d rows, %d parts in memory; want 3 rows, none in memory", got.RowsCount(), got.InmemoryParts)
	}

	// The phases in the order they ran, each with the rows its queries
	// found: the find queries (a slice of time each) the three rows, one
	// check query their UIDs' newest states, one fetch query the rows.
	type phaseRows struct {
		Phase     QueryPhase
		RowsFound uint64
	}
	var got []phaseRows
	traceCtx := WithQueryTrace(ctx, func(phase QueryPhase, stats *logstorage.QueryStats, took time.Duration) {
		if took <= 0 {
			t.Errorf("%s query took %s", phase, took)
		}
		if len(got) == 0 || got[len(got)-1].Phase != phase {
			got = append(got, phaseRows{Phase: phase})
		}
		got[len(got)-1].RowsFound += stats.RowsFound
	})
	page, err := a.Query(traceCtx, archive.Query{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Records) != 3 {
		t.Errorf("%d records, want 3", len(page.Records))
	}
	want := []phaseRows{{PhaseFind, 3}, {PhaseCheck, 3}, {PhaseFetch, 3}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("traced phases (-want +got):\n%s", diff)
	}

	got = nil
	if _, err := a.Query(ctx, archive.Query{Limit: 10}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("an untraced query reported %d queries", len(got))
	}
}
