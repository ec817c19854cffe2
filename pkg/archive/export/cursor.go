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

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kube-events/events-apiserver/pkg/archive/revision"
)

// CursorKey is where the export keeps its cursor, under the storage prefix
// beside the archive checkpoint (archiver.CheckpointKey).
const CursorKey = "/events-apiserver/export/cursor"

// Cursor is how far the export has gone: every archived state written at
// or before Revision has been taken by the receiver (or left out by the
// selection).
type Cursor = revision.Mark

// cursors is where the cursor is kept.
var cursors = revision.Store{Key: CursorKey, Name: "export cursor"}

// ReadCursor returns the cursor kept in kv (a client under the storage
// prefix), and false if there is none.
func ReadCursor(ctx context.Context, kv clientv3.KV) (Cursor, bool, error) {
	return cursors.Read(ctx, kv)
}
