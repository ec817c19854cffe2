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

package storage

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

// A page of history that takes its time reading the timeline does not hold
// the feed back: the feed's changes reach the timeline meanwhile, and the
// page reads the timeline as it was when it began.
func TestNewestDoesNotHoldTheFeed(t *testing.T) {
	timeline := NewTimeline()
	timeline.feed(nil, nil, true)
	base := time.Now()
	event := func(i int) *core.Event {
		name := fmt.Sprintf("e-%d", i)
		return &core.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: strconv.Itoa(i + 1)},
			EventTime:  metav1.NewMicroTime(base.Add(time.Duration(i) * time.Second)),
		}
	}
	for i := range 3 {
		timeline.observe(watch.Event{Type: watch.Added, Object: event(i)})
	}
	visiting, release := make(chan struct{}), make(chan struct{})
	var seen []string
	walked := make(chan error, 1)
	go func() {
		walked <- timeline.Newest(t.Context(), "ns", Position{Time: base.Add(time.Hour)}, func(e *core.Event) bool {
			if len(seen) == 0 {
				close(visiting)
				<-release
			}
			seen = append(seen, e.Name)
			return true
		})
	}()
	<-visiting
	observed := make(chan struct{})
	go func() {
		timeline.observe(watch.Event{Type: watch.Added, Object: event(3)})
		close(observed)
	}()
	select {
	case <-observed:
	case <-time.After(wait.ForeverTestTimeout):
		t.Fatal("the feed waited for a page of history")
	}
	close(release)
	if err := <-walked; err != nil {
		t.Fatal(err)
	}
	if want := []string{"e-2", "e-1", "e-0"}; fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("the page read %v, want %v (the timeline when it began)", seen, want)
	}
	if got := timeline.Len(); got != 4 {
		t.Errorf("timeline holds %d events, want 4", got)
	}
}
