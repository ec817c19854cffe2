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

package export

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// CursorKey is where the export keeps its cursor, under the storage prefix
// beside the archive checkpoint (archiver.CheckpointKey).
const CursorKey = "/events-apiserver/export/cursor"

// Cursor is how far the export has gone: every archived state written at
// or before Revision has been taken by the receiver (or left out by the
// selection).
type Cursor struct {
	// Revision is the etcd revision (an event's resourceVersion) exported
	// up to.
	Revision int64 `json:"revision"`
	// Time is when the cursor was written.
	Time time.Time `json:"time"`
}

// ReadCursor returns the cursor kept in kv (a client under the storage
// prefix), and false if there is none.
func ReadCursor(ctx context.Context, kv clientv3.KV) (Cursor, bool, error) {
	resp, err := kv.Get(ctx, CursorKey)
	if err != nil {
		return Cursor{}, false, fmt.Errorf("reading the export cursor: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return Cursor{}, false, nil
	}
	var c Cursor
	if err := json.Unmarshal(resp.Kvs[0].Value, &c); err != nil {
		return Cursor{}, false, fmt.Errorf("decoding the export cursor %q: %w", resp.Kvs[0].Value, err)
	}
	return c, true, nil
}

// writeCursor stores c in kv. The server's clients fence it
// (leaderelection.NewKV): under the election's term, as the exporter runs,
// it is applied only while this replica leads, so that a leader paused
// past its lease cannot move the cursor back on resuming.
func writeCursor(ctx context.Context, kv clientv3.KV, c Cursor) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, CursorKey, string(data)); err != nil {
		return fmt.Errorf("writing the export cursor: %w", err)
	}
	return nil
}
