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
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/archive/archiver"
	"github.com/kube-events/events-apiserver/pkg/controller/health"
	"github.com/kube-events/events-apiserver/pkg/storedevent"
)

// Defaults of Config.
const (
	// DefaultBatchSize is the most states one export request carries, and
	// so the most sent again after an interruption.
	DefaultBatchSize = 500
	// DefaultPollInterval is how often a caught-up export reads the
	// archive checkpoint, which the archiver moves every 200ms.
	DefaultPollInterval = 500 * time.Millisecond
)

// requestTimeout bounds every etcd request.
const requestTimeout = 10 * time.Second

// scopeName is the instrumentation scope of the exported records.
const scopeName = "github.com/kube-events/events-apiserver/pkg/archive/export"

// Config configures an Exporter.
type Config struct {
	// Archive is what the states are read from.
	Archive archive.Scanner
	// NewClient returns a client of the store's etcd whose keys are under
	// the storage prefix (the server's NewEtcdClient, whose writes under
	// the election are fenced); Run closes it when it returns.
	NewClient func() (*clientv3.Client, error)
	// Decoder decodes an archived object into the internal Event: the
	// store's codec.
	Decoder runtime.Decoder
	// NewExporter returns the OTLP exporter (NewOTLPExporter); Run shuts it
	// down when it returns.
	NewExporter func(ctx context.Context) (sdklog.Exporter, error)
	// Resource describes the exporting server on every record; the SDK's
	// default resource if nil.
	Resource *resource.Resource
	// Selection returns the current selection, read per batch, so that a
	// reloaded policy applies from the next batch; nil, or a nil result,
	// exports every state.
	Selection func(ctx context.Context) *Selection
	// BatchSize and PollInterval; defaults if zero.
	BatchSize    int
	PollInterval time.Duration
	// Clock is the real clock if nil.
	Clock clock.WithTicker
}

// Exporter is the controller that exports the archive.
type Exporter struct {
	cfg    Config
	health *health.Tracker
}

// New returns an Exporter for cfg.
func New(cfg Config) (*Exporter, error) {
	if cfg.Archive == nil || cfg.NewClient == nil || cfg.Decoder == nil || cfg.NewExporter == nil {
		return nil, errors.New("export: Archive, NewClient, Decoder and NewExporter are required")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	registerMetrics()
	e := &Exporter{cfg: cfg}
	e.health = health.New(e.Name(), cfg.Clock)
	return e, nil
}

// Name names the controller in logs and health checks.
func (e *Exporter) Name() string { return "otlp-export" }

// Health is the export's report: a receiver, an archive or an etcd that
// fails is a dependency outage, which it waits out retrying.
func (e *Exporter) Health() *health.Tracker { return e.health }

// Run exports until ctx is done: it connects, follows the archive from the
// cursor, and starts over after any error, with a backoff.
func (e *Exporter) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	defer func() {
		lagRevisions.Set(0)
		lagSeconds.Set(0)
	}()
	var client *clientv3.Client
	var exporter sdklog.Exporter
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		if client == nil {
			if client, err = e.cfg.NewClient(); err != nil {
				e.health.Failed(ctx, err, time.Second)
				logger.Error(err, "Connecting to etcd for the export")
				return false, nil
			}
		}
		if exporter, err = e.cfg.NewExporter(ctx); err != nil {
			e.health.Failed(ctx, err, time.Second)
			logger.Error(err, "Creating the OTLP exporter")
			return false, nil
		}
		return true, nil
	})
	if client != nil {
		defer func() { _ = client.Close() }()
	}
	if err != nil {
		return // ctx ended
	}
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
		defer cancel()
		if err := exporter.Shutdown(shutdownCtx); err != nil {
			logger.V(2).Info("Shutting the OTLP exporter down failed", "err", err)
		}
	}()
	enc := newEncoder(e.cfg.Resource)
	defer enc.shutdown()

	newBackoff := func() wait.Backoff {
		return wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 10, Cap: 30 * time.Second}
	}
	backoff := newBackoff()
	for ctx.Err() == nil {
		moved, err := e.follow(ctx, client, exporter, enc)
		if moved {
			backoff = newBackoff()
		}
		if ctx.Err() != nil {
			return
		}
		delay := backoff.Step()
		e.health.Failed(ctx, err, delay)
		logger.Error(err, "Export interrupted; resuming from the cursor", "retryIn", delay)
		select {
		case <-ctx.Done():
		case <-e.cfg.Clock.After(delay):
		}
	}
}

