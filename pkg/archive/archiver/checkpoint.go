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
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"

	"github.com/kube-events/events-apiserver/pkg/archive/revision"
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
// or before Revision is in the archive. The archiver rewrites it while it
// runs, even idle, so that its age tells a live archiver from a dead one.
type Checkpoint = revision.Mark

// checkpoints is where the checkpoint is kept.
var checkpoints = revision.Store{Key: CheckpointKey, Name: "archive checkpoint"}

// ReadCheckpoint returns the checkpoint kept in kv (a client under the
// storage prefix), and false if there is none.
func ReadCheckpoint(ctx context.Context, kv clientv3.KV) (Checkpoint, bool, error) {
	return checkpoints.Read(ctx, kv)
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
