// Package series keeps the state of event series true for every event in
// the store, whoever wrote it: the series-state controller gives a state to
// series stored without one (written by kube-apiserver in offload mode, by
// an in-process writer, or while the EventSeries plugin was off), and the
// sweeper marks abandoned series Unknown. Both are server controllers,
// run on one replica at a time, and write through the registry store with
// event.InternalWriteContext, so that the strategy judges their writes as
// it judges a client's. The rules themselves are those of the EventSeries
// admission plugin (pkg/admission/eventseries), with its thresholds.
package series
