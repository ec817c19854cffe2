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
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kube-events/events-apiserver/pkg/archive"
)

// A record is one log row; its columns:
const (
	// colTime is Record.Time, to the nanosecond.
	colTime = "_time"
	// colObject is Record.Object in hexadecimal: one token for the
	// engine's bloom filters (base64 would be tens of unique tokens per
	// row), and byte-aligned, so that zstd still finds the repeats
	// between events.
	colObject = "_msg"
	// colNamespace is Record.Namespace, the one stream field: a stream
	// per namespace keeps blocks large (good compression) and lets a
	// namespaced query read its namespace's blocks alone.
	colNamespace = "ns"
	// colUID, colName and colRV are Record.UID, Name and ResourceVersion;
	// colRV holds a number, which the engine stores as one (no bloom
	// filter, a min and max per block).
	colUID  = "uid"
	colName = "name"
	colRV   = "rv"
	// colOccurrences is Record.Occurrences, kept only above 1, and
	// colFirst Record.FirstObserved in Unix nanoseconds, kept only when it
	// is not Time: most events are single occurrences, and a column left
	// out costs no bytes.
	colOccurrences = "occ"
	colFirst       = "first"
	// fieldPrefix prefixes the column of each of Record.Fields.
	fieldPrefix = "f."
)

// The selectable fields kept in their own columns rather than under
// fieldPrefix: the store's metadata.name and metadata.namespace are
// Record.Name and Record.Namespace.
const (
	fieldName      = "metadata.name"
	fieldNamespace = "metadata.namespace"
)

// stateRows selects the rows that hold a state, as every row appended
// does. A delete task that removes the oldest row of a block leaves a blank
// row in its place, with its time and stream alone (VictoriaLogs#1798):
// the queries that read rows without naming their UIDs leave it out.
var stateRows = colUID + ":*"

// streamFields are the stream fields of every row.
var streamFields = []string{colNamespace}

// field is one column of a row.
type field struct {
	Name, Value string
}

// encodeRecord returns the columns of r (without colTime), appended to dst.
// Empty values are left out: the engine treats an empty value as a
// missing field, as the live store treats a missing field as empty.
func encodeRecord(dst []field, r *archive.Record) ([]field, error) {
	if r.UID == "" {
		return dst, fmt.Errorf("record %s/%s has no UID", r.Namespace, r.Name)
	}
	if _, err := strconv.ParseUint(r.ResourceVersion, 10, 64); err != nil {
		return dst, fmt.Errorf("record %s: resourceVersion %q is not a decimal number", r.UID, r.ResourceVersion)
	}
	if r.Time.IsZero() {
		return dst, fmt.Errorf("record %s has no time", r.UID)
	}
	dst = append(dst,
		field{colNamespace, r.Namespace},
		field{colUID, r.UID},
		field{colName, r.Name},
		field{colRV, r.ResourceVersion},
		field{colObject, hex.EncodeToString(r.Object)},
	)
	if r.Occurrences > 1 {
		dst = append(dst, field{colOccurrences, strconv.FormatInt(int64(r.Occurrences), 10)})
	}
	if !r.FirstObserved.IsZero() && !r.FirstObserved.Equal(r.Time) {
		dst = append(dst, field{colFirst, strconv.FormatInt(r.FirstObserved.UnixNano(), 10)})
	}
	for name, value := range r.Fields {
		if value == "" || name == fieldName || name == fieldNamespace {
			continue
		}
		dst = append(dst, field{fieldPrefix + name, value})
	}
	return dst, nil
}

// decodeRecord builds a record from the columns of a row the engine
// returned (a missing column is an empty value).
func decodeRecord(row map[string]string) (archive.Record, error) {
	r := archive.Record{
		UID:             row[colUID],
		Namespace:       row[colNamespace],
		Name:            row[colName],
		ResourceVersion: row[colRV],
		Fields:          map[string]string{},
	}
	t, err := time.Parse(time.RFC3339Nano, row[colTime])
	if err != nil {
		return r, fmt.Errorf("row of %s: %w", r.UID, err)
	}
	r.Time = t
	if r.Object, err = hex.DecodeString(row[colObject]); err != nil {
		return r, fmt.Errorf("row of %s: object: %w", r.UID, err)
	}
	if len(r.Object) == 0 {
		r.Object = nil
	}
	if v := row[colOccurrences]; v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return r, fmt.Errorf("row of %s: occurrences %q: %w", r.UID, v, err)
		}
		r.Occurrences = int32(n)
	}
	if v := row[colFirst]; v != "" {
		ns, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return r, fmt.Errorf("row of %s: first observation %q: %w", r.UID, v, err)
		}
		r.FirstObserved = time.Unix(0, ns).UTC()
	}
	for name, value := range row {
		if f, ok := strings.CutPrefix(name, fieldPrefix); ok && value != "" {
			r.Fields[f] = value
		}
	}
	if r.Name != "" {
		r.Fields[fieldName] = r.Name
	}
	if r.Namespace != "" {
		r.Fields[fieldNamespace] = r.Namespace
	}
	return r, nil
}

// column is the column a selectable field is stored in.
func column(name string) string {
	switch name {
	case fieldName:
		return colName
	case fieldNamespace:
		return colNamespace
	}
	return fieldPrefix + name
}

// formatTime formats t as LogsQL reads it.
func formatTime(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}
