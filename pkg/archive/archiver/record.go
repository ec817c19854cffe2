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

package archiver

import (
	"strconv"
	"time"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/archive"
	eventstorage "github.com/kube-events/events-apiserver/pkg/registry/event/storage"
)

// EventTime is the newest-first order key of an event's state: its last
// observation, that is series.lastObservedTime, else eventTime, else
// lastTimestamp (deprecatedLastTimestamp), else creationTimestamp. The
// archive orders records by it and history answers order live events by
// it, so that the two merge into one order.
func EventTime(event *core.Event) time.Time {
	switch {
	case event.Series != nil && !event.Series.LastObservedTime.IsZero():
		return event.Series.LastObservedTime.Time
	case !event.EventTime.IsZero():
		return event.EventTime.Time
	case !event.LastTimestamp.IsZero():
		return event.LastTimestamp.Time
	default:
		return event.CreationTimestamp.Time
	}
}

// NewRecord is the archive record of one stored state of an event: event
// is the state decoded by the store's codec, object its bytes as the store
// encodes them, and revision the etcd revision that wrote it.
func NewRecord(event *core.Event, object []byte, revision int64) archive.Record {
	return archive.Record{
		UID:             string(event.UID),
		Namespace:       event.Namespace,
		Name:            event.Name,
		ResourceVersion: strconv.FormatInt(revision, 10),
		Time:            EventTime(event),
		Fields:          eventstorage.SelectableFields(event),
		Object:          object,
	}
}
