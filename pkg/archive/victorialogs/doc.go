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

// Package victorialogs keeps the archive in VictoriaLogs
// (github.com/VictoriaMetrics/VictoriaLogs v1.52.1): Embedded runs its
// storage library (lib/logstorage) inside the server, HTTP talks to a
// VictoriaLogs service (the single-node victoria-logs, or a cluster's
// vlinsert and vlselect). Both store the same rows and send the same
// LogsQL, so they answer alike.
//
// # Rows
//
// Each stored state of an event is one row: _time is Record.Time (to the
// nanosecond), the stream is the namespace (ns), and the columns are uid,
// name, rv (the resourceVersion, a number), _msg (the protobuf object in
// hexadecimal: one token for the bloom filters, byte-aligned for zstd;
// the archiver leaves the name, namespace and UID out of it, see
// archive.Record.Object) and
// f.<field> for each selectable field (metadata.name and
// metadata.namespace are name and ns), and for the summaries occ (the
// occurrences, above 1 only) and first (the first observation in Unix
// nanoseconds, when it is not _time). A page is read in three steps:
// the order keys (_time, uid, rv, ns) of the rows matching the query,
// newest first, in time slices growing from an hour; one query for the
// greatest rv of each UID read, among all its rows in the window, so that
// a UID's older states and states that no longer match are dropped; and
// the whole rows of the page. A summary is one query: the rows that are
// their UID's newest state (by uid and rv, from a subquery) and match,
// counted by stats (summary.go).
//
// # What embedding the library does to the process
//
// Importing lib/logstorage (it pulls VictoriaMetrics' lib/...) at v1.52.1:
//
//   - Flags: its packages register 20 flags on the standard library's
//     flag.CommandLine at init (-loggerLevel, -memory.allowedPercent,
//     -fs.disableMmap, -version, ...). The server parses pflag sets that
//     cobra and component-base build (cli.Run, globalflag) and never adds
//     flag.CommandLine to them, so its --help and flags do not change.
//     lib/memory panics unless flag.CommandLine is parsed: the server's
//     main sets the values below and parses it with no arguments
//     (cmd/events-apiserver/app.SetArchiveLibraryFlags) before anything
//     opens; OpenEmbedded answers an error where it is not parsed. A test
//     binary parses it itself and keeps the library's defaults.
//   - GOMAXPROCS: lib/cgroup's init sets GOMAXPROCS to the floor of the
//     cgroup CPU quota, unless the GOMAXPROCS variable is set. That also
//     turns off the Go runtime's own tracking of the quota (Go 1.25+). This
//     package's init hands it back (runtime.SetDefaultGOMAXPROCS) unless
//     GOMAXPROCS is set.
//   - Memory: the library sizes its caches from -memory.allowedPercent,
//     60 % of the machine's (or cgroup's) memory by default, read once per
//     process. The server sets -memory.allowedBytes to DefaultCacheBytes
//     (64 MiB) instead (LibraryFlags).
//   - Logs: lib/logger writes to stderr in its own format (a timestamp,
//     level, caller and message per line); the server sets its level to
//     WARN (LibraryFlags), so merges and flushes are not logged.
//   - Metrics: the library keeps its own metrics in VictoriaMetrics/metrics'
//     global set, which the server does not serve; the archive's own
//     metrics are the server's.
//   - Goroutines: each open storage runs its mergers, flushers and
//     retention watcher until Close; lib/fasttime ticks once a second
//     from init.
//   - Panics and exits: the library calls logger.Panicf on I/O errors it
//     cannot handle (a part it cannot write or read). In the goroutine of
//     a call (open, append, query) this package recovers and returns
//     archive.ErrUnavailable; in its own background goroutines (merges,
//     flushes) a panic ends the server. To keep a full disk from getting
//     there, the engine turns read-only below EmbeddedConfig.MinFreeBytes
//     and Append fails with archive.ErrUnavailable. This is what embedding
//     cannot contain; an install that must not share that risk runs a
//     VictoriaLogs service (HTTP) instead.
//
// # Durability
//
// Neither engine writes to disk per append: the library keeps appended rows
// in memory and writes them within its flush interval (Embedded: at least
// a second; a service: -inmemoryDataFlushInterval, 5 s by default), later
// on a busy machine. Sync writes them at once where it can: a partition's
// snapshot (the library's PartitionSnapshotMustCreate; a single node's
// /internal/partition/snapshot/create) writes the partition's in-memory
// parts to files first, and Sync deletes it again; a cluster's vlinsert has
// no snapshots, and its storage nodes write on their flush interval. Sync
// (both engines) then checks that every state appended since the last
// Sync is visible and every block holding one is in a file part (LogsQL's
// block_stats names one), so that a checkpoint taken after
// Sync survives a crash of the engine; the tests kill victoria-logs and a
// storage node with SIGKILL under load and find every row. A state lost
// in a crash before Sync never shows, Sync fails, and the archiver appends
// it again. A failed Sync gives the next one the states it did not find on
// disk, and a Sync checks its states by resourceVersion ranges of at most
// 100,000, each with queries of bounded memory: one count of a backlog of
// a million states (a relist, an outage) would need more than the engine
// grants a query, and every Sync after it would fail too.
// A cluster's vlinsert keeps in memory what it cannot deliver to any
// storage node until it can; Sync waits for it to arrive.
//
// # Security
//
// HTTP reaches the service over https when its URLs say so, verifying
// the service's certificate against TLSConfig.CAFile, and authenticates
// each request: basic authentication (the service's -httpAuth.username and
// -httpAuth.password, which guard every path but /health and a few other
// health checks, /internal/* included) or a bearer token for a proxy in
// front. It reads the CA, client certificate and credential files again
// at most once a second, as the service reads its own, so that rotated
// Secrets take effect on both sides without a restart. A 401 or 403 fails
// with archive.ErrUnavailable naming the credentials refused; a
// certificate that does not verify, with the CA file it was checked
// against. The open-source service cannot ask for client certificates
// (-mtls is an enterprise flag): TLSConfig.CertFile serves a proxy that
// does.
//
// # A storage node down
//
// vlselect answers 502 when it cannot reach every storage node (unless
// -search.allowPartialResponse or allow_partial_response=1, which HTTP
// always turns off per query); HTTP returns archive.ErrUnavailable for
// any 5xx and for an answer cut short, never a short page. Appends go on
// to the remaining nodes.
package victorialogs
