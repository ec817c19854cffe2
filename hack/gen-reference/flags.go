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

package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kube-events/events-apiserver/cmd/events-apiserver/app"
)

// writeFlags writes every flag of the command, in the named flag sets
// --help shows them in; the flags the command adds beside the options'
// sets (--version, --help, the global log flags) under "global", as --help
// does.
func writeFlags(b *bytes.Buffer) error {
	cmd := app.NewCommand(context.Background(), &app.MemoryLimit{})
	sets := app.NewOptions().Flags()

	fmt.Fprintf(b, "# Flags\n\n")
	fmt.Fprintf(b, "Every flag of `events-apiserver`, in the groups `events-apiserver --help` shows.\n")
	fmt.Fprintf(b, "Durations are Go durations (`90s`, `1h`); lists are comma-separated.\n\n")
	for _, name := range sets.Order {
		fmt.Fprintf(b, "- [%s](#%s)\n", name, anchor(name))
	}
	fmt.Fprintf(b, "- [global](#global)\n")

	seen := map[string]bool{}
	for _, name := range sets.Order {
		var flags []*pflag.Flag
		sets.FlagSets[name].VisitAll(func(f *pflag.Flag) {
			seen[f.Name] = true
			if c := cmd.Flags().Lookup(f.Name); c != nil {
				flags = append(flags, c)
			}
		})
		writeFlagTable(b, name, flags)
	}
	var global []*pflag.Flag
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !seen[f.Name] {
			global = append(global, f)
		}
	})
	writeFlagTable(b, "global", global)
	return nil
}

// writeFlagTable writes one group's table, leaving out hidden flags as
// --help does and marking deprecated ones.
func writeFlagTable(b *bytes.Buffer, group string, flags []*pflag.Flag) {
	fmt.Fprintf(b, "\n## %s\n\n", group)
	fmt.Fprintf(b, "| Flag | Type | Default | Description |\n|---|---|---|---|\n")
	for _, f := range flags {
		if f.Hidden {
			continue
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		typ, usage := pflag.UnquoteUsage(f)
		if typ == "" {
			typ = f.Value.Type()
		}
		if f.Deprecated != "" {
			usage = "DEPRECATED: " + f.Deprecated + " " + usage
		}
		def := ""
		if !zeroDefault(f) {
			def = "`" + strings.ReplaceAll(f.DefValue, "|", `\|`) + "`"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", name, typ, def, cell(usage))
	}
}

// basicTypes are the pflag types whose zero default says something (a
// bool that is off, a count of 0); of any other type, --help leaves a
// zero-looking default out (an unset tristate prints "false").
var basicTypes = map[string]bool{
	"bool": true, "duration": true, "float32": true, "float64": true,
	"int": true, "int32": true, "int64": true, "uint": true, "uint32": true, "uint64": true,
}

// zeroDefault tells whether f's default is left out, as --help leaves it
// out: empty, or zero-looking for a type that is not basic.
func zeroDefault(f *pflag.Flag) bool {
	switch f.DefValue {
	case "", "[]":
		return true
	case "false", "0", "<nil>":
		return !basicTypes[f.Value.Type()]
	}
	return false
}

// cell makes text fit in one table cell.
func cell(text string) string {
	text = strings.TrimSpace(text)
	text = strings.ReplaceAll(text, "|", `\|`)
	text = strings.ReplaceAll(text, "<", "&lt;")
	text = strings.ReplaceAll(text, ">", "&gt;")
	return strings.ReplaceAll(text, "\n", "<br>")
}

// anchor is the link target GitHub gives a heading.
func anchor(heading string) string {
	return strings.ReplaceAll(strings.ToLower(heading), " ", "-")
}
