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
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestArchiveDown kills the VictoriaLogs service under a running server
// and checks that the server stays ready and keeps its live API, that a
// history list fails with a clear 503 instead of a short answer, and that
// the events written meanwhile are archived once the service is back.
func TestArchiveDown(t *testing.T) {
	dataDir := t.TempDir()
	args := []string{"-storageDataPath=" + dataDir, "-retentionPeriod=30d", "-inmemoryDataFlushInterval=1s"}
	url, kill := runVictoriaLogs(t, args...)
	etcd := framework.StartEtcd(t)
	s := framework.StartServer(t, framework.WithEtcd(etcd), framework.WithEventTTL(time.Hour),
		framework.WithServerArgs("--archive=url", "--archive-url="+url, "--archive-service-flush-interval=1s"))
	ctx := ctxFor(t)
	namespace := namespaceFor(t)
	c := clientset(t, s.RestConfig, runtime.ContentTypeJSON)
	waitCheckpoint(ctx, t, etcd, create(ctx, t, c, namespace, fixtures[:2], 0))

	kill()
	last := create(ctx, t, c, namespace, fixtures[2:4], 0)
	body, err := c.CoreV1().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil || string(body) != "ok" {
		t.Errorf("/readyz with the archive down: %q, %v; want ok", body, err)
	}
	if list, err := c.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 4 {
		t.Errorf("live list with the archive down: %v items, %v; want 4", len(list.Items), err)
	}
	_, err = c.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "history.since=1h"})
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Code != http.StatusServiceUnavailable || !strings.Contains(status.Status().Message, "history is unavailable") {
		t.Errorf("history list with the archive down: %v; want a 503 saying the history is unavailable", err)
	}

	// Back on the same data: the archiver, which kept retrying, appends
	// what was written meanwhile and moves its checkpoint past it.
	startVictoriaLogs(t, append(args, "-httpListenAddr="+strings.TrimPrefix(url, "http://"))...)
	waitCheckpoint(ctx, t, etcd, last)
	waitHistory(ctx, t, c, namespace, 4, 30*time.Second)
}
