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
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-events/events-apiserver/pkg/archive/archiver"
	"github.com/kube-events/events-apiserver/pkg/archive/revision"
	"github.com/kube-events/events-apiserver/test/harness"
)

// LagConfig shapes an archive lag run: creates paced at Rate per second
// for Duration, from Clients goroutines, into Namespace.
type LagConfig struct {
	Rate      int
	Duration  time.Duration
	Clients   int
	Namespace string
	// CatchUp bounds the wait, after the load, for the checkpoint to pass
	// the last acknowledged create.
	CatchUp time.Duration
	// Log receives the report.
	Log io.Writer
}

// LagTarget is the running server a lag run measures.
type LagTarget struct {
	// Server is the events-apiserver process (its /metrics, its memory).
	Server *harness.Server
	// Etcd is a client of the server's etcd, without the storage prefix,
	// and EtcdURL its client URL (its /metrics).
	Etcd    *clientv3.Client
	EtcdURL string
	// StoragePrefix is the server's --etcd-prefix ("/registry"): the
	// checkpoint is at StoragePrefix + archiver.CheckpointKey.
	StoragePrefix string
	// Mark is the key, under StoragePrefix, of the revision mark the lag
	// is measured to: archiver.CheckpointKey when empty, export.CursorKey
	// for the export's lag.
	Mark string
}

// LagResult is what a lag run measured.
type LagResult struct {
	Rate     int
	Duration time.Duration
	// Acknowledged creates, Failed ones (by reason), and Took, the time
	// from the first send to the last answer.
	Acknowledged int
	Failed       map[string]int
	Took         time.Duration
	// AchievedRate is Acknowledged / Took.
	AchievedRate float64
	// CreateP50 and CreateP99 are the creates' latencies, send to answer.
	CreateP50, CreateP99 time.Duration
	// Archived is how many acknowledged creates the checkpoint passed
	// within CatchUp after the load.
	Archived int
	// Names are the acknowledged events' names.
	Names []string
	// Lag is, per archived create, from its acknowledgement to the first
	// moment the checkpoint was seen at or past its resourceVersion.
	LagMin, LagP50, LagP90, LagP99, LagMax time.Duration
	// Checkpoints is the checkpoint writes seen from the first send to the
	// last catch-up, CheckpointEvery their mean interval.
	Checkpoints     int
	CheckpointEvery time.Duration
	// The archiver's metrics over the run: appends by result, states
	// appended, the append delay (receipt to Append returned, per batch)
	// and the archive's Syncs before a checkpoint (the floor of the lag),
	// their means and p99 (interpolated in the histograms' buckets), and
	// the highest lag gauges sampled once a second.
	Appends, AppendErrors, AppendedRecords float64
	AppendDelayMean, AppendDelayP99        time.Duration
	SyncMean, SyncP99                      time.Duration
	MaxLagSeconds, MaxLagRevisions         float64
	// ServerCPU and EtcdCPU are the CPU seconds the server and its etcd
	// spent from the first send to the catch-up (process_cpu_seconds_total),
	// Elapsed that time; RSS the server's resident memory at the end and
	// its peak (VmHWM).
	ServerCPU, EtcdCPU float64
	Elapsed            time.Duration
	RSS, PeakRSS       int64
}

// ack is one acknowledged create.
type ack struct {
	name     string
	revision int64
	sent, at time.Time
}

// observation is a checkpoint write, as the bench saw it.
type observation struct {
	revision int64
	at       time.Time
}

