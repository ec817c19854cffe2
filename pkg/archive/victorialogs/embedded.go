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
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/VictoriaLogs/lib/logstorage"

	"github.com/kube-events/events-apiserver/pkg/archive"
)

// DefaultCacheBytes bounds the engine's caches, process-wide (LibraryFlags).
const DefaultCacheBytes = 64 << 20

// Defaults of EmbeddedConfig.
const (
	DefaultRetention     = 30 * 24 * time.Hour
	DefaultFlushInterval = time.Second
	DefaultMinFreeBytes  = 64 << 20
)

// EmbeddedConfig configures an archive kept by VictoriaLogs' storage
// library inside the server.
type EmbeddedConfig struct {
	// Dir is the storage directory; one process at a time opens it (the
	// engine locks it).
	Dir string
	// Retention is how long records are kept, by Record.Time (the engine
	// drops whole days; queries never see older records). At least a
	// day; DefaultRetention when zero.
	Retention time.Duration
	// FlushInterval is how often the engine writes appended records from
	// memory to disk (at least a second). DefaultFlushInterval when zero.
	FlushInterval time.Duration
	// MinFreeBytes is the free space below which the engine refuses
	// appends (Append fails with archive.ErrUnavailable) rather than fill
	// the disk. DefaultMinFreeBytes when zero.
	MinFreeBytes int64
}

// Embedded is an archive kept in the server's own process by VictoriaLogs'
// storage library (lib/logstorage).
type Embedded struct {
	cfg     EmbeddedConfig
	storage *logstorage.Storage

	appended appendLog

	mu     sync.Mutex
	closed bool
}

var _ archive.Archive = &Embedded{}

// OpenEmbedded opens (creating it if needed) the archive in cfg.Dir. The
// process has set the library's process-wide settings first (LibraryFlags;
// see the package documentation).
func OpenEmbedded(ctx context.Context, cfg EmbeddedConfig) (e *Embedded, err error) {
	if cfg.Dir == "" {
		return nil, errors.New("the embedded archive needs a directory")
	}
	if cfg.Retention == 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Retention < 24*time.Hour {
		return nil, fmt.Errorf("archive retention %s is shorter than a day, the engine's unit", cfg.Retention)
	}
	if cfg.FlushInterval == 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	cfg.FlushInterval = max(cfg.FlushInterval, time.Second)
	if cfg.MinFreeBytes == 0 {
		cfg.MinFreeBytes = DefaultMinFreeBytes
	}
	if !flag.Parsed() {
		return nil, errLibraryFlagsUnparsed
	}
	defer recoverPanic(&err, "opening the archive in "+cfg.Dir)
	storage := logstorage.MustOpenStorage(cfg.Dir, &logstorage.StorageConfig{
		Retention:             cfg.Retention,
		FlushInterval:         cfg.FlushInterval,
		MinFreeDiskSpaceBytes: cfg.MinFreeBytes,
		// Records as old as the retention may still arrive (an archiver
		// catching up); the default would refuse what is older than a day.
		MaxBackfillAge: cfg.Retention,
	})
	return &Embedded{cfg: cfg, storage: storage}, nil
}

// recoverPanic turns a panic of the library (it panics on I/O errors it
// meets in the calling goroutine) into *err.
func recoverPanic(err *error, what string) {
	if p := recover(); p != nil {
		*err = archive.Unavailable("%s: %v", what, p)
	}
}

// Append hands records to the engine, which makes them visible to Query
// within a second or so; Sync makes them visible and durable.
func (e *Embedded) Append(ctx context.Context, records []archive.Record) (err error) {
	if len(records) == 0 {
		return nil
	}
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return archive.Unavailable("the archive is closed")
	}
	if e.storage.IsReadOnly() {
		return archive.Unavailable("less than %d bytes free in %s", e.cfg.MinFreeBytes, e.cfg.Dir)
	}
	defer recoverPanic(&err, "appending to the archive")
	lr := logstorage.GetLogRows(streamFields, nil, nil, nil, "")
	defer logstorage.PutLogRows(lr)
	var cols []field
	var lfields []logstorage.Field
	for i := range records {
		r := &records[i]
		if cols, err = encodeRecord(cols[:0], r); err != nil {
			return err
		}
		lfields = lfields[:0]
		for _, c := range cols {
			lfields = append(lfields, logstorage.Field{Name: c.Name, Value: c.Value})
		}
		lr.MustAdd(logstorage.TenantID{}, r.Time.UnixNano(), lfields, -1)
		if lr.NeedFlush() {
			e.storage.MustAddRows(lr)
			lr.ResetKeepSettings()
		}
	}
	e.storage.MustAddRows(lr)
	return e.appended.record(records, e.cfg.Retention)
}

