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
