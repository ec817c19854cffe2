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
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"

	"github.com/kube-events/events-apiserver/pkg/archive"
)

// tokenVersion is the format of continueToken.
const tokenVersion = 1

// continueToken is where the next page of a history list starts, and of
// which list: a token replayed against another namespace or query, or
// altered, is refused.
type continueToken struct {
	Version int `json:"v"`
	// Binding is a digest of query.binding.
	Binding []byte `json:"b"`
	// Since and Until are the window of the first page, in Unix
	// nanoseconds: a relative window stays the one the first page read.
	Since int64 `json:"s"`
	Until int64 `json:"u"`
	// Time and UID are the last item returned.
	Time int64  `json:"t"`
	UID  string `json:"id"`
}

// errInvalidToken is returned for a token that is no history token.
var errInvalidToken = errors.New("not a continue token of a history list")

// errTokenBinding is returned for a token of another list.
var errTokenBinding = errors.New("the continue token was issued for another namespace or query")

func digest(binding string) []byte {
	sum := sha256.Sum256([]byte(binding))
	return sum[:16]
}

// encodeToken returns the token continuing q after the item at cursor.
func encodeToken(binding string, q query, cursor archive.Cursor) string {
	data, _ := json.Marshal(continueToken{
		Version: tokenVersion, Binding: digest(binding),
		Since: q.since.UnixNano(), Until: q.until.UnixNano(),
		Time: cursor.Time.UnixNano(), UID: cursor.UID,
	})
	return base64.RawURLEncoding.EncodeToString(data)
}

// decodeToken reads a token, checks it belongs to the list bound by
// binding and returns the window it fixes and the cursor.
func decodeToken(token, binding string) (since, until time.Time, cursor archive.Cursor, err error) {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return since, until, cursor, errInvalidToken
	}
	var t continueToken
	if err := json.Unmarshal(data, &t); err != nil || t.Version != tokenVersion || t.UID == "" {
		return since, until, cursor, errInvalidToken
	}
	if string(t.Binding) != string(digest(binding)) {
		return since, until, cursor, errTokenBinding
	}
	return time.Unix(0, t.Since), time.Unix(0, t.Until), archive.Cursor{Time: time.Unix(0, t.Time), UID: t.UID}, nil
}
