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
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-events/events-apiserver/test/harness"
)

// TestCompactionHold checks what the checkpoint holds compaction back to:
// the revision after it, while it is younger than the bound.
func TestCompactionHold(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		checkpoint *Checkpoint
		want       int64
		held       bool
	}{
		{name: "no checkpoint: nothing archived yet, nothing held"},
		{name: "a fresh checkpoint holds", checkpoint: &Checkpoint{Revision: 41, Time: now.Add(-time.Minute)}, want: 42, held: true},
		{name: "an hour old still holds", checkpoint: &Checkpoint{Revision: 41, Time: now.Add(-DefaultMaxHold)}, want: 42, held: true},
		{name: "older than the bound holds nothing", checkpoint: &Checkpoint{Revision: 41, Time: now.Add(-DefaultMaxHold - time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			client := startEtcd(t)
			if tc.checkpoint != nil {
				if err := checkpoints.Write(ctx, client, *tc.checkpoint); err != nil {
					t.Fatal(err)
				}
			}
			got, held, err := CompactionHold(client, DefaultMaxHold, func() time.Time { return now })(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || held != tc.held {
				t.Errorf("hold %d, %v; want %d, %v", got, held, tc.want, tc.held)
			}
		})
	}
}

// startEtcd runs the envtest etcd for the test and returns a client of it.
func startEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	etcd := harness.StartTestEtcd(t)
	c, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
