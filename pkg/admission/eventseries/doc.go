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

// Package eventseries is the EventSeries admission plugin: the rules of an
// event series (series.count, series.lastObservedTime, series.state) that
// depend on the clock and on the plugin's configuration, for writes through
// the API in any version (core/v1, events.k8s.io/v1beta1, events.k8s.io/v1).
// The rules that do not (content, transitions, Finished is final, identity)
// are validation's (pkg/apis/core/validation), which every writer meets; the
// controllers that give states to writes bypassing the API, and mark
// abandoned series Unknown, are in pkg/registry/event/series. The plugin and
// the controllers share the thresholds and the clock-dependent rules of the
// event policy (pkg/apis/eventpolicy: StateOfWrite, QuietFor).
//
// # State for clients that know nothing of it
//
// Admit sets series.state when the client did not choose it (StateOfWrite).
// A patch is merged onto the stored event before admission, so a state equal
// to the stored one is not the client's choice; only a state that differs
// from the stored one (any state, on a new series) is, and it is obeyed
// within the rules. Otherwise the stored state is kept (Ongoing for a new
// series); a write whose series.lastObservedTime is more than finishAfter
// old when it arrives is the reporter's final write and makes the series
// Finished, unless it turns a stored singleton into a series (the second
// occurrence, sent as it happens; Kubernetes' conformance tests send one
// observed years ago and update the series after) and the policy's clock
// is not strict; and a fresh write to an Unknown series makes it Ongoing
// again.
// Any write to a series quiet for longer than finishAfter counts as its
// final write: admission cannot tell a label-only patch from client-go's
// identical final patch.
//
// # Unknown
//
// Validate lets a series become Unknown (on create or from Ongoing) only if
// it was last observed more than heartbeatInterval+heartbeatSlack ago: the
// sweeper's write, told apart by the rule and not by who sends it, so a
// client stating the same fact is obeyed too. Its refusal is a 422 Invalid
// on series.state, like validation's.
//
// # Strict clock
//
// With the policy's series.strictClock, Validate also refuses a series last
// observed before the event's eventTime (422 on series.lastObservedTime), a
// rule Kubernetes does not have and its conformance tests break; and a
// singleton turned into a series already quiet for finishAfter is Finished.
//
// # Configuration
//
// The thresholds are the series part of the event policy (finishAfter,
// heartbeatInterval, heartbeatSlack; see pkg/apis/eventpolicy/v1alpha1),
// which the server decodes once, from --event-policy-config or from the
// former EventSeriesConfiguration in this plugin's entry of the admission
// configuration file.
package eventseries