// RunLag creates events through the API at cfg.Rate for cfg.Duration with
// unmodified client-go, watches the archiver's checkpoint in etcd, and
// measures, per acknowledged create, when the checkpoint (written only
// after the archive's Sync: durably archived) first reached its
// resourceVersion, the etcd revision of its write.
func RunLag(ctx context.Context, target LagTarget, cfg LagConfig) (LagResult, error) {
	res := LagResult{Rate: cfg.Rate, Duration: cfg.Duration, Failed: map[string]int{}}
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", args...)
		}
	}
	restConfig := rest.CopyConfig(target.Server.RestConfig)
	restConfig.ContentType = runtime.ContentTypeProtobuf
	restConfig.AcceptContentTypes = runtime.ContentTypeProtobuf
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return res, err
	}

	// The checkpoint's writes, from now on.
	key := target.StoragePrefix + cmp.Or(target.Mark, archiver.CheckpointKey)
	initial, err := target.Etcd.Get(ctx, key)
	if err != nil {
		return res, fmt.Errorf("reading the checkpoint: %w", err)
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var (
		mu           sync.Mutex
		observations []observation
		newest       atomic.Int64
		watchErr     error
	)
	watchDone := make(chan struct{})
	watch := target.Etcd.Watch(watchCtx, key, clientv3.WithRev(initial.Header.Revision+1))
	go func() {
		defer close(watchDone)
		for resp := range watch {
			at := time.Now()
			if err := resp.Err(); err != nil {
				mu.Lock()
				watchErr = err
				mu.Unlock()
				return
			}
			for _, ev := range resp.Events {
				var cp revision.Mark
				if err := json.Unmarshal(ev.Kv.Value, &cp); err != nil {
					continue
				}
				mu.Lock()
				observations = append(observations, observation{revision: cp.Revision, at: at})
				mu.Unlock()
				if cp.Revision > newest.Load() {
					newest.Store(cp.Revision)
				}
			}
		}
	}()

	before, err := target.Server.Metrics(ctx)
	if err != nil {
		return res, err
	}
	etcdBefore, err := harness.ScrapeMetricsURL(ctx, target.EtcdURL+"/metrics")
	if err != nil {
		return res, err
	}
	stopSampling := sampleLagGauges(ctx, target.Server, &res)

	logf("archive lag: %d creates/s for %s from %d clients, namespace %s", cfg.Rate, cfg.Duration, cfg.Clients, cfg.Namespace)
	began := time.Now()
	acks, failed := drive(ctx, client, cfg)
	res.Took = time.Since(began)
	res.Failed = failed
	res.Acknowledged = len(acks)
	res.AchievedRate = float64(len(acks)) / res.Took.Seconds()
	var last int64
	var latencies []time.Duration
	for _, a := range acks {
		res.Names = append(res.Names, a.name)
		last = max(last, a.revision)
		latencies = append(latencies, a.at.Sub(a.sent))
	}
	res.CreateP50, res.CreateP99 = harness.Quantile(latencies, 0.5), harness.Quantile(latencies, 0.99)

	// The checkpoint catches up with the last acknowledged create.
	caughtUp := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, cfg.CatchUp, true, func(context.Context) (bool, error) {
		return newest.Load() >= last, nil
	})
	stopSampling()
	stopWatch()
	<-watchDone
	if watchErr != nil && !errors.Is(watchErr, context.Canceled) {
		return res, fmt.Errorf("watching the checkpoint: %w", watchErr)
	}
	if caughtUp != nil {
		logf("the checkpoint is at %d, not past the last acknowledged create's %d, %s after the load", newest.Load(), last, cfg.CatchUp)
	}

	after, err := target.Server.Metrics(ctx)
	if err != nil {
		return res, err
	}
	etcdAfter, err := harness.ScrapeMetricsURL(ctx, target.EtcdURL+"/metrics")
	if err != nil {
		return res, err
	}
	res.Elapsed = time.Since(began)
	res.ServerCPU = after.Value(cpuMetric, nil) - before.Value(cpuMetric, nil)
	res.EtcdCPU = etcdAfter.Value(cpuMetric, nil) - etcdBefore.Value(cpuMetric, nil)
	delta := func(name string, labels map[string]string) float64 {
		return after.Value(name, labels) - before.Value(name, labels)
	}
	res.Appends = delta("events_apiserver_archive_appends_total", map[string]string{"result": "success"})
	res.AppendErrors = delta("events_apiserver_archive_appends_total", map[string]string{"result": "error"})
	res.AppendedRecords = delta("events_apiserver_archive_appended_records_total", nil)
	const appendDelay = "events_apiserver_archive_append_delay_seconds"
	delay := harness.HistogramSince(before.Histogram(appendDelay, nil), after.Histogram(appendDelay, nil))
	if delay.GetAggregatedSampleCount() > 0 {
		res.AppendDelayMean, res.AppendDelayP99 = seconds(delay.Average()), seconds(delay.Quantile(0.99))
	}
	const syncDuration = "events_apiserver_archive_sync_duration_seconds"
	syncs := harness.HistogramSince(before.Histogram(syncDuration, nil), after.Histogram(syncDuration, nil))
	if syncs.GetAggregatedSampleCount() > 0 {
		res.SyncMean, res.SyncP99 = seconds(syncs.Average()), seconds(syncs.Quantile(0.99))
	}
	if res.RSS, res.PeakRSS, err = target.Server.RSS(); err != nil {
		return res, err
	}

	mu.Lock()
	defer mu.Unlock()
	lags := archivedLags(acks, observations)
	res.Archived = len(lags)
	if len(lags) > 0 {
		res.LagMin, res.LagP50, res.LagP90, res.LagP99, res.LagMax = lags[0], harness.Quantile(lags, 0.5), harness.Quantile(lags, 0.9), harness.Quantile(lags, 0.99), lags[len(lags)-1]
	}
	var inRun []observation
	for _, o := range observations {
		if !o.at.Before(began) {
			inRun = append(inRun, o)
		}
	}
	res.Checkpoints = len(inRun)
	if len(inRun) > 1 {
		res.CheckpointEvery = inRun[len(inRun)-1].at.Sub(inRun[0].at) / time.Duration(len(inRun)-1)
	}
	res.report(logf)
	return res, nil
}