// Sync makes the records appended since the last Sync visible to Query and
// writes them to disk at once (persist), then checks (waitOnDisk) that
// they are visible and that none of their blocks is in memory only.
func (e *Embedded) Sync(ctx context.Context) error {
	return e.appended.sync(ctx, e, e.persist, 2*e.cfg.FlushInterval+time.Minute)
}

// persist makes the library's buffered rows searchable parts and writes the
// in-memory parts of the partitions of days to files. The library writes
// them on its own only when they are FlushInterval old, on a ticker of
// FlushInterval; its one exported call that writes them at once is a
// partition's snapshot (it flushes, then hard-links the files), which
// persist deletes again right away.
func (e *Embedded) persist(_ context.Context, days []string) (err error) {
	defer recoverPanic(&err, "writing the archive to disk")
	e.storage.DebugFlush()
	for _, day := range days {
		for _, snapshot := range e.storage.PartitionSnapshotMustCreate(day) {
			if err := e.storage.PartitionSnapshotDelete(snapshot); err != nil {
				return archive.Unavailable("deleting the archive's snapshot %s: %v", snapshot, err)
			}
		}
	}
	return nil
}

// Query answers q; see archive.Archive.
func (e *Embedded) Query(ctx context.Context, q archive.Query) (archive.Page, error) {
	return queryPage(ctx, e, q, e.cfg.Retention, time.Now())
}

// Summarize answers q; see archive.Archive.
func (e *Embedded) Summarize(ctx context.Context, q archive.SummaryQuery) ([]archive.SummaryRow, error) {
	return summarize(ctx, e, q, e.cfg.Retention, time.Now())
}

func (e *Embedded) run(ctx context.Context, query string, fn func(row map[string]string) error) (err error) {
	q, err := logstorage.ParseQueryAtTimestamp(query, time.Now().UnixNano())
	if err != nil {
		return fmt.Errorf("archive query %q: %w", query, err)
	}
	defer recoverPanic(&err, "querying the archive")
	var stats logstorage.QueryStats
	qctx := logstorage.NewQueryContext(ctx, &stats, []logstorage.TenantID{{}}, q, false, nil)
	var mu sync.Mutex
	var fnErr error
	row := map[string]string{}
	write := func(_ uint, db *logstorage.DataBlock) {
		cols := db.GetColumns(false)
		mu.Lock()
		defer mu.Unlock()
		for i := range db.RowsCount() {
			if fnErr != nil {
				return
			}
			clear(row)
			for _, c := range cols {
				if v := c.Values[i]; v != "" {
					row[strings.Clone(c.Name)] = strings.Clone(v)
				}
			}
			fnErr = fn(row)
		}
	}
	began := time.Now()
	if err := e.storage.RunQuery(qctx, write); err != nil {
		return fmt.Errorf("archive query %q: %w", query, err)
	}
	traceQuery(ctx, &stats, time.Since(began))
	return fnErr
}

// Stats reports the rows the engine holds and the size of its directory.
func (e *Embedded) Stats(context.Context) (archive.Stats, error) {
	ss := e.EngineStats()
	var size int64
	err := filepath.WalkDir(e.cfg.Dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			// Parts come and go as the engine merges them.
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			size += info.Size()
		}
		return nil
	})
	if err != nil {
		return archive.Stats{}, err
	}
	return archive.Stats{Rows: int64(ss.RowsCount()), DiskBytes: size}, nil
}

// EngineStats returns the engine's own counters, those VictoriaLogs
// exports as its vl_* metrics: its parts and their rows and sizes, the
// merges it has made and has in flight, the rows not yet searchable
// (PendingRows) or not yet on disk (in-memory parts).
func (e *Embedded) EngineStats() logstorage.StorageStats {
	var ss logstorage.StorageStats
	e.storage.UpdateStats(&ss)
	return ss
}

// Close writes what the engine holds in memory to disk and releases the
// directory.
func (e *Embedded) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	e.storage.MustClose()
	return nil
}

// ForceMerge merges each day's parts into one, as the engine does by
// itself over time: what a day costs on disk once it is settled.
func (e *Embedded) ForceMerge() {
	e.storage.MustForceMerge("")
}
