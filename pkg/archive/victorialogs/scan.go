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
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/kube-events/events-apiserver/pkg/archive"
)

var (
	_ archive.Scanner = &Embedded{}
	_ archive.Scanner = &HTTP{}
)

// Scan answers a range of resourceVersions; see archive.Scanner.
func (e *Embedded) Scan(ctx context.Context, after, through int64, limit int) ([]archive.Record, error) {
	return scan(ctx, e, after, through, limit, e.cfg.Retention, time.Now())
}

// Scan answers a range of resourceVersions; see archive.Scanner.
func (h *HTTP) Scan(ctx context.Context, after, through int64, limit int) ([]archive.Record, error) {
	return scan(ctx, h, after, through, limit, h.cfg.Retention, time.Now())
}

// scan reads the rows of rv in (after, through] over the whole retention:
// rv is a number column, whose per-block minimum and maximum let the
// engine skip the blocks outside the range, and the engine's sort orders
// numbers as numbers. A state appended more than once has as many rows,
// which the limit counts; the duplicates are dropped here, so that an
// answer may hold fewer than limit states while more follow.
func scan(ctx context.Context, r runner, after, through int64, limit int, retention time.Duration, now time.Time) ([]archive.Record, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: scan limit %d", archive.ErrInvalidQuery, limit)
	}
	if through <= after {
		return nil, nil
	}
	w := queryWindow(&archive.Query{}, retention, now)
	query := fmt.Sprintf("_time:[%s, %s) %s %s:range(%d, %d] | sort by (%s) limit %d",
		formatTime(w.since), formatTime(w.until), stateRows, colRV, after, through, colRV, limit)
	type key struct{ uid, rv string }
	seen := map[key]bool{}
	var records []archive.Record
	err := r.run(ctx, query, func(row map[string]string) error {
		rec, err := decodeRecord(row)
		if err != nil {
			return err
		}
		if k := (key{rec.UID, rec.ResourceVersion}); !seen[k] {
			seen[k] = true
			records = append(records, rec)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(records, func(a, b archive.Record) int {
		ra, _ := strconv.ParseUint(a.ResourceVersion, 10, 64)
		rb, _ := strconv.ParseUint(b.ResourceVersion, 10, 64)
		return cmp.Compare(ra, rb)
	})
	return records, nil
}
