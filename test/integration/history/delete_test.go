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
	"crypto/tls"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-events/events-apiserver/test/harness"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestDeleteFromArchive runs the procedure of docs/security.md for an
// event whose message holds a secret: on an archive secured as the
// manifests secure it (TLS, basic authentication, -delete.enable), a
// delete task with the filter uid:"<uid>" through VictoriaLogs'
// /delete/run_task, waited for on /delete/active_tasks, removes every
// archived state of that event and of no other from the history lists.
func TestDeleteFromArchive(t *testing.T) {
	sec := newArchiveSecurity(t)
	archiveURL := startSecuredVictoriaLogs(t, sec, "-storageDataPath="+t.TempDir(), "-retentionPeriod=30d",
		"-inmemoryDataFlushInterval=1s", "-delete.enable")
	etcd := framework.StartEtcd(t)
	s := framework.StartServer(t, framework.WithEtcd(etcd), framework.WithEventTTL(5*time.Second),
		framework.WithServerArgs("--archive=url", "--archive-url="+archiveURL, "--archive-service-flush-interval=1s",
			"--archive-ca-file="+sec.caFile, "--archive-username="+archiveUser, "--archive-password-file="+sec.passwordFile))
	ctx := ctxFor(t)
	namespace := namespaceFor(t)
	c := clientset(t, s.RestConfig, runtime.ContentTypeJSON)
	waitCheckpoint(ctx, t, etcd, create(ctx, t, c, namespace, fixtures[:4], 0))
	waitExpired(ctx, t, c, namespace, time.Minute)
	waitHistory(ctx, t, c, namespace, 4, 30*time.Second)

	history := func() []eventsv1.Event {
		t.Helper()
		list, err := c.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "history.since=1h"})
		if err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	before := history()
	secret := before[1]

	password, err := os.ReadFile(sec.passwordFile)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: sec.roots, MinVersion: tls.VersionTLS12}}}
	defer client.CloseIdleConnections()
	auth := &http.Request{Header: http.Header{}}
	auth.SetBasicAuth(archiveUser, strings.TrimSpace(string(password)))
	if err := harness.DeleteFromVictoriaLogs(ctx, client, archiveURL, auth.Header, `uid:"`+string(secret.UID)+`"`, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	var after []eventsv1.Event
	if err := waitPoll(ctx, 30*time.Second, func() bool {
		after = history()
		return len(after) == len(before)-1
	}); err != nil {
		t.Fatalf("history after the delete task holds %d events, want %d", len(after), len(before)-1)
	}
	if slices.ContainsFunc(after, func(e eventsv1.Event) bool { return e.UID == secret.UID }) {
		t.Errorf("history still holds %s (uid %s)", secret.Name, secret.UID)
	}
}
