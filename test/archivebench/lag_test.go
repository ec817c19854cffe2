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

package archivebench

import (
	"context"
	"debug/buildinfo"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/archive/archiver"
	"github.com/kube-events/events-apiserver/pkg/archive/victorialogs"
	"github.com/kube-events/events-apiserver/test/freeport"
	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

var (
	lagFull     = flag.Bool("lag.full", false, "run TestArchiveLag, the full lag benchmark (make bench-archive-lag)")
	lagRate     = flag.Int("lag.rate", 1000, "creates per second of TestArchiveLag")
	lagRates    = flag.String("lag.rates", "", "comma-separated creates per second of TestArchiveLag, each on a fresh server (instead of -lag.rate): a sweep for the highest rate that holds the lag goal")
	lagDuration = flag.Duration("lag.duration", time.Minute, "how long TestArchiveLag creates at each rate")
	lagClients  = flag.Int("lag.clients", 64, "client goroutines sending the creates")
	lagArchive  = flag.String("lag.archive", "embedded", "the server's archive: embedded, or service (victoria-logs of $VICTORIALOGS_ASSETS, --archive=url)")
	lagFlush    = flag.Duration("lag.service-flush-interval", time.Second, "with -lag.archive=service: the service's -inmemoryDataFlushInterval and the server's --archive-service-flush-interval")
)

// lagBounds are what a lag run is held to: the lag from a create's
// acknowledgement to the checkpoint past it (durably archived), and the
// archiver's append delay (from receiving a state to the engine taking
// it), p99 each.
type lagBounds struct {
	checkpointed, appended time.Duration
}

// lagGoals are issue 25's, archive lag p99 ≤ 1 s while 1,000 creates/s go
// through the API, for the full run. The checkpoint's lag has a floor the
// engine sets: a Sync waits for the engine's flush to disk, which
// VictoriaLogs does on a timer of at least a second with no call to flush
// at once (the embedded archive's Sync: twice its flush interval and a
// second, 3 s; a service's: 4 s at a flush interval of 1 s), and a Sync
// starts every second. The smoke, on CI's shared cores, holds the
// checkpoint's lag to that floor and two seconds (the full run's p99 is
// 4 s), which a change that breaks the shape exceeds (Syncs in series
// again: 6 s), and the appends, which only the archiver bounds, to the
// goal.
var (
	lagGoals       = lagBounds{checkpointed: time.Second, appended: time.Second}
	lagSmokeBounds = lagBounds{checkpointed: 5 * time.Second, appended: time.Second}
)

// lagRateLimits keep EventRateLimit on with limits above the load: the
// default allows 200 creates/s per namespace, and a run writes into one.
const lagRateLimits = `    limits:
    - {type: Reporter, qps: 100000, burst: 100000}
    - {type: Object, qps: 100000, burst: 100000}
    - {type: Namespace, qps: 100000, burst: 100000}
`

// TestArchiveLagSmoke runs the lag benchmark for 8 s at 200 creates/s on
// the embedded archive, as CI does (go test ./test/...): every
// acknowledged create is archived, within lagSmokeBounds.
func TestArchiveLagSmoke(t *testing.T) {
	if *lagFull {
		t.Skip("-lag.full runs TestArchiveLag")
	}
	binary := buildServer(t)
	cfg := LagConfig{Rate: 200, Duration: 8 * time.Second, Clients: 16, Namespace: "lag", CatchUp: time.Minute, Log: testWriter{t}}
	res := runLag(t, binary, "embedded", time.Second, cfg)
	checkLag(t, res, lagSmokeBounds)
}

// TestArchiveLag is the full lag benchmark (make bench-archive-lag): each
// rate of -lag.rates (or -lag.rate) for -lag.duration on a fresh server,
// then the highest rate whose lag p99 held the goal.
func TestArchiveLag(t *testing.T) {
	if !*lagFull {
		t.Skip("the full lag benchmark runs with -lag.full (make bench-archive-lag)")
	}
	rates := []int{*lagRate}
	if *lagRates != "" {
		rates = nil
		for _, r := range strings.Split(*lagRates, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(r))
			if err != nil || n <= 0 {
				t.Fatalf("-lag.rates: %q is not a positive rate", r)
			}
			rates = append(rates, n)
		}
	}
	binary := buildServer(t)
	var results []LagResult
	for _, rate := range rates {
		t.Run(fmt.Sprintf("%d/s", rate), func(t *testing.T) {
			cfg := LagConfig{Rate: rate, Duration: *lagDuration, Clients: *lagClients, Namespace: "lag", CatchUp: 2 * time.Minute, Log: testWriter{t}}
			res := runLag(t, binary, *lagArchive, *lagFlush, cfg)
			results = append(results, res)
			checkLag(t, res, lagGoals)
		})
	}
	t.Logf("%s archive: rate, achieved, create p99, lag p50 / p99 / max, server cores (goal: lag p99 ≤ %s)", *lagArchive, lagGoals.checkpointed)
	held, kept := 0, 0
	for _, r := range results {
		t.Logf("  %5d/s  %5.0f/s  %8s  %s / %s / %s  %.2f", r.Rate, r.AchievedRate, r.CreateP99.Round(100*time.Microsecond),
			r.LagP50.Round(time.Millisecond), r.LagP99.Round(time.Millisecond), r.LagMax.Round(time.Millisecond), r.ServerCPU/r.Elapsed.Seconds())
		if r.AchievedRate < 0.95*float64(r.Rate) || r.Archived != r.Acknowledged {
			continue
		}
		kept = max(kept, r.Rate)
		if r.LagP99 <= lagGoals.checkpointed {
			held = max(held, r.Rate)
		}
	}
	t.Logf("saturation: the highest rate held (95 %% of the pace, every create archived): %s; with lag p99 ≤ %s: %s", rateOrNone(kept), lagGoals.checkpointed, rateOrNone(held))
}