// archivedLags is, for every create some observation reached, the time
// from its acknowledgement to the first observation at or past its
// revision, sorted. A checkpoint seen before the acknowledgement arrived
// counts as no lag.
func archivedLags(acks []ack, observations []observation) []time.Duration {
	// reached[i] is the highest revision of observations[:i+1]: the first
	// i where it reaches a revision is when that revision was archived.
	reached := make([]int64, len(observations))
	var high int64
	for i, o := range observations {
		high = max(high, o.revision)
		reached[i] = high
	}
	var lags []time.Duration
	for _, a := range acks {
		i := sort.Search(len(reached), func(i int) bool { return reached[i] >= a.revision })
		if i == len(reached) {
			continue
		}
		lags = append(lags, max(observations[i].at.Sub(a.at), 0))
	}
	slices.Sort(lags)
	return lags
}

// drive sends cfg.Rate creates per second for cfg.Duration from
// cfg.Clients goroutines: the i-th create is due at i/Rate; a create due
// while every client is busy goes as soon as one is free, so the run
// falls short of the rate only when the clients cannot keep up.
func drive(ctx context.Context, client kubernetes.Interface, cfg LagConfig) ([]ack, map[string]int) {
	total := int(cfg.Duration.Seconds() * float64(cfg.Rate))
	due := make(chan int)
	var (
		mu     sync.Mutex
		acks   = make([]ack, 0, total)
		failed = map[string]int{}
		wg     sync.WaitGroup
	)
	for range cfg.Clients {
		wg.Go(func() {
			for i := range due {
				sent := time.Now()
				created, err := client.EventsV1().Events(cfg.Namespace).Create(ctx, lagEvent(cfg.Namespace, i), metav1.CreateOptions{})
				at := time.Now()
				var rv int64
				if err == nil {
					rv, err = strconv.ParseInt(created.ResourceVersion, 10, 64)
				}
				mu.Lock()
				if err != nil {
					failed[string(apierrors.ReasonForError(err))+": "+truncate(err.Error(), 80)]++
				} else {
					acks = append(acks, ack{name: created.Name, revision: rv, sent: sent, at: at})
				}
				mu.Unlock()
			}
		})
	}
	interval := time.Second / time.Duration(cfg.Rate)
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
pace:
	for i := range total {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				break pace
			}
		}
		select {
		case due <- i:
		case <-ctx.Done():
			break pace
		}
	}
	close(due)
	wg.Wait()
	return acks, failed
}

