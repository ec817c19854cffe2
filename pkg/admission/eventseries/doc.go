// Package eventseries is the EventSeries admission plugin and its sweeper:
// together they keep the series of an Event (series.count,
// series.lastObservedTime, series.state) meaningful, whichever API version
// (core/v1, events.k8s.io/v1beta1, events.k8s.io/v1) writes it.
//
// A series stands for isomorphic events: same regarding (core/v1:
// involvedObject), related, action, reason, reportingController (core/v1:
// reportingComponent; for legacy events source.component), reportingInstance
// and type, as client-go's tools/events recorder keys them.
//
// # Rules
//
// Checked by Validate on every create and update of events that carries a
// series, old or new:
//
//   - A new series (on create, or added to a singleton) has series.count >= 2
//     and series.lastObservedTime, not before eventTime. The same holds for
//     every write that changes count or lastObservedTime.
//   - An update never lowers series.count, never moves
//     series.lastObservedTime backwards, never changes the identity above,
//     and never removes series.
//   - Ongoing may become Finished. Finished is final: state, count and
//     lastObservedTime no longer change (re-sending the same final write is
//     fine); a new occurrence is a new event. Unknown may become Ongoing (its
//     reporter is back) or Finished.
//   - A series becomes Unknown (on create or from Ongoing) only if it was last
//     observed more than heartbeatInterval+heartbeatSlack ago. That is the
//     sweeper's write, told apart by the rule and not by who sends it: a client
//     stating the same fact is obeyed too.
//
// # State for clients that know nothing of it
//
// Admit runs before Validate and sets series.state when the client did not
// choose it. A patch is merged onto the stored event before admission, so a
// state equal to the stored one is not the client's choice; only a state that
// differs from the stored one (any state, on a new series) is, and it is
// obeyed within the rules. Otherwise the stored state is kept (Ongoing for a
// new series; a client that drops the unknown field on a round trip does not
// reset it); a write whose series.lastObservedTime is more than finishAfter
// old when it arrives is the reporter's final write and makes the series
// Finished; and a fresh write to an Unknown series makes it Ongoing again.
// Any write to a series quiet for longer than finishAfter counts as its final
// write: admission cannot tell a label-only patch from client-go's identical
// final patch.
//
// # Refusals: 422 Invalid
//
// Every refusal is a 422 Invalid status built with apierrors.NewInvalid, one
// cause per broken rule, with the field path of the request's version
// (regarding vs involvedObject, reportingController vs reportingComponent),
// naming the rule and the stored value, e.g.
//
//	The Event "web.17a" is invalid: series.count: Invalid value: 3: may not decrease (was 5)
//
// This is what kubectl users already know from immutable fields and
// validation, kubectl prints each cause on its own line, and clients treat it
// as final. 409 Conflict was rejected, even for "Finished is final": clients
// read 409 as "re-read and retry" (client-go's retry.RetryOnConflict, kubectl
// apply and edit), which would loop on a refusal that no retry can lift.
// client-go's recorder drops the write on either code.
//
// # Configuration
//
// The plugin reads an EventSeriesConfiguration from the admission
// configuration file (--admission-control-config-file):
//
//	apiVersion: apiserver.config.k8s.io/v1
//	kind: AdmissionConfiguration
//	plugins:
//	- name: EventSeries
//	  configuration:
//	    apiVersion: eventseries.admission.events.k8s.io/v1alpha1
//	    kind: EventSeriesConfiguration
//	    finishAfter: 6m        # default, client-go's finishTime
//	    heartbeatInterval: 30m # default, client-go's refreshTime
//	    heartbeatSlack: 6m     # default
//	    sweepInterval: 1m      # default; how often the server's sweeper runs
//
// # Sweeper
//
// Sweeper periodically marks Unknown every Ongoing series last observed more
// than heartbeatInterval+heartbeatSlack ago, never Finished: only the reporter
// knows a series ended. It works on SeriesStore, with optimistic concurrency,
// and re-checks an event after a conflict, so a heartbeat that lands first
// keeps its series Ongoing. The server runs it, with the plugin's thresholds
// from the same configuration file, from start to shutdown whenever the
// plugin is enabled.
package eventseries