// follow exports from the cursor until ctx ends or an error, and tells
// whether it moved the cursor.
func (e *Exporter) follow(ctx context.Context, client *clientv3.Client, exporter sdklog.Exporter, enc *encoder) (moved bool, err error) {
	logger := klog.FromContext(ctx)
	cursor, err := e.start(ctx, client)
	if err != nil {
		return false, err
	}
	rates := (*rates)(nil)
	var rateQPS float64
	var rateBurst int
	caughtUp := e.cfg.Clock.Now()
	ticker := e.cfg.Clock.NewTicker(e.cfg.PollInterval)
	defer ticker.Stop()
	for {
		readCtx, cancel := context.WithTimeout(ctx, requestTimeout)
		cp, _, err := archiver.ReadCheckpoint(readCtx, client)
		cancel()
		if err != nil {
			return moved, err
		}
		through := cp.Revision
		now := e.cfg.Clock.Now()
		if cursor >= through {
			caughtUp = now
			e.recordLag(cursor, through, 0)
			e.health.Idle()
			select {
			case <-ctx.Done():
				return moved, ctx.Err()
			case <-ticker.C():
			}
			continue
		}
		e.recordLag(cursor, through, now.Sub(caughtUp))
		e.health.Busy()

		records, err := e.cfg.Archive.Scan(ctx, cursor, through, e.cfg.BatchSize)
		if err != nil {
			return moved, fmt.Errorf("reading the archive: %w", err)
		}
		// An empty answer: nothing left up to the checkpoint. Else the
		// answer ends where its limit cut it, and the next read starts
		// there.
		next := through
		if len(records) > 0 {
			if next, err = strconv.ParseInt(records[len(records)-1].ResourceVersion, 10, 64); err != nil {
				return moved, fmt.Errorf("archived state %s: resourceVersion %q: %w", records[len(records)-1].UID, records[len(records)-1].ResourceVersion, err)
			}
		}

		selection := e.selection(ctx)
		if rates == nil || selection.NamespaceQPS != rateQPS || selection.NamespaceBurst != rateBurst {
			rates, rateQPS, rateBurst = newRates(selection.NamespaceQPS, selection.NamespaceBurst), selection.NamespaceQPS, selection.NamespaceBurst
		}
		batch := e.encode(ctx, enc, records, selection, rates)
		if len(batch) > 0 {
			// While the receiver fails, the lag goes on growing: what a
			// stalled export is alerted on.
			onRetry := func() {
				readCtx, cancel := context.WithTimeout(ctx, requestTimeout)
				defer cancel()
				if cp, _, err := archiver.ReadCheckpoint(readCtx, client); err == nil {
					e.recordLag(cursor, cp.Revision, e.cfg.Clock.Since(caughtUp))
				}
			}
			if err := e.send(ctx, exporter, batch, onRetry); err != nil {
				return moved, err
			}
		}
		writeCtx, cancel := context.WithTimeout(ctx, requestTimeout)
		err = cursors.Write(writeCtx, client, Cursor{Revision: next, Time: e.cfg.Clock.Now()})
		cancel()
		if err != nil {
			return moved, err
		}
		cursor, moved = next, true
		cursorRevision.Set(float64(cursor))
		e.health.Progress(ctx)
		logger.V(4).Info("Exported", "states", len(batch), "read", len(records), "cursor", cursor)
	}
}

// start returns the cursor, writing it first if there is none: at the
// archive checkpoint, so that an export turned on sends what is archived
// from then on, not the whole retention.
func (e *Exporter) start(ctx context.Context, client *clientv3.Client) (int64, error) {
	readCtx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	cursor, ok, err := ReadCursor(readCtx, client)
	if err != nil {
		return 0, err
	}
	if ok {
		klog.FromContext(ctx).Info("Exporting from the cursor", "revision", cursor.Revision)
		cursorRevision.Set(float64(cursor.Revision))
		return cursor.Revision, nil
	}
	cp, _, err := archiver.ReadCheckpoint(readCtx, client)
	if err != nil {
		return 0, err
	}
	if err := cursors.Write(readCtx, client, Cursor{Revision: cp.Revision, Time: e.cfg.Clock.Now()}); err != nil {
		return 0, err
	}
	klog.FromContext(ctx).Info("Exporting from the archive checkpoint", "revision", cp.Revision)
	cursorRevision.Set(float64(cp.Revision))
	return cp.Revision, nil
}

