// Package series keeps the state of event series true for every event in
// the store, whoever wrote it: the state controller gives a state to series
// stored without one (written by kube-apiserver in offload mode, copied by
// the mirror, or written while the EventSeries plugin was off), and the
// sweeper marks abandoned series Unknown. Both are server controllers, run
// on one replica at a time, and write through the registry store with
// event.InternalWriteContext, so that the strategy judges their writes as it
// judges a client's. The clock-dependent rules they apply, and their
// thresholds, are the event policy's (pkg/apis/eventpolicy), which the
// EventSeries admission plugin applies too.
package series
