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

package recorder

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
)

// TestClientGoRecorderForComparison runs the hot loop of TestHotLoop with
// client-go's own tools/events recorder, counted at the same proxy, for
// the README's comparison: client-go also turns the loop into a create and
// one patch, but the stored count stays at 2 until its wall-clock
// heartbeat (30m) or final write (6m after the last occurrence), its
// series never says Finished, and it has no fake clock to simulate those.
func TestClientGoRecorderForComparison(t *testing.T) {
	const occurrences = 10000
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			f := newFixture(t, tg)
			client, err := kubernetes.NewForConfig(f.proxy.Config())
			if err != nil {
				t.Fatal(err)
			}
			broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
				t.Fatal(err)
			}
			defer broadcaster.Shutdown()
			rec := broadcaster.NewRecorder(scheme.Scheme, "example.com/client-go")
			pod := f.pod("web-0")
			for range occurrences {
				rec.Eventf(pod, nil, corev1.EventTypeWarning, "BackOff", "Restarting", "Back-off restarting failed container app")
			}
			stored := f.waitStored(t, "client-go's series start", func(s []storedEvent) bool {
				return len(s) == 1 && s[0].Series != nil && s[0].Series.Count >= 2
			})
			t.Logf("client-go tools/events, %d occurrences in a hot loop: API calls at the server %s; stored %+v",
				occurrences, describe(f.eventRequests()), summarize(stored))
			if got := stored[0].Series.State; got == "Finished" {
				t.Errorf("client-go's series is %s, want it never to finish it", got)
			}
		})
	}
}
