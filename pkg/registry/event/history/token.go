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
	"time"

	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/continuetoken"
)

// tokenKind names history lists among the lists whose tokens the codec
// signs.
const tokenKind = "history"

// cursorToken is where the next page of a history list starts: the
// window of the first page, so that a relative window stays the one the
// first page read, and the last item returned. The codec signs it with
// query.binding.
type cursorToken struct {
	// Since and Until are the window, in Unix nanoseconds.
	Since int64 `json:"s"`
	Until int64 `json:"u"`
	// Time and UID are the last item returned.
	Time int64  `json:"t"`
	UID  string `json:"id"`
}

// encodeToken returns the token continuing q, bound by binding, after the
// item at cursor.
func (r *REST) encodeToken(ctx context.Context, binding []string, q query, cursor archive.Cursor) (string, error) {
	return r.tokens.Encode(ctx, tokenKind, binding, cursorToken{
		Since: q.since.UnixNano(), Until: q.until.UnixNano(),
		Time: cursor.Time.UnixNano(), UID: cursor.UID,
	})
}

// decodeToken checks a token belongs to the list bound by binding and
// returns the window it fixes and the cursor; its errors are
// continuetoken's.
func (r *REST) decodeToken(ctx context.Context, token string, binding []string) (since, until time.Time, cursor archive.Cursor, err error) {
	var t cursorToken
	if err := r.tokens.Decode(ctx, tokenKind, binding, token, &t); err != nil {
		return since, until, cursor, err
	}
	if t.UID == "" {
		return since, until, cursor, continuetoken.ErrInvalid
	}
	return time.Unix(0, t.Since), time.Unix(0, t.Until), archive.Cursor{Time: time.Unix(0, t.Time), UID: t.UID}, nil
}
