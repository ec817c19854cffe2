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

package app

import (
	"time"

	"k8s.io/klog/v2"
)

// warnEventTTL logs a warning when --event-ttl is shorter than the interval
// at which reporters re-send an Ongoing series: the event policy's series
// heartbeat interval (client-go's recorder's by default). A policy that
// cannot be read is left for Config to report.
func (o *Options) warnEventTTL(logger klog.Logger) {
	policy, err := o.eventPolicy()
	if err != nil {
		return
	}
	heartbeatInterval := policy.Series.HeartbeatInterval.Duration
	if reason := eventTTLWarning(o.EventTTL, heartbeatInterval); reason != "" {
		logger.Info("Warning: --event-ttl is shorter than the series heartbeat interval",
			"eventTTL", o.EventTTL, "heartbeatInterval", heartbeatInterval, "reason", reason)
	}
}

// eventTTLWarning returns why an event TTL of ttl is too short for series
// re-sent every heartbeatInterval, or "" when it is not: an event expires
// ttl after its last write, and a reporter writes an Ongoing series again
// only after heartbeatInterval when nothing new happens.
func eventTTLWarning(ttl, heartbeatInterval time.Duration) string {
	if ttl >= heartbeatInterval {
		return ""
	}
	return "an Ongoing series whose reporter sees no new occurrence is written again only once per heartbeat interval, " +
		"so it expires before its next heartbeat: it disappears while still Ongoing instead of being kept, finished or marked Unknown. " +
		"Set --event-ttl to at least the heartbeat interval (the event policy's series.heartbeatInterval, 30m by default, as client-go's recorder)."
}
