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
	"encoding/json"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// The chart README's values table sits between these markers; the rest of
// the README is written by hand.
const (
	valuesBegin = "<!-- values:begin (generated from values.yaml by hack/update-reference.sh: do not edit) -->"
	valuesEnd   = "<!-- values:end -->"
)

// valueRow is one documented value of the chart.
type valueRow struct {
	key, value, description string
}

// withValuesTable returns readme with the table between the markers
// replaced by one written from values, the chart's values.yaml: a row per
// value, keyed by its dotted path, with its default and the comment above
// it.
func withValuesTable(readme, values []byte) ([]byte, error) {
	begin, end := bytes.Index(readme, []byte(valuesBegin)), bytes.Index(readme, []byte(valuesEnd))
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("want the markers %q and %q, in that order", valuesBegin, valuesEnd)
	}
	rows, err := valueRows(values)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(readme[:begin+len(valuesBegin)])
	b.WriteString("\n\n| Key | Default | Description |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.key, r.value, r.description)
	}
	b.WriteString("\n")
	b.Write(readme[end:])
	return b.Bytes(), nil
}

// valueRows walks values.yaml in file order. A mapping whose keys carry
// comments of their own is a group, a row without a default, and is walked
// into; any other value
// (a scalar, a list, a mapping of settings passed through, like resources)
// is one row.
func valueRows(values []byte) ([]valueRow, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(values, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("values.yaml is not a mapping")
	}
	var rows []valueRow
	var walk func(prefix string, m *yaml.Node) error
	walk = func(prefix string, m *yaml.Node) error {
		for i := 0; i < len(m.Content); i += 2 {
			key, value := m.Content[i], m.Content[i+1]
			path := prefix + key.Value
			if value.Kind == yaml.MappingNode && commented(value) {
				if key.HeadComment != "" {
					rows = append(rows, valueRow{key: path, description: describe(key.HeadComment)})
				}
				if err := walk(path+".", value); err != nil {
					return err
				}
				continue
			}
			def, err := defaultValue(value)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			rows = append(rows, valueRow{key: path, value: def, description: describe(key.HeadComment)})
		}
		return nil
	}
	if err := walk("", doc.Content[0]); err != nil {
		return nil, err
	}
	return rows, nil
}

// commented says whether any key of the mapping m carries a comment.
func commented(m *yaml.Node) bool {
	for i := 0; i < len(m.Content); i += 2 {
		if m.Content[i].HeadComment != "" {
			return true
		}
	}
	return false
}

// defaultValue is a value as a table cell: compact JSON in code.
func defaultValue(n *yaml.Node) (string, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return "", err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return "`" + strings.ReplaceAll(string(data), "|", `\|`) + "`", nil
}

// describe turns a YAML comment into one table cell: the "#" and line
// breaks dropped, an indented example kept as code.
func describe(comment string) string {
	var words []string
	for _, line := range strings.Split(comment, "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "#")
		if strings.HasPrefix(line, "   ") {
			words = append(words, "`"+strings.TrimSpace(line)+"`")
			continue
		}
		if line = strings.TrimSpace(line); line != "" {
			words = append(words, line)
		}
	}
	return strings.ReplaceAll(strings.Join(words, " "), "|", `\|`)
}
