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

package ancestry

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
)

// Sealer tells the chains the server set from those another writer did.
// Where kube-apiserver writes events into the server's etcd (offload and
// takeover), a client of kube-apiserver can write the chain annotations
// too, past the strategy that owns them. The server seals each chain it
// sets: the ownerchain.SealAnnotation holds an HMAC-SHA256, under a key of
// the install, over the event's namespace and UID, its regarding object
// and its chain annotations; a chain without a seal that verifies is
// another writer's, and is resolved again.
type Sealer struct {
	key func(ctx context.Context) ([]byte, error)
}

// NewSealer returns a sealer whose key derives from the install's key,
// which key returns (the same on every replica).
func NewSealer(key func(ctx context.Context) ([]byte, error)) *Sealer {
	return &Sealer{key: key}
}

// sealContext separates the seal's key from the other uses of the
// install's key.
const sealContext = "kube-events.io/regarding-ancestors-seal"

// mac is the seal of event's chain annotations, as they are.
func (s *Sealer) mac(ctx context.Context, event *core.Event) ([]byte, error) {
	key, err := s.key(ctx)
	if err != nil {
		return nil, err
	}
	derive := hmac.New(sha256.New, key)
	derive.Write([]byte(sealContext))
	h := hmac.New(sha256.New, derive.Sum(nil))
	regarding := event.InvolvedObject
	var buf []byte
	for _, field := range []string{
		event.Namespace, string(event.UID),
		regarding.APIVersion, regarding.Kind, regarding.Namespace, regarding.Name, string(regarding.UID),
		event.Annotations[ownerchain.Annotation], event.Annotations[ownerchain.PendingAnnotation],
	} {
		buf = binary.AppendUvarint(buf[:0], uint64(len(field)))
		h.Write(buf)
		h.Write([]byte(field))
	}
	return h.Sum(nil)[:16], nil
}

// Seal sets event's ownerchain.SealAnnotation to the seal of its chain
// annotations, or removes it when it carries none. Call it once the UID
// is set.
func (s *Sealer) Seal(ctx context.Context, event *core.Event) error {
	if !carriesChain(event) {
		delete(event.Annotations, ownerchain.SealAnnotation)
		return nil
	}
	mac, err := s.mac(ctx, event)
	if err != nil {
		return err
	}
	event.Annotations[ownerchain.SealAnnotation] = base64.RawURLEncoding.EncodeToString(mac)
	return nil
}

// Trusts tells whether the chain annotations event carries are the
// server's: it carries none, or they are sealed. A nil Sealer (every write
// goes through the strategy) trusts every event; a key that cannot be read
// trusts none.
func (s *Sealer) Trusts(ctx context.Context, event *core.Event) bool {
	if s == nil || !carriesChain(event) {
		return true
	}
	seal, err := base64.RawURLEncoding.DecodeString(event.Annotations[ownerchain.SealAnnotation])
	if err != nil || len(seal) == 0 {
		return false
	}
	mac, err := s.mac(ctx, event)
	return err == nil && hmac.Equal(seal, mac)
}

// carriesChain tells whether event carries a chain or a pending mark.
func carriesChain(event *core.Event) bool {
	_, chain := event.Annotations[ownerchain.Annotation]
	return chain || ownerchain.IsPending(event.Annotations)
}
