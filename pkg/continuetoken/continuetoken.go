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

// Package continuetoken signs and checks the continue tokens of the lists
// the server computes (history pages, event summaries): a token carries
// where the next page starts, and an HMAC (SHA-256) over that, the list's
// kind and what the list was asked (namespace, selectors, window), under a
// key every replica shares. A token altered, or replayed against another
// namespace, selector or window, is refused; one signed by a key the
// server no longer has has expired, as kube's continue tokens do when etcd
// has compacted their revision.
package continuetoken

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// KeySize is the size of a signing key, that of SHA-256's output.
const KeySize = sha256.Size

// version is the format of token.
const version = 2

// token is a continue token on the wire, base64url of its JSON.
type token struct {
	Version int `json:"v"`
	// KeyID names the key that signed it (keyID).
	KeyID []byte `json:"k"`
	// Payload is the list's own state: where the next page starts.
	Payload json.RawMessage `json:"p"`
	// MAC is the HMAC of the key over the kind, the binding and Payload.
	MAC []byte `json:"m"`
}

var (
	// ErrInvalid is a token that is no continue token of the list's kind.
	ErrInvalid = errors.New("not a continue token of this list")
	// ErrMismatch is a token altered, or issued for another list.
	ErrMismatch = errors.New("the continue token was altered, or issued for another namespace or query (its selectors and window)")
	// ErrExpired is a token signed with a key the server no longer has.
	ErrExpired = errors.New("the continue token was signed with a key this server no longer has: list again without it")
)

// KeySource returns the key that signs tokens; the same on every replica.
type KeySource func(ctx context.Context) ([]byte, error)

// Codec signs and checks continue tokens with the key of its source.
type Codec struct {
	key KeySource
}

// New returns a codec signing with the key of source.
func New(source KeySource) *Codec {
	return &Codec{key: source}
}

// NewWithKey returns a codec signing with key.
func NewWithKey(key []byte) *Codec {
	return New(func(context.Context) ([]byte, error) { return key, nil })
}

// NewKey returns a random key.
func NewKey() ([]byte, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generating a continue token key: %w", err)
	}
	return key, nil
}

// keyID names key in the tokens it signs, so that a token of another key
// is told from an altered one.
func keyID(key []byte) []byte {
	sum := sha256.Sum256(append([]byte("events-apiserver continue token key\x00"), key...))
	return sum[:4]
}

// mac is the HMAC of key over kind, binding and payload, each length
// prefixed, so that no two lists sign the same bytes.
func mac(key []byte, kind string, binding []string, payload []byte) []byte {
	h := hmac.New(sha256.New, key)
	write := func(b []byte) {
		h.Write(binary.AppendUvarint(nil, uint64(len(b))))
		h.Write(b)
	}
	write([]byte(kind))
	h.Write(binary.AppendUvarint(nil, uint64(len(binding))))
	for _, b := range binding {
		write([]byte(b))
	}
	write(payload)
	return h.Sum(nil)
}

// Encode returns the token of payload (JSON encoded) for a list of kind
// asked binding: the namespace, selectors and window that its next pages
// must be asked again.
func (c *Codec) Encode(ctx context.Context, kind string, binding []string, payload any) (string, error) {
	key, err := c.key(ctx)
	if err != nil {
		return "", err
	}
	data, err := json.Marshal(payload)
	if err != nil {
		return "", err
	}
	data, err = json.Marshal(token{Version: version, KeyID: keyID(key), Payload: data, MAC: mac(key, kind, binding, data)})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(data), nil
}

// Decode checks that s is a token the codec signed for a list of kind
// asked binding, and reads its payload into payload. Its errors are
// ErrInvalid, ErrMismatch, ErrExpired, or the key source's.
func (c *Codec) Decode(ctx context.Context, kind string, binding []string, s string, payload any) error {
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return ErrInvalid
	}
	var t token
	if err := json.Unmarshal(data, &t); err != nil || t.Version != version || len(t.MAC) == 0 {
		return ErrInvalid
	}
	key, err := c.key(ctx)
	if err != nil {
		return err
	}
	if !bytes.Equal(t.KeyID, keyID(key)) {
		return ErrExpired
	}
	if !hmac.Equal(t.MAC, mac(key, kind, binding, t.Payload)) {
		return ErrMismatch
	}
	if err := json.Unmarshal(t.Payload, payload); err != nil {
		return ErrInvalid
	}
	return nil
}

// APIError is the API error of a token refused by Decode: 400 naming the
// continue parameter, 410 for an expired token (as kube answers a token
// whose revision etcd has compacted), 503 when the key cannot be read.
func APIError(err error) error {
	switch {
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrMismatch):
		return apierrors.NewBadRequest("continue: " + err.Error())
	case errors.Is(err, ErrExpired):
		return apierrors.NewResourceExpired("continue: " + err.Error())
	default:
		return apierrors.NewServiceUnavailable(fmt.Sprintf("continue: reading the key of continue tokens: %v", err))
	}
}
