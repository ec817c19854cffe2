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
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-events/events-apiserver/pkg/controller"
	"github.com/kube-events/events-apiserver/test/freeport"
	"github.com/kube-events/events-apiserver/test/integration/framework"
)

// TestHealthChecks checks that the archiver and the etcd compaction it
// holds back run as controllers of the server's one Manager, each with its
// check on /livez and on /dependencyz, and only when there is an archive.
func TestHealthChecks(t *testing.T) {
	var checks []string
	for _, path := range []string{"/livez/", controller.DependencyPath + "/"} {
		checks = append(checks, path+controller.CheckPrefix+"archiver", path+controller.CheckPrefix+"etcd-compactor")
	}
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
				if status, body := get(ctx, c, check); status != tc.want {
					t.Errorf("%s: %d %q; want %d", check, status, body, tc.want)
				}
			}
		})
	}
}

// TestArchiveUnreachableIsNotLiveness runs the server with an archive
// nothing listens on and a progress deadline of 2 s: the archiver, which
// has events to archive and cannot, keeps retrying and reports the outage
// on /dependencyz/controller/archiver, while /livez stays ok for ten
// deadlines of the outage (a restart would not bring the archive back), and
// /readyz and the live API with it.
func TestArchiveUnreachableIsNotLiveness(t *testing.T) {
	const deadline = 2 * time.Second
	url := fmt.Sprintf("http://127.0.0.1:%d", freeport.Port(t))
	s := framework.StartServer(t, framework.WithEtcd(framework.StartEtcd(t)), framework.WithEventTTL(time.Hour),
		framework.WithServerArgs("--archive=url", "--archive-url="+url, "--controller-progress-deadline="+deadline.String()))
	ctx := ctxFor(t)
	namespace := namespaceFor(t)
	c := clientset(t, s.RestConfig, runtime.ContentTypeJSON)
	create(ctx, t, c, namespace, fixtures[:2], 0)

	archiver := controller.DependencyPath + "/" + controller.CheckPrefix + "archiver"
	var status int
	var body string
	if err := waitPoll(ctx, time.Minute, func() bool {
		status, body = get(ctx, c, archiver)
		return status == http.StatusInternalServerError
	}); err != nil {
		t.Fatalf("%s with the archive unreachable: %d %q; want 500", archiver, status, body)
	}
	outage := time.Now()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for ; time.Since(outage) < 10*deadline; <-tick.C {
		for _, path := range []string{"/livez", "/readyz"} {
			if status, body := get(ctx, c, path+""); status != http.StatusOK {
				t.Fatalf("%s %v into the archive's outage (progress deadline %v): %d\n%s", path, time.Since(outage).Round(time.Second), deadline, status, body)
			}
		}
		if status, body := get(ctx, c, controller.DependencyPath+""); status != http.StatusInternalServerError ||
			!strings.Contains(body, controller.CheckPrefix+"archiver failed") {
			t.Fatalf("%s %v into the archive's outage: %d, want 500 naming the archiver\n%s", controller.DependencyPath, time.Since(outage).Round(time.Second), status, body)
		}
	}
	if _, err := c.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("live list with the archive unreachable: %v", err)
	}
}

// get returns the status code and the verbose body of a health path,
// through c's client credentials.
func get(ctx context.Context, c kubernetes.Interface, path string) (int, string) {
	body, err := c.CoreV1().RESTClient().Get().AbsPath(path).Param("verbose", "").DoRaw(ctx)
	if status, ok := err.(apierrors.APIStatus); ok {
		// A failing check: the client makes its answer an error.
		return int(status.Status().Code), status.Status().Message
	}
	if err != nil {
		return 0, err.Error()
	}
	return http.StatusOK, string(body)
}
