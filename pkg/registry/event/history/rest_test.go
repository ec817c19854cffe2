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
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestRefusedBeforeTheStore checks the answers given before the store or
// the archive is asked anything: 429 with a Retry-After when every slot
// for history lists is taken, 400 for a watch or a delete-collection with
// history terms.
func TestRefusedBeforeTheStore(t *testing.T) {
	full := make(chan struct{}, 1)
	full <- struct{}{}
	// No store and no archive: reaching either would panic.
	r := &REST{clock: clocktesting.NewFakePassiveClock(now), inFlight: full}
	history := &metainternalversion.ListOptions{FieldSelector: fields.ParseSelectorOrDie("involvedObject.name=web-0,history.since=1h")}

	_, err := r.List(context.Background(), history)
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("list with every slot taken: %v, want 429", err)
	}
	if seconds, ok := apierrors.SuggestsClientDelay(err); !ok || seconds != retryAfterSeconds {
		t.Errorf("Retry-After %d (%v), want %d", seconds, ok, retryAfterSeconds)
	}

	for name, call := range map[string]func() error{
		"watch": func() error { _, err := r.Watch(context.Background(), history); return err },
		"delete-collection": func() error {
			_, err := r.DeleteCollection(context.Background(), nil, nil, history)
			return err
		},
		"list with a bad term": func() error {
			_, err := r.List(context.Background(), &metainternalversion.ListOptions{FieldSelector: fields.ParseSelectorOrDie("history.since=soon")})
			return err
		},
	} {
		err := call()
		status, ok := err.(apierrors.APIStatus)
		if !ok || status.Status().Code != http.StatusBadRequest || !strings.Contains(status.Status().Message, "history.since") {
			t.Errorf("%s: %v, want a 400 naming history.since", name, err)
		}
	}
}
