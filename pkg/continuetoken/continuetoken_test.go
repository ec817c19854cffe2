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

package continuetoken

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

type cursor struct {
	Until int64  `json:"u"`
	UID   string `json:"id"`
}

// rewrite decodes a token, lets change alter it, and encodes it again.
func rewrite(t *testing.T, s string, change func(*token)) string {
	t.Helper()
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	var tok token
	if err := json.Unmarshal(data, &tok); err != nil {
		t.Fatal(err)
	}
	change(&tok)
	if data, err = json.Marshal(tok); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(data)
}

// TestDecodeRefusesWhatItDidNotSign checks that a token decodes to its
// payload for the list it was issued for, and is refused when it is
// altered, replayed against another list, signed by another key, or is
// no token, with the API error each deserves.
func TestDecodeRefusesWhatItDidNotSign(t *testing.T) {
	ctx := context.Background()
	key, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	codec := NewWithKey(key)
	binding := []string{"shop", "app=web", "type=Warning", "7d", ""}
	issued, err := codec.Encode(ctx, "history", binding, cursor{Until: 42, UID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var got cursor
	if err := codec.Decode(ctx, "history", binding, issued, &got); err != nil {
		t.Fatalf("decoding the token as issued: %v", err)
	}
	if diff := cmp.Diff(cursor{Until: 42, UID: "a"}, got); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}

	otherKey, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		codec   *Codec
		kind    string
		binding []string
		token   string
		want    error
		status  int32
	}{
		{name: "a window moved in the payload", token: rewrite(t, issued, func(tok *token) { tok.Payload = json.RawMessage(`{"u":1,"id":"a"}`) }),
			want: ErrMismatch, status: 400},
		{name: "another namespace", binding: []string{"bank", "app=web", "type=Warning", "7d", ""}, want: ErrMismatch, status: 400},
		{name: "another selector", binding: []string{"shop", "app=web", "type=Normal", "7d", ""}, want: ErrMismatch, status: 400},
		{name: "another window", binding: []string{"shop", "app=web", "type=Warning", "30d", ""}, want: ErrMismatch, status: 400},
		{name: "terms moved between the parts", binding: []string{"shop", "app=web,type=Warning", "", "7d", ""}, want: ErrMismatch, status: 400},
		{name: "another kind of list", kind: "eventsummaries", want: ErrMismatch, status: 400},
		{name: "a MAC of zeros", token: rewrite(t, issued, func(tok *token) { tok.MAC = make([]byte, len(tok.MAC)) }), want: ErrMismatch, status: 400},
		{name: "signed by a key the server no longer has", codec: NewWithKey(otherKey), want: ErrExpired, status: 410},
		{name: "not base64", token: "not a token!", want: ErrInvalid, status: 400},
		{name: "not JSON", token: base64.RawURLEncoding.EncodeToString([]byte("{")), want: ErrInvalid, status: 400},
		{name: "another version", token: rewrite(t, issued, func(tok *token) { tok.Version = 1 }), want: ErrInvalid, status: 400},
		{name: "without a MAC", token: rewrite(t, issued, func(tok *token) { tok.MAC = nil }), want: ErrInvalid, status: 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			codec, kind, b, s := codec, "history", binding, issued
			if c.codec != nil {
				codec = c.codec
			}
			if c.kind != "" {
				kind = c.kind
			}
			if c.binding != nil {
				b = c.binding
			}
			if c.token != "" {
				s = c.token
			}
			var got cursor
			err := codec.Decode(ctx, kind, b, s, &got)
			if !errors.Is(err, c.want) {
				t.Fatalf("Decode: %v, want %v", err, c.want)
			}
			var status apierrors.APIStatus
			if !errors.As(APIError(err), &status) || status.Status().Code != c.status {
				t.Errorf("API error %v, want code %d", APIError(err), c.status)
			}
		})
	}
}

// TestKeySourceFailureIsUnavailable checks that a key that cannot be read
// fails the list with 503, not a refusal of the token.
func TestKeySourceFailureIsUnavailable(t *testing.T) {
	codec := New(func(context.Context) ([]byte, error) { return nil, errors.New("etcd unreachable") })
	_, err := codec.Encode(context.Background(), "history", nil, cursor{})
	if !apierrors.IsServiceUnavailable(APIError(err)) {
		t.Errorf("Encode with the key unreadable: %v, want 503", APIError(err))
	}
	issued, err := NewWithKey(make([]byte, KeySize)).Encode(context.Background(), "history", nil, cursor{})
	if err != nil {
		t.Fatal(err)
	}
	err = codec.Decode(context.Background(), "history", nil, issued, &cursor{})
	if !apierrors.IsServiceUnavailable(APIError(err)) {
		t.Errorf("Decode with the key unreadable: %v, want 503", APIError(err))
	}
}
