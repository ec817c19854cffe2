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
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-events/events-apiserver/pkg/controller"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestHealthChecks checks that the archiver and the etcd compaction it
// holds back run as controllers of the server's one Manager, each with its
// check on /livez, and only when there is an archive.
func TestHealthChecks(t *testing.T) {
	checks := []string{controller.CheckPrefix + "archiver", controller.CheckPrefix + "etcd-compactor"}
	for _, tc := range []struct {
		archive []string
		want    int
	}{
		{archive: archiveArgs(t, "embedded"), want: http.StatusOK},
		{archive: []string{"--archive=none"}, want: http.StatusNotFound},
	} {
		t.Run(tc.archive[0], func(t *testing.T) {
			s := framework.StartServer(t, framework.WithEtcd(framework.StartEtcd(t)), framework.WithEventTTL(time.Hour),
				framework.WithServerArgs(tc.archive...))
			ctx := ctxFor(t)
			c := clientset(t, s.RestConfig, runtime.ContentTypeJSON)
			for _, check := range checks {
				var status int
				body, _ := c.CoreV1().RESTClient().Get().AbsPath("/livez/" + check).Do(ctx).StatusCode(&status).Raw()
				if status != tc.want {
					t.Errorf("/livez/%s: %d %q; want %d", check, status, body, tc.want)
				}
			}
		})
	}
}
