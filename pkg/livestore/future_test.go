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

package livestore_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
)

// A list at a revision etcd has not reached answers as kube-apiserver's
// etcd storage answers a list of events there: 504 "Too large resource
// version" at once, without a Retry-After, rather than after the cacher's
// 3 s wait with a Retry-After of a second, which client-go follows: a
// list that hung for as long as its client waited. One at a revision
// etcd has answers.
func TestListAtARevisionEtcdHasNotReached(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	created := createPod(ctx, t, env.storage, "ns", "first", "node-1", nil)
	current := rvOf(t, created)
	type answer struct {
		TooLarge   bool
		RetryAfter int32
		Items      int
	}
	for _, tc := range []struct {
		name  string
		rv    uint64
		match metav1.ResourceVersionMatch
		limit int64
		want  answer
	}{
		{name: "not older than, with a limit", rv: current + 1000, match: metav1.ResourceVersionMatchNotOlderThan, limit: 10, want: answer{TooLarge: true}},
		{name: "not older than", rv: current + 1000, match: metav1.ResourceVersionMatchNotOlderThan, want: answer{TooLarge: true}},
		{name: "no match, no limit (not older than)", rv: current + 1000, want: answer{TooLarge: true}},
		{name: "exact, with a limit (etcd's answer)", rv: current + 1000, match: metav1.ResourceVersionMatchExact, limit: 10, want: answer{TooLarge: true}},
		{name: "the store's revision", rv: current, match: metav1.ResourceVersionMatchNotOlderThan, limit: 10, want: answer{Items: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := storage.Everything
			p.Limit = tc.limit
			opts := storage.ListOptions{ResourceVersion: strconv.FormatUint(tc.rv, 10), ResourceVersionMatch: tc.match, Recursive: true, Predicate: p}
			list := &example.PodList{}
			start := time.Now()
			err := env.store.GetList(ctx, resourcePrefix, opts, list)
			took := time.Since(start)
			got := answer{TooLarge: storage.IsTooLargeResourceVersion(err), Items: len(list.Items)}
			var status *apierrors.StatusError
			if errors.As(err, &status) && status.ErrStatus.Details != nil {
				got.RetryAfter = status.ErrStatus.Details.RetryAfterSeconds
			}
			if err != nil && !got.TooLarge {
				t.Fatalf("GetList: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			// The store's wait for a revision is 3 s: the refusal does not wait.
			if took >= 3*time.Second {
				t.Errorf("answered after %v, the wait for a revision", took)
			}
		})
	}
}
