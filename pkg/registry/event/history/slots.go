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
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// slots are the history lists (and summaries) a replica answers at once:
// MaxInFlight in all, MaxInFlightPerUser of them for one user, so that a
// user who floods the history leaves the other slots to everyone else.
type slots struct {
	mu     sync.Mutex
	total  int
	byUser map[string]int
	// max and maxPerUser are MaxInFlight and MaxInFlightPerUser.
	max, maxPerUser int
}

func newSlots() *slots {
	return &slots{byUser: map[string]int{}, max: MaxInFlight, maxPerUser: MaxInFlightPerUser}
}

// acquire takes a slot for the request's user and returns its release, or
// a 429 with a Retry-After when the user's share or every slot is taken.
func (s *slots) acquire(ctx context.Context) (func(), error) {
	name := ""
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		name = u.GetName()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.byUser[name] >= s.maxPerUser:
		return nil, apierrors.NewTooManyRequests(fmt.Sprintf("too many history lists in flight for user %q "+
			"(at most %d of a user's at once); retry shortly", name, s.maxPerUser), retryAfterSeconds)
	case s.total >= s.max:
		return nil, apierrors.NewTooManyRequests("too many history lists in flight; retry shortly", retryAfterSeconds)
	}
	s.total++
	s.byUser[name]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.total--
		if s.byUser[name]--; s.byUser[name] == 0 {
			delete(s.byUser, name)
		}
	}, nil
}
