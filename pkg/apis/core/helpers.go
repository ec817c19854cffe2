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

package core

import "time"

// LastObserved is when the last occurrence an event stands for was
// observed: series.lastObservedTime, else lastTimestamp (a core/v1
// writer's last occurrence; events.k8s.io's deprecatedLastTimestamp), else
// eventTime (the first occurrence), else creationTimestamp. Folding adds
// occurrences after it, the archive orders an event's states by it, and
// history answers order live events by it, so that the three agree.
func LastObserved(e *Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	default:
		return e.CreationTimestamp.Time
	}
}

// FirstObserved is when the first occurrence an event stands for was
// observed: eventTime, else firstTimestamp (a core/v1 writer's first
// occurrence; events.k8s.io's deprecatedFirstTimestamp), else
// creationTimestamp.
func FirstObserved(e *Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	default:
		return e.CreationTimestamp.Time
	}
}

// Occurrences is how many occurrences an event stands for: its series'
// count or its count (events.k8s.io: deprecatedCount), the greater when it
// has both, and at least 1 (a singleton written through events.k8s.io
// carries neither). Folding adds occurrences to it, and the event
// summaries count it, so that the two agree.
func Occurrences(e *Event) int32 {
	count := max(e.Count, 1)
	if e.Series != nil {
		count = max(count, e.Series.Count)
	}
	return count
}
