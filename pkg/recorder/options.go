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

package recorder

import (
	"math"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// Options tune a Broadcaster. The zero value is the proposal's defaults.
type Options struct {
	// FinishAfter is how long a series may go without occurrence before it
	// is finished (a last write with state Finished and the final count),
	// and how long a single occurrence waits for a second one to start a
	// series. Default 6m, as client-go's recorder.
	FinishAfter time.Duration
	// HeartbeatInterval is how often a live series is written even when
	// nothing but its count changed. Default 30m, as client-go's recorder.
	HeartbeatInterval time.Duration
	// SweepInterval is how often series are checked for a due heartbeat or
	// finish. Default 10s.
	SweepInterval time.Duration
	// BufferSize bounds the events with a write waiting. When it is full,
	// the oldest waiting write is dropped. Default 1000.
	BufferSize int
	// InitialBackoff and MaxBackoff bound the exponential backoff after a
	// throttled or failed write (doubling from InitialBackoff, with up to
	// 20% jitter, never less than the server's Retry-After). Defaults 1s
	// and 5m.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// ShutdownTimeout bounds the writes Shutdown flushes. Default 10s.
	ShutdownTimeout time.Duration
	// ReportingInstance is written as every event's reportingInstance and
	// selects the events continued after a restart, so it must stay the same
	// across restarts of this replica (a StatefulSet pod name, say).
	// Default "<reportingController>-<hostname>", as client-go's recorder.
	ReportingInstance string
	// RestoreNamespace is the namespace listed on start for the events to
	// continue; empty lists all namespaces.
	RestoreNamespace string
	// Clock is the time source; a fake clock in tests. Default the real clock.
	Clock clock.WithTicker
}

const (
	defaultFinishAfter       = 6 * time.Minute
	defaultHeartbeatInterval = 30 * time.Minute
	defaultSweepInterval     = 10 * time.Second
	defaultBufferSize        = 1000
	defaultInitialBackoff    = time.Second
	defaultMaxBackoff        = 5 * time.Minute
	defaultShutdownTimeout   = 10 * time.Second
	// backoffJitter is the fraction added at random to every backoff, so
	// that recorders throttled together do not come back together.
	backoffJitter = 0.2
)

func (o Options) withDefaults() Options {
	setDuration := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	setDuration(&o.FinishAfter, defaultFinishAfter)
	setDuration(&o.HeartbeatInterval, defaultHeartbeatInterval)
	setDuration(&o.SweepInterval, defaultSweepInterval)
	setDuration(&o.InitialBackoff, defaultInitialBackoff)
	setDuration(&o.MaxBackoff, defaultMaxBackoff)
	setDuration(&o.ShutdownTimeout, defaultShutdownTimeout)
	if o.BufferSize <= 0 {
		o.BufferSize = defaultBufferSize
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

// backoff is the delay schedule after consecutive failed calls: doubling
// from InitialBackoff up to MaxBackoff, each delay with up to backoffJitter
// added. Steps only end at the cap, where the delay stays.
func (o Options) backoff() wait.Backoff {
	return wait.Backoff{Duration: o.InitialBackoff, Factor: 2, Jitter: backoffJitter, Steps: math.MaxInt32, Cap: o.MaxBackoff}
}

// reportingInstance is the instance a recorder for controller reports as.
func (o Options) reportingInstance(controller string) string {
	if o.ReportingInstance != "" {
		return o.ReportingInstance
	}
	hostname, _ := os.Hostname()
	return controller + "-" + hostname
}
