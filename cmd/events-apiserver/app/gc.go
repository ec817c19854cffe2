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
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the collector's target when GOGC is not set: between
// collections the heap may grow 75 % over what is live, not Go's 100 %. The
// watch cache keeps every event, so what is live is most of the process,
// and the target sets its size: at 100,000 cached events about 490 MiB
// resident instead of 570 MiB, for a create rate within the benchmark's
// noise (README, "Where the memory goes"). GOGC, and GOMEMLIMIT beside it,
// still decide when set.
const DefaultGCPercent = 75

// SetDefaultGCPercent applies DefaultGCPercent unless the environment sets
// GOGC, which the runtime has then applied already.
func SetDefaultGCPercent() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(DefaultGCPercent)
	}
}
