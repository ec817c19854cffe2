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
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestSummarizeDecides checks what Summarize answers before it reads the
// store or the archive: the caller counts the pages itself (false) for a
// list of the live store or with a label selector; the history's refusals
// (400 for a bad term or a cluster-wide unselective week, 429 with every
// slot taken) are the list's.
func TestSummarizeDecides(t *testing.T) {
	full := &slots{byUser: map[string]int{}} // no slot at all
	// No store and no archive: reaching either would panic.
	r := &REST{clock: clocktesting.NewFakePassiveClock(now), inFlight: full}
	tests := []struct {
		name      string
		namespace string
		field     string
		label     string
		wantErr   func(error) bool
	}{
		{name: "the live store's list", namespace: "shop", field: "type=Warning"},
		{name: "a label selector", namespace: "shop", field: "type=Warning,history.since=7d", label: "app=web"},
		{name: "a bad term", namespace: "shop", field: "history.since=soon", wantErr: apierrors.IsBadRequest},
		{name: "a cluster-wide unselective week", field: "type=Warning,history.since=7d", wantErr: apierrors.IsBadRequest},
		{name: "every slot taken", namespace: "shop", field: "history.since=7d", wantErr: apierrors.IsTooManyRequests},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			options := &metainternalversion.ListOptions{FieldSelector: fields.ParseSelectorOrDie(tc.field)}
			if tc.label != "" {
				options.LabelSelector = labels.SelectorFromSet(labels.Set{"app": "web"})
			}
			ctx := genericapirequest.WithNamespace(context.Background(), tc.namespace)
			_, ok, err := r.Summarize(ctx, options)
			if tc.wantErr != nil {
				if !tc.wantErr(err) {
					t.Errorf("Summarize: %v, want the list's error", err)
				}
				return
			}
			if diff := cmp.Diff(false, ok); diff != "" || err != nil {
				t.Errorf("Summarize: %v (-want +got ok):\n%s", err, diff)
			}
		})
	}
}
