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
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kube-events/events-apiserver/pkg/apiserver"
	"github.com/kube-events/events-apiserver/test/freeport"
)

// TestKilledLoopTurnsLivezRedWithItsName: a standalone server reports every
// loop it runs on /livez; killing one (the controller manager's test hook)
// turns /livez red naming that loop, and only that loop, while /readyz,
// which a dead loop does not concern, stays green. Both kinds of loop are
// killed in turn: one run under the election, one run on every replica.
func TestKilledLoopTurnsLivezRedWithItsName(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	o := parse(t, "--data-dir="+t.TempDir(), "--secure-port="+strconv.Itoa(freeport.Port(t)), "--embedded-etcd-log-level=error")
	built := make(chan *apiserver.EventsServer, 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, func(s *apiserver.EventsServer) { built <- s }) }()
	select {
	case <-o.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("Run returned before ready: %v", err)
	case <-time.After(90 * time.Second):
		cancel()
		t.Fatal("server not ready in 90s")
	}
	defer stop(t, cancel, done)
	server := <-built
	url, admin, _ := adminClient(t, o.KubeconfigPath())

	loops := []string{"series-state", "eventseries-sweeper", "etcd-maintenance", "leader-election"}
	if code, body := do(t, admin, http.MethodGet, url+"/livez?verbose", ""); code != http.StatusOK {
		t.Fatalf("/livez of a fresh server: %d\n%s", code, body)
	} else {
		for _, name := range loops {
			if !strings.Contains(body, "[+]controller/"+name+" ok") {
				t.Errorf("/livez does not report the loop %s:\n%s", name, body)
			}
		}
	}

	var dead []string
	for _, victim := range []string{"series-state", "etcd-maintenance"} {
		// The elected loops start once this replica won the election.
		err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return server.Controllers.Kill(victim), nil
		})
		if err != nil {
			t.Fatalf("the loop %s never ran: %v", victim, err)
		}
		dead = append(dead, victim)
		var code int
		var body string
		err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			code, body = do(t, admin, http.MethodGet, url+"/livez?verbose", "")
			return code == http.StatusInternalServerError && strings.Contains(body, "[-]controller/"+victim+" failed"), nil
		})
		if err != nil {
			t.Fatalf("/livez after killing %s: %d\n%s", victim, code, body)
		}
		for _, name := range loops {
			want := "[+]controller/" + name + " ok"
			for _, d := range dead {
				if d == name {
					want = "[-]controller/" + name + " failed"
				}
			}
			if !strings.Contains(body, want) {
				t.Errorf("/livez after killing %v lacks %q:\n%s", dead, want, body)
			}
		}
		if code, body := do(t, admin, http.MethodGet, url+"/livez/controller/"+victim, ""); code != http.StatusInternalServerError {
			t.Errorf("/livez/controller/%s: %d %s, want 500", victim, code, body)
		}
		if code, body := do(t, admin, http.MethodGet, url+"/readyz", ""); code != http.StatusOK {
			t.Errorf("/readyz with a dead loop: %d %s, want 200", code, body)
		}
	}
}
