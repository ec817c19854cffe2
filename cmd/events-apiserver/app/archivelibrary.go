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
	"flag"
	"fmt"
	"sort"

	"github.com/kube-events/events-apiserver/pkg/archive/victorialogs"
)

// SetArchiveLibraryFlags sets, once, before any embedded archive opens, the
// flags the embedded archive's storage library reads from the standard
// library's flag.CommandLine (victorialogs.LibraryFlags: its caches' memory
// and its log level), and parses flag.CommandLine, which the library
// requires. The server's own flags are pflag sets; flag.CommandLine holds
// only libraries' flags, none of them for users, so parsing it with no
// arguments changes nothing else. Process-wide settings are the main
// function's to make, as the memory limit and GC target are.
func SetArchiveLibraryFlags() error {
	values := victorialogs.LibraryFlags()
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := flag.CommandLine.Set(name, values[name]); err != nil {
			return fmt.Errorf("setting the archive library's -%s: %w", name, err)
		}
	}
	if flag.CommandLine.Parsed() {
		return nil
	}
	return flag.CommandLine.Parse(nil)
}
