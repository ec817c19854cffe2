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

package archiver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"
)

// CheckpointKey is where the archiver keeps its checkpoint, under the
// storage prefix beside the election keys.
const CheckpointKey = "/events-apiserver/archive/checkpoint"

// DefaultMaxHold is how old a checkpoint may be and still hold the
// server's etcd compaction back: an event lives an hour by default, so an
// archiver down for up to an hour loses nothing, and a margin on top. An
// archive dead for longer no longer keeps etcd from being compacted.
const DefaultMaxHold = time.Hour + 15*time.Minute

// Checkpoint is how far the archiver has archived: every state written at
// or before Revision is in the archive.
type Checkpoint struct {
	// Revision is the etcd revision archived up to.
	Revision int64 `json:"revision"`
	// Time is when the checkpoint was written; the archiver rewrites it
	// while it runs, even idle, so that its age tells a live archiver from
	// a dead one.
	Time time.Time `json:"time"`
}

// ReadCheckpoint returns the checkpoint kept in kv (a client under the
// storage prefix), and false if there is none.
func ReadCheckpoint(ctx context.Context, kv clientv3.KV) (Checkpoint, bool, error) {
	resp, err := kv.Get(ctx, CheckpointKey)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("reading the archive checkpoint: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return Checkpoint{}, false, nil
	}
	var cp Checkpoint
	if err := json.Unmarshal(resp.Kvs[0].Value, &cp); err != nil {
		return Checkpoint{}, false, fmt.Errorf("decoding the archive checkpoint %q: %w", resp.Kvs[0].Value, err)
	}
	return cp, true, nil
}

// writeCheckpoint stores cp in kv. The server's clients fence it
// (leaderelection.NewKV): under the election's term, as the archiver runs,
// it is applied only while this replica leads, so that a leader paused
// past its lease cannot move the checkpoint back on resuming.
func writeCheckpoint(ctx context.Context, kv clientv3.KV, cp Checkpoint) error {
	data, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, CheckpointKey, string(data)); err != nil {
		return fmt.Errorf("writing the archive checkpoint: %w", err)
	}
	return nil
}

// CompactionHold returns, for the server's etcd compaction
// (etcdmaint.Compactor), the revision compaction must not pass: the one
// after the checkpoint, the first the archiver watches from. A missing
// checkpoint, or one older than maxAge (an archiver that has been down that
// long), holds nothing back, so that a dead archive cannot fill etcd.
func CompactionHold(kv clientv3.KV, maxAge time.Duration, now func() time.Time) func(context.Context) (int64, bool, error) {
	return func(ctx context.Context) (int64, bool, error) {
		cp, ok, err := ReadCheckpoint(ctx, kv)
		if err != nil || !ok {
			return 0, false, err
		}
		if age := now().Sub(cp.Time); age > maxAge {
			klog.FromContext(ctx).Info("Archive checkpoint too old to hold etcd compaction back",
				"revision", cp.Revision, "age", age, "maxAge", maxAge)
			return 0, false, nil
		}
		return cp.Revision + 1, true, nil
	}
}
