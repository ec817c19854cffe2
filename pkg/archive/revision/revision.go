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

// Package revision keeps how far a follower of the events prefix has gone:
// one etcd revision under one key, written by the elected replica only. The
// archive checkpoint and the export cursor are both such marks.
package revision

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Mark is a revision reached, and when it was written.
type Mark struct {
	// Revision is the etcd revision (an event's resourceVersion) that
	// everything at or before it has been handled up to.
	Revision int64 `json:"revision"`
	// Time is when the mark was written; a writer that rewrites it while
	// idle lets its age tell a live follower from a dead one.
	Time time.Time `json:"time"`
}

// Store keeps one Mark at Key in etcd, for a client under the storage
// prefix.
type Store struct {
	// Key is where the mark is kept, under the storage prefix.
	Key string
	// Name names the mark in errors ("archive checkpoint").
	Name string
}

// Read returns the mark kept in kv, and false if there is none.
func (s Store) Read(ctx context.Context, kv clientv3.KV) (Mark, bool, error) {
	resp, err := kv.Get(ctx, s.Key)
	if err != nil {
		return Mark{}, false, fmt.Errorf("reading the %s: %w", s.Name, err)
	}
	if len(resp.Kvs) == 0 {
		return Mark{}, false, nil
	}
	var m Mark
	if err := json.Unmarshal(resp.Kvs[0].Value, &m); err != nil {
		return Mark{}, false, fmt.Errorf("decoding the %s %q: %w", s.Name, resp.Kvs[0].Value, err)
	}
	return m, true, nil
}

// Write stores m in kv. The server's clients fence it
// (leaderelection.NewKV): under the election's term, as the controllers
// run, it is applied only while this replica leads, so that a leader paused
// past its lease cannot move the mark back on resuming.
func (s Store) Write(ctx context.Context, kv clientv3.KV, m Mark) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, s.Key, string(data)); err != nil {
		return fmt.Errorf("writing the %s: %w", s.Name, err)
	}
	return nil
}