func rateOrNone(rate int) string {
	if rate == 0 {
		return "none"
	}
	return fmt.Sprintf("%d creates/s", rate)
}

// checkLag fails t unless every create was acknowledged, near the rate,
// and archived, within b.
func checkLag(t *testing.T, res LagResult, b lagBounds) {
	t.Helper()
	if len(res.Failed) > 0 {
		t.Errorf("creates failed: %v", res.Failed)
	}
	if res.Acknowledged == 0 {
		t.Fatal("no create acknowledged")
	}
	if res.AchievedRate < 0.9*float64(res.Rate) {
		t.Errorf("%.0f creates/s, below 90%% of %d/s", res.AchievedRate, res.Rate)
	}
	if res.Archived != res.Acknowledged {
		t.Errorf("%d of %d acknowledged creates archived (behind the checkpoint)", res.Archived, res.Acknowledged)
	}
	if res.AppendedRecords < float64(res.Acknowledged) {
		t.Errorf("the archiver appended %.0f states for %d acknowledged creates", res.AppendedRecords, res.Acknowledged)
	}
	if res.LagP99 > b.checkpointed {
		t.Errorf("archive lag (acknowledged to checkpointed) p99 %s, bound %s", res.LagP99, b.checkpointed)
	}
	if res.AppendDelayP99 > b.appended {
		t.Errorf("the archiver's append delay p99 %s, bound %s", res.AppendDelayP99, b.appended)
	}
}

