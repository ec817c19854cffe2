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

package history

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestArchiveBackupAndRestore runs the archive's backup of
// docs/operations.md: events archived and expired from the live store, a
// snapshot of every partition through VictoriaLogs'
// /internal/partition/snapshot/create, the snapshots copied (cp -a) in
// place of the partitions of a new data directory, and a VictoriaLogs on
// it: a server reading that archive lists every event's history.
func TestArchiveBackupAndRestore(t *testing.T) {
	dataDir := t.TempDir()
	args := []string{"-retentionPeriod=30d", "-inmemoryDataFlushInterval=1s"}
	url, kill := runVictoriaLogs(t, append(args, "-storageDataPath="+dataDir)...)
	etcd := framework.StartEtcd(t)
	s := framework.StartServer(t, framework.WithEtcd(etcd), framework.WithEventTTL(5*time.Second),
		framework.WithServerArgs("--archive=url", "--archive-url="+url, "--archive-service-flush-interval=1s"))
	ctx := ctxFor(t)
	namespace := namespaceFor(t)
	c := clientset(t, s.RestConfig, runtime.ContentTypeJSON)
	waitCheckpoint(ctx, t, etcd, create(ctx, t, c, namespace, fixtures[:4], 0))
	waitExpired(ctx, t, c, namespace, time.Minute)

	resp, err := http.Post(url+"/internal/partition/snapshot/create", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var snapshots []string
	err = json.NewDecoder(resp.Body).Decode(&snapshots)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(snapshots) == 0 {
		t.Fatalf("snapshot: %s, %v, paths %v", resp.Status, err, snapshots)
	}
	kill()

	// <data>/partitions/<day>/snapshots/<name> in place of
	// <restored>/partitions/<day>.
	restored := t.TempDir()
	for _, snapshot := range snapshots {
		rel, err := filepath.Rel(dataDir, filepath.Dir(filepath.Dir(snapshot)))
		if err != nil {
			t.Fatal(err)
		}
		partition := filepath.Join(restored, rel)
		if err := os.MkdirAll(partition, 0o700); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.CommandContext(ctx, "cp", "-a", snapshot+"/.", partition+"/").CombinedOutput(); err != nil {
			t.Fatalf("cp -a %s: %v: %s", snapshot, err, out)
		}
	}
	restoredURL := startVictoriaLogs(t, append(args, "-storageDataPath="+restored)...)
	reader := framework.StartServer(t, framework.WithEtcd(etcd), framework.WithEventTTL(5*time.Second),
		framework.WithServerArgs("--archive=url", "--archive-url="+restoredURL, "--archive-service-flush-interval=1s"))
	waitHistory(ctx, t, clientset(t, reader.RestConfig, runtime.ContentTypeJSON), namespace, 4, 30*time.Second)
}