// lagEvent is the i-th event of a run: each about an object of its own,
// so that no two are of one series, which the server would fold.
func lagEvent(namespace string, i int) *eventsv1.Event {
	name := fmt.Sprintf("lag-%07d", i)
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		EventTime:  metav1.NowMicro(), Reason: "Started", Type: corev1.EventTypeNormal, Action: "Start",
		Note:                "Started container app",
		ReportingController: "kubelet", ReportingInstance: fmt.Sprintf("node-%03d", i%100),
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: "pod-" + name, APIVersion: "v1",
			FieldPath: "spec.containers{app}"},
	}
}

// sampleLagGauges records the highest archiver lag gauges, read once a
// second, in res until the returned function is called.
func sampleLagGauges(ctx context.Context, server *harness.Server, res *LagResult) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = wait.PollUntilContextCancel(ctx, time.Second, false, func(ctx context.Context) (bool, error) {
			m, err := server.Metrics(ctx)
			if err != nil {
				return false, nil
			}
			res.MaxLagSeconds = max(res.MaxLagSeconds, m.Value("events_apiserver_archive_lag_seconds", nil))
			res.MaxLagRevisions = max(res.MaxLagRevisions, m.Value("events_apiserver_archive_lag_revisions", nil))
			return false, nil
		})
	}()
	return func() { cancel(); <-done }
}

func (r *LagResult) report(logf func(string, ...any)) {
	const mib = 1 << 20
	logf("driven:      %d creates acknowledged in %s: %.0f/s of %d/s (%.1f%% short), failed %v; create p50 %s, p99 %s",
		r.Acknowledged, r.Took.Round(10*time.Millisecond), r.AchievedRate, r.Rate, max(0, 100*(1-r.AchievedRate/float64(r.Rate))),
		r.Failed, r.CreateP50.Round(100*time.Microsecond), r.CreateP99.Round(100*time.Microsecond))
	logf("archived:    %d of %d acknowledged creates behind the checkpoint; %d checkpoints, one every %s; archive Sync mean %s, p99 %s",
		r.Archived, r.Acknowledged, r.Checkpoints, r.CheckpointEvery.Round(time.Millisecond), r.SyncMean, r.SyncP99)
	logf("lag:         acknowledged to checkpointed: min %s, p50 %s, p90 %s, p99 %s, max %s",
		r.LagMin.Round(time.Millisecond), r.LagP50.Round(time.Millisecond), r.LagP90.Round(time.Millisecond),
		r.LagP99.Round(time.Millisecond), r.LagMax.Round(time.Millisecond))
	perAppend := 0.0
	if r.Appends > 0 {
		perAppend = r.AppendedRecords / r.Appends
	}
	logf("archiver:    %.0f appends (%.0f failed), %.0f states, %.0f per append; append delay mean %s, p99 %s; lag gauges at most %.2fs, %.0f revisions",
		r.Appends, r.AppendErrors, r.AppendedRecords, perAppend, r.AppendDelayMean, r.AppendDelayP99, r.MaxLagSeconds, r.MaxLagRevisions)
	perCreate := 0.0
	if r.Acknowledged > 0 {
		perCreate = r.ServerCPU * 1000 / float64(r.Acknowledged)
	}
	logf("server:      %.2f cores (%.2f ms per create), etcd %.2f cores, over %s; RSS %.0f MiB, peak %.0f MiB",
		r.ServerCPU/r.Elapsed.Seconds(), perCreate, r.EtcdCPU/r.Elapsed.Seconds(), r.Elapsed.Round(100*time.Millisecond),
		float64(r.RSS)/mib, float64(r.PeakRSS)/mib)
}

// cpuMetric is a process's CPU time, served by Go programs.
const cpuMetric = "process_cpu_seconds_total"

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
