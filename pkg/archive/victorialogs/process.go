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
	"errors"
	"os"
	"runtime"
	"strconv"
)

// The storage library's packages change the process as they are imported
// and when first used; see the package documentation. init undoes what an
// import changes; the process sets what the first use reads (LibraryFlags).

func init() {
	// VictoriaMetrics' lib/cgroup sets GOMAXPROCS to the floor of the
	// cgroup's CPU quota at init, which also turns off the runtime's own
	// tracking of the quota. Hand GOMAXPROCS back to the runtime, unless
	// the operator set it.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.SetDefaultGOMAXPROCS()
	}
}

// LibraryFlags are the values of the storage library's own flags that a
// process embedding it sets before the first OpenEmbedded. The library's
// packages register them on the standard library's flag.CommandLine at init
// and read them once, on first use: the caches' memory (an absolute size,
// not 60 % of the machine's memory) and its log level. Setting them, and
// parsing flag.CommandLine, which lib/memory insists on, is the process's
// decision: its main does it (cmd/events-apiserver/app.SetArchiveLibraryFlags);
// a test binary parses flag.CommandLine itself and keeps the defaults.
func LibraryFlags() map[string]string {
	return map[string]string{
		"memory.allowedBytes": strconv.FormatInt(DefaultCacheBytes, 10),
		// The library writes to stderr in its own format; its informational
		// lines (merges, flushes) are not for operators.
		"loggerLevel": "WARN",
	}
}

// errLibraryFlagsUnparsed is OpenEmbedded's answer where the library would
// panic on first use.
var errLibraryFlagsUnparsed = errors.New("the storage library's flags (flag.CommandLine) are not parsed: the process sets them before opening an embedded archive (LibraryFlags)")
