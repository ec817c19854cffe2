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

package app

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kube-events/events-apiserver/test/freeport"
)

// TestLivezNamesEveryLoop: a standalone server reports every loop it runs
// on /livez, each with a check of its own, while /readyz stays green. What
// a dead loop turns red is pkg/controller's
// TestHealthChecksReportDeadLoopsByName.
func TestLivezNamesEveryLoop(t *testing.T) {
	kubeconfig, cancel, done := started(t, t.TempDir(), freeport.Port(t))
	defer stop(t, cancel, done)
	url, admin, _ := adminClient(t, kubeconfig)

	loops := []string{"series-state", "eventseries-sweeper", "etcd-maintenance", "leader-election"}
	code, body := do(t, admin, http.MethodGet, url+"/livez?verbose", "")
	if code != http.StatusOK {
		t.Fatalf("/livez of a fresh server: %d\n%s", code, body)
	}
	for _, name := range loops {
		if !strings.Contains(body, "[+]controller/"+name+" ok") {
			t.Errorf("/livez does not report the loop %s:\n%s", name, body)
		}
		if code, body := do(t, admin, http.MethodGet, url+"/livez/controller/"+name, ""); code != http.StatusOK {
			t.Errorf("/livez/controller/%s: %d %s, want 200", name, code, body)
		}
	}
	if code, body := do(t, admin, http.MethodGet, url+"/readyz", ""); code != http.StatusOK {
		t.Errorf("/readyz: %d %s, want 200", code, body)
	}
}
