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

// Package markdown reads the commands a page of the docs shows, so that a
// test can replay them as a reader would type them: the shell commands of
// its ```sh blocks, and the commands and outputs of its ```console blocks.
package markdown

import (
	"bufio"
	"fmt"
	"regexp"
	"strings"
)

// heredoc matches the start of a here-document and captures its delimiter.
var heredoc = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)

// Commands splits the ```sh blocks of the section under heading into shell
// commands: a line, with the lines a trailing backslash continues and the
// body of a here-document. Blank lines and comment lines are skipped.
func Commands(markdown, heading string) ([]string, error) {
	var (
		cmds      []string
		inSection bool
		inBlock   bool
		current   []string
		delimiter string
		found     bool
	)
	level := strings.SplitN(heading, " ", 2)[0] + " "
	scanner := bufio.NewScanner(strings.NewReader(markdown))
	for scanner.Scan() {
		line := scanner.Text()
		switch {
		case !inBlock && line == heading:
			inSection, found = true, true
			continue
		case !inBlock && inSection && strings.HasPrefix(line, level):
			inSection = false
			continue
		case !inSection:
			continue
		case !inBlock && strings.HasPrefix(line, "```"):
			inBlock = strings.TrimSpace(strings.TrimPrefix(line, "```")) == "sh"
			if !inBlock {
				// Another language's block (console output, yaml): skip to its end.
				for scanner.Scan() && !strings.HasPrefix(scanner.Text(), "```") {
				}
			}
			continue
		case !inBlock:
			continue
		}

		if delimiter != "" {
			current = append(current, line)
			if line == delimiter {
				cmds, current, delimiter = append(cmds, strings.Join(current, "\n")), nil, ""
			}
			continue
		}
		if strings.HasPrefix(line, "```") {
			if len(current) > 0 {
				return nil, fmt.Errorf("the block ends inside the command %q", strings.Join(current, "\n"))
			}
			inBlock = false
			continue
		}
		trimmed := strings.TrimSpace(line)
		if len(current) == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		current = append(current, line)
		if m := heredoc.FindStringSubmatch(line); m != nil {
			delimiter = m[1]
			continue
		}
		if strings.HasSuffix(trimmed, `\`) {
			continue
		}
		cmds, current = append(cmds, strings.Join(current, "\n")), nil
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("no heading %q", heading)
	}
	if delimiter != "" || len(current) > 0 || inBlock {
		return nil, fmt.Errorf("the section ends inside a command or block: %q", strings.Join(current, "\n"))
	}
	return cmds, nil
}

// Step is one command of a console transcript and what it printed.
type Step struct {
	Command, Output string
}

// Transcript reads the ```console blocks of the section under
// heading: each line starting with "$ " is a command, and the lines up to
// the next blank line or command are its output.
func Transcript(markdown, heading string) ([]Step, error) {
	_, section, found := strings.Cut("\n"+markdown, "\n"+heading+"\n")
	if !found {
		return nil, fmt.Errorf("no heading %q", heading)
	}
	level := strings.SplitN(heading, " ", 2)[0] + " "
	if i := strings.Index(section, "\n"+level); i >= 0 {
		section = section[:i]
	}
	var steps []Step
	inBlock := false
	for _, line := range strings.Split(section, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			inBlock = !inBlock && strings.TrimPrefix(line, "```") == "console"
		case !inBlock || line == "":
		case strings.HasPrefix(line, "$ "):
			steps = append(steps, Step{Command: strings.TrimPrefix(line, "$ ")})
		case len(steps) == 0:
			return nil, fmt.Errorf("output before any command: %q", line)
		default:
			last := &steps[len(steps)-1]
			last.Output = strings.TrimPrefix(last.Output+"\n"+line, "\n")
		}
	}
	return steps, nil
}
