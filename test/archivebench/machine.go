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

package archivebench

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// quietLoad is the highest one-minute load average at which a run's start
// counts as a quiet machine (2 cores).
const quietLoad = 2

// loadAverage reads the one-minute load average.
func loadAverage() (float64, error) {
	fields, err := loadAverages()
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(fields[0], 64)
}

// loadAverages reads the one-, five- and fifteen-minute load averages.
func loadAverages() ([]string, error) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(string(data))
	if len(fields) < 3 {
		return nil, fmt.Errorf("/proc/loadavg: %q", data)
	}
	return fields[:3], nil
}

// logPhase logs the load averages at the start of a phase of the run and
// returns the function that logs them at its end.
func logPhase(logf func(string, ...any), name string) func() {
	log := func(at string) {
		load, err := loadAverages()
		if err != nil {
			logf("phase %s: %s: load average unknown: %v", name, at, err)
			return
		}
		logf("phase %s: %s: load average %s", name, at, strings.Join(load, " "))
	}
	log("start")
	return func() { log("end") }
}

// cpuTime is the CPU time the process has used, user and system, all
// threads.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(fmt.Sprintf("getrusage: %v", err))
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cgoEnabled is the CGO_ENABLED setting info was built with ("0" as the
// server ships, its zstd then pure Go), "" if unknown.
func cgoEnabled(info *debug.BuildInfo) string {
	if info == nil {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key == "CGO_ENABLED" {
			return s.Value
		}
	}
	return ""
}

// ownCgoEnabled is the running binary's CGO_ENABLED setting.
func ownCgoEnabled() string {
	info, _ := debug.ReadBuildInfo()
	return cgoEnabled(info)
}
