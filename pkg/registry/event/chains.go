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

package event

import (
	"context"

	"github.com/kube-events/events-apiserver/pkg/ancestry"
	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
)

// ChainResolver finds the chain of controller owners of the object an
// event is about; it never fails, and returns what it could resolve.
// *ancestry.Resolver is one.
type ChainResolver interface {
	Resolve(ctx context.Context, regarding ancestry.Reference) ancestry.Chain
}

// stripChain drops what a client sent in the annotations the server owns.
func stripChain(event *core.Event) {
	delete(event.Annotations, ownerchain.Annotation)
	delete(event.Annotations, ownerchain.PendingAnnotation)
	delete(event.Annotations, ownerchain.SealAnnotation)
}

// ResolveChain sets a new event's chain to what the resolver finds, sealed
// where others write the same etcd; the store calls it once the create
// passed validation and admission, so that a refused create costs no read.
// Nothing without a resolver. It fails only when the seal's key cannot be
// read.
func (s Strategy) ResolveChain(ctx context.Context, event *core.Event) error {
	if s.chains == nil {
		return nil
	}
	ancestry.SetChain(event, s.chains.Resolve(ctx, ancestry.RegardingReference(event)))
	if s.seals == nil {
		return nil
	}
	return s.seals.Seal(ctx, event)
}

// keepChain keeps the chain an updated event was stored with, whatever the
// update carries: the chain is resolved once, when the event is first
// stored, and holds even when the owners are gone. An event stored with
// none (before the server resolved chains, or about an object without
// owners), with a pending one, or with one the server did not seal (another
// writer's, see WithChainSealer) is resolved again, as a new event is, once
// the update passed validation and admission (ResolveUpdatedChain); until
// then it carries none of what the update sent.
func (s Strategy) keepChain(ctx context.Context, event, old *core.Event) {
	if s.needsChain(ctx, old) {
		stripChain(event)
		return
	}
	delete(event.Annotations, ownerchain.PendingAnnotation)
	delete(event.Annotations, ownerchain.SealAnnotation)
	for _, key := range []string{ownerchain.Annotation, ownerchain.SealAnnotation} {
		if value, ok := old.Annotations[key]; ok {
			if event.Annotations == nil {
				event.Annotations = map[string]string{}
			}
			event.Annotations[key] = value
		}
	}
}

// ResolveUpdatedChain resolves the chain of an updated event whose stored
// state (old) had none, a pending one or another writer's; the store calls
// it once the update passed validation and admission, so that a refused
// update costs no read. The resolver's cache makes asking again cheap.
func (s Strategy) ResolveUpdatedChain(ctx context.Context, event, old *core.Event) error {
	if s.needsChain(ctx, old) {
		return s.ResolveChain(ctx, event)
	}
	return nil
}

// needsChain tells whether a stored event is to be given its chain again:
// it has none, a pending one, or one the server did not seal.
func (s Strategy) needsChain(ctx context.Context, stored *core.Event) bool {
	return ownerchain.NeedsChain(stored.Annotations) || !s.seals.Trusts(ctx, stored)
}
