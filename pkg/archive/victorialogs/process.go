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

package victorialogs

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"

	vmlogger "github.com/VictoriaMetrics/VictoriaMetrics/lib/logger"
	"k8s.io/klog/v2"
)

// The storage library's packages change the process as they are imported
// and when first used; see the package documentation. init undoes what an
// import changes, containProcess sets what the first use reads.

func init() {
	// VictoriaMetrics' lib/cgroup sets GOMAXPROCS to the floor of the
	// cgroup's CPU quota at init, which also turns off the runtime's own
	// tracking of the quota. Hand GOMAXPROCS back to the runtime, unless
	// the operator set it.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.SetDefaultGOMAXPROCS()
	}
}

var (
	containOnce sync.Once
	containErr  error
)

// containProcess sets, once per process, the global settings the storage
// library reads through the standard library's flag.CommandLine: the cache
// memory limit (an absolute size, not 60 % of the machine's memory), its
// log level and output (klog), and marks flag.CommandLine parsed, which
// lib/memory insists on. The values of the first call win: the library
// reads them once.
func containProcess(logger klog.Logger, cacheBytes int64) error {
	containOnce.Do(func() {
		set := map[string]string{
			"memory.allowedBytes":     strconv.FormatInt(cacheBytes, 10),
			"loggerLevel":             "INFO",
			"loggerDisableTimestamps": "true",
			"loggerFormat":            "default",
		}
		for name, value := range set {
			if err := flag.CommandLine.Set(name, value); err != nil {
				containErr = fmt.Errorf("setting VictoriaLogs' -%s: %w", name, err)
				return
			}
		}
		if !flag.CommandLine.Parsed() {
			// The server parses its flags with pflag; flag.CommandLine holds
			// only libraries' flags, and none of them is for users.
			if err := flag.CommandLine.Parse(nil); err != nil {
				containErr = err
				return
			}
		}
		vmlogger.SetOutputForTests(klogWriter{logger: logger.WithName("victorialogs")})
	})
	return containErr
}

// klogWriter routes the storage library's log lines ("level\tcaller\tmessage",
// without timestamps) to the logger of the first embedded archive opened.
type klogWriter struct {
	logger klog.Logger
}

func (w klogWriter) Write(p []byte) (int, error) {
	line := bytes.TrimRight(p, "\n")
	level, rest, _ := bytes.Cut(line, []byte("\t"))
	caller, msg, found := bytes.Cut(rest, []byte("\t"))
	if !found {
		caller, msg = nil, rest
	}
	logger := w.logger
	switch string(level) {
	case "info":
		logger.V(2).Info(string(msg), "caller", string(caller))
	case "warn":
		logger.Info(string(msg), "caller", string(caller), "level", "warn")
	default:
		logger.Error(nil, string(msg), "caller", string(caller), "level", string(level))
	}
	return len(p), nil
}
