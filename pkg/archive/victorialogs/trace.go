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
	"time"

	"github.com/VictoriaMetrics/VictoriaLogs/lib/logstorage"
)

// QueryPhase is the step of a page (queryPage), or the summary, a LogsQL
// query serves.
type QueryPhase string

// The phases of a page, in the order it runs them.
const (
	// PhaseFind reads the order keys and states of the rows matching the
	// query, newest first, a slice of time at a time.
	PhaseFind QueryPhase = "find"
	// PhaseCheck reads the newest state of each UID found.
	PhaseCheck QueryPhase = "check"
	// PhaseFetch reads the whole rows of the page's records.
	PhaseFetch QueryPhase = "fetch"
	// PhaseSummary counts a summary (Summarize), in one query.
	PhaseSummary QueryPhase = "summary"
)

// QueryTrace receives, for each LogsQL query an Embedded archive runs, its
// phase ("" outside a page, as for Sync's), the engine's statistics of it
// (blocks, rows and bytes read and decompressed) and how long it took: where
// a page's time goes. It is called in the querying goroutine. An archive on
// a service does not call it.
type QueryTrace func(phase QueryPhase, stats *logstorage.QueryStats, took time.Duration)

type (
	traceKey struct{}
	phaseKey struct{}
)

// WithQueryTrace returns a copy of ctx whose queries on an Embedded archive
// report to trace.
func WithQueryTrace(ctx context.Context, trace QueryTrace) context.Context {
	return context.WithValue(ctx, traceKey{}, trace)
}

// withPhase marks the queries run with the returned context as phase's, when
// ctx is traced.
func withPhase(ctx context.Context, phase QueryPhase) context.Context {
	if ctx.Value(traceKey{}) == nil {
		return ctx
	}
	return context.WithValue(ctx, phaseKey{}, phase)
}

// traceQuery reports a query's statistics to ctx's trace, if any.
func traceQuery(ctx context.Context, stats *logstorage.QueryStats, took time.Duration) {
	trace, _ := ctx.Value(traceKey{}).(QueryTrace)
	if trace == nil {
		return
	}
	phase, _ := ctx.Value(phaseKey{}).(QueryPhase)
	trace(phase, stats, took)
}