// buildServer builds the server binary into t's temporary directory and
// logs whether it is built as shipped (CGO_ENABLED=0, as make
// bench-archive-lag builds it).
func buildServer(t testing.TB) string {
	t.Helper()
	binary, err := harness.BuildServer(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	cgo := cgoEnabled(info)
	if cgo == "0" {
		t.Log("the server is built with CGO_ENABLED=0, as it ships (pure-Go zstd)")
	} else {
		t.Logf("NOT AS SHIPPED: the server is built with CGO_ENABLED=%q; it ships with CGO_ENABLED=0 (pure-Go zstd)", cgo)
	}
	return binary
}

// runLag starts a server with engine's archive (embedded, or service: a
// victoria-logs with flush as its flush interval) on an etcd of its own,
// waits for the archiver's first checkpoint, runs cfg against it, and then
// reads the archive itself: every acknowledged event must be in it.
func runLag(t *testing.T, binary, engine string, flush time.Duration, cfg LagConfig) LagResult {
	t.Helper()
	ctx := t.Context()
	etcd := harness.StartTestEtcd(t)
	dir := t.TempDir()
	admission, err := framework.WriteRateLimitAdmissionConfig(dir, lagRateLimits)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--etcd-servers=" + etcd.Endpoints[0], "--admission-control-config-file=" + admission}
	url := ""
	switch engine {
	case "embedded":
		args = append(args, "--archive=embedded")
	case "service":
		url = startVictoriaLogs(t, filepath.Join(dir, "victoria-logs"), flush)
		args = append(args, "--archive=url", "--archive-url="+url, "--archive-service-flush-interval="+flush.String())
	default:
		t.Fatalf("-lag.archive=%s: embedded or service", engine)
	}
	server, err := harness.StartServer(ctx, binary, filepath.Join(dir, "server"), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := server.Stop(); err != nil {
			t.Errorf("stopping the server: %v", err)
		}
		if t.Failed() {
			t.Logf("server output (end):\n%s", server.Tail())
		}
	})
	// The archiver, once elected, writes a checkpoint (a relist of the
	// empty store) before it follows the store.
	key := "/registry" + archiver.CheckpointKey
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		resp, err := etcd.Client.Get(ctx, key)
		return err == nil && len(resp.Kvs) == 1, nil
	})
	if err != nil {
		t.Fatalf("no archive checkpoint within a minute of the server's start: %v", err)
	}
	t.Logf("%s archive", engine)
	began := time.Now()
	res, err := RunLag(ctx, LagTarget{Server: server, Etcd: etcd.Client, EtcdURL: etcd.Endpoints[0], StoragePrefix: "/registry"}, cfg)
	if err != nil {
		t.Fatal(err)
	}

	// The archive itself: the embedded one once the server has stopped
	// (one process at a time opens it), the service as it runs.
	var a archive.Archive
	if engine == "embedded" {
		if err := server.Stop(); err != nil {
			t.Fatalf("stopping the server: %v", err)
		}
		a, err = victorialogs.OpenEmbedded(ctx, victorialogs.EmbeddedConfig{Dir: filepath.Join(server.DataDir, "archive")})
	} else {
		a, err = victorialogs.NewHTTP(victorialogs.HTTPConfig{URL: url, FlushInterval: flush})
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	}()
	missing, err := notArchived(ctx, a, cfg.Namespace, began, res.Names)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d acknowledged events not in the archive, for example %v", len(missing), len(res.Names), missing[:min(len(missing), 5)])
	}
	return res
}

// notArchived returns the names of the events of namespace, observed since
// began, that archive a does not hold.
func notArchived(ctx context.Context, a archive.Archive, namespace string, began time.Time, names []string) ([]string, error) {
	held := map[string]bool{}
	q := archive.Query{Namespace: namespace, Since: began.Add(-time.Minute), Until: time.Now().Add(time.Minute), Limit: 1000}
	for {
		page, err := a.Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("reading the archive: %w", err)
		}
		for _, r := range page.Records {
			held[r.Name] = true
		}
		if page.Next == nil {
			break
		}
		q.After = page.Next
	}
	var missing []string
	for _, name := range names {
		if !held[name] {
			missing = append(missing, name)
		}
	}
	return missing, nil
}

// startVictoriaLogs runs the single-node victoria-logs of
// $VICTORIALOGS_ASSETS on dir until the test ends, and returns its URL
// once it is healthy.
func startVictoriaLogs(t *testing.T, dir string, flush time.Duration) string {
	t.Helper()
	assets := os.Getenv("VICTORIALOGS_ASSETS")
	if assets == "" {
		t.Skip("VICTORIALOGS_ASSETS is not set: export VICTORIALOGS_ASSETS=$(hack/victorialogs-assets.sh)")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freeport.Port(t))
	p := &harness.Process{
		Name: "victoria-logs", Path: filepath.Join(assets, "victoria-logs"), LogPath: filepath.Join(dir, "victoria-logs.log"),
		Args: []string{"-loggerLevel=WARN", "-httpListenAddr=" + addr, "-storageDataPath=" + filepath.Join(dir, "data"),
			"-retentionPeriod=30d", "-inmemoryDataFlushInterval=" + flush.String()},
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(10 * time.Second) })
	url := "http://" + addr
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("victoria-logs on %s not healthy: %v; output:\n%s", addr, err, p.Tail())
	}
	return url
}