// selection is the current selection; an empty one takes every state.
func (e *Exporter) selection(ctx context.Context) *Selection {
	if e.cfg.Selection != nil {
		if s := e.cfg.Selection(ctx); s != nil {
			return s
		}
	}
	return &Selection{}
}

// encode maps the states selection and rates take to log records.
func (e *Exporter) encode(ctx context.Context, enc *encoder, records []archive.Record, selection *Selection, rates *rates) []sdklog.Record {
	logger := klog.FromContext(ctx)
	batch := make([]sdklog.Record, 0, len(records))
	for _, rec := range records {
		event, err := storedevent.Decode(e.cfg.Decoder, rec.Object)
		if err != nil {
			dropped.WithLabelValues(reasonUndecoded).Inc()
			logger.Error(err, "Skipping an archived state the export cannot decode", "uid", rec.UID, "resourceVersion", rec.ResourceVersion)
			continue
		}
		event.Name, event.Namespace, event.UID, event.ResourceVersion = rec.Name, rec.Namespace, types.UID(rec.UID), rec.ResourceVersion
		if !selection.selects(event) {
			dropped.WithLabelValues(reasonSelection).Inc()
			continue
		}
		if !rates.allow(event.Namespace, rec.Time) {
			dropped.WithLabelValues(reasonRate).Inc()
			continue
		}
		batch = append(batch, enc.encode(newRecord(ctx, event, rec.ResourceVersion)))
	}
	return batch
}

// send exports batch, retrying with a backoff until the receiver takes it
// or ctx ends: states are never skipped for a receiver that fails. It
// calls onRetry before each retry.
func (e *Exporter) send(ctx context.Context, exporter sdklog.Exporter, batch []sdklog.Record, onRetry func()) error {
	logger := klog.FromContext(ctx)
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 20, Cap: 30 * time.Second}
	for {
		err := exporter.Export(ctx, batch)
		if err == nil {
			requests.WithLabelValues(resultSuccess).Inc()
			exportedRecords.Add(float64(len(batch)))
			return nil
		}
		requests.WithLabelValues(resultError).Inc()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		delay := backoff.Step()
		e.health.Failed(ctx, fmt.Errorf("exporting to the OTLP receiver: %w", err), delay)
		logger.Error(err, "Exporting to the OTLP receiver failed; retrying", "records", len(batch), "retryIn", delay)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-e.cfg.Clock.After(delay):
		}
		retries.Inc()
		onRetry()
	}
}

// recordLag sets the lag gauges.
func (e *Exporter) recordLag(cursor, through int64, behind time.Duration) {
	lagRevisions.Set(float64(max(through-cursor, 0)))
	lagSeconds.Set(behind.Seconds())
}

// encoder turns log API records into the SDK's, with the resource, scope,
// trace and span the SDK's logger gives them: a logger whose one
// processor keeps what is emitted, for the export loop to send itself.
type encoder struct {
	provider *sdklog.LoggerProvider
	logger   log.Logger
	keep     *keeper
}

func newEncoder(res *resource.Resource) *encoder {
	keep := &keeper{}
	opts := []sdklog.LoggerProviderOption{sdklog.WithProcessor(keep)}
	if res != nil {
		opts = append(opts, sdklog.WithResource(res))
	}
	provider := sdklog.NewLoggerProvider(opts...)
	return &encoder{provider: provider, logger: provider.Logger(scopeName), keep: keep}
}

// encode returns the SDK record of r, with the trace of ctx.
func (enc *encoder) encode(ctx context.Context, r log.Record) sdklog.Record {
	enc.keep.mu.Lock()
	defer enc.keep.mu.Unlock()
	enc.keep.kept = enc.keep.kept[:0]
	enc.keep.emitting = true
	enc.logger.Emit(ctx, r)
	enc.keep.emitting = false
	return enc.keep.kept[0]
}

func (enc *encoder) shutdown() { _ = enc.provider.Shutdown(context.Background()) }

// keeper is the encoder's processor.
type keeper struct {
	mu       sync.Mutex
	emitting bool
	kept     []sdklog.Record
}

func (k *keeper) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }

func (k *keeper) OnEmit(_ context.Context, r *sdklog.Record) error {
	// Called within encode, which holds k.mu.
	k.kept = append(k.kept, r.Clone())
	return nil
}

func (k *keeper) Shutdown(context.Context) error   { return nil }
func (k *keeper) ForceFlush(context.Context) error { return nil }
