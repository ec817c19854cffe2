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

// Package event is the registry of the internal Event: the strategy that
// validates and prepares writes, the selectable fields that list and watch
// filter on, the table printer, and the etcd-backed store with a TTL. One
// store serves core/v1, events.k8s.io/v1beta1 and events.k8s.io/v1.
package event

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/kube-events/events-apiserver/pkg/ancestry"
	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/apis/core/validation"
)

// Strategy is the create, update and delete logic for events. Validation
// depends on the API version of the request (events.k8s.io writes are held
// to the stricter rules of that API), which it reads from the request info.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	// chains resolves the chain of controller owners of an event's
	// regarding object (see chains.go); nil without a cluster to read it
	// from (standalone), where events carry no chain.
	chains ChainResolver
	// seals seals the chains set here and tells them from those other
	// writers set (see chains.go); nil where every write goes through
	// this strategy.
	seals *ancestry.Sealer
}

var (
	_ rest.RESTCreateStrategy = Strategy{}
	_ rest.RESTUpdateStrategy = Strategy{}
	_ rest.RESTDeleteStrategy = Strategy{}
)

// NewStrategy returns the event strategy for the given scheme.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
}

// NamespaceScoped is true: events live in the namespace of what they are about.
func (Strategy) NamespaceScoped() bool { return true }

// DefaultGarbageCollectionPolicy: events are not garbage collected through
// owner references; they expire through their TTL.
func (Strategy) DefaultGarbageCollectionPolicy(context.Context) rest.GarbageCollectionPolicy {
	return rest.Unsupported
}

// WithChainResolver returns the strategy that sets the chain of controller
// owners of new events' regarding objects with chains.
func (s Strategy) WithChainResolver(chains ChainResolver) Strategy {
	s.chains = chains
	return s
}

// WithChainSealer returns the strategy that seals the chains it sets with
// seals, and resolves again a stored chain whose seal does not verify:
// where kube-apiserver writes events into the same etcd (offload,
// takeover).
func (s Strategy) WithChainSealer(seals *ancestry.Sealer) Strategy {
	s.seals = seals
	return s
}

// PrepareForCreate leaves a new event as sent (an event has no status and
// no spec/status split, and the server-owned metadata is set by the generic
// registry), except for the managed fields of plain writes (see
// keepAppliedFields) and the chain of controller owners, which the server
// owns: what the client sent in it is dropped, and the store resolves it
// once the create passed validation and admission (ResolveChain).
func (s Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	event := obj.(*core.Event)
	keepAppliedFields(event)
	stripChain(event)
}

// PrepareForUpdate keeps the stored series state when an update of a
// series carries none: a client that does not know the field (an older
// client, one that drops unknown fields on a round trip) does not reset it.
// An in-process write that carries none (the mirror's copy of what
// kube-apiserver, which knows no state, stored) keeps only a Finished
// state, which is final; otherwise the state is left unset for the series
// state controller to judge the write, as the EventSeries plugin judges a
// client's (a final write finishes the series). It drops the managed fields
// of plain writes (see keepAppliedFields) and keeps the stored chain of
// controller owners (see keepChain; the store resolves a missing or
// pending one once the update passed validation and admission,
// ResolveUpdatedChain). Everything else is left as sent;
// which fields may change is the business of ValidateUpdate.
func (s Strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	newEvent, oldEvent := obj.(*core.Event), old.(*core.Event)
	if newEvent.Series != nil && newEvent.Series.State == "" && oldEvent.Series != nil &&
		(!IsInternalWrite(ctx) || oldEvent.Series.State == core.EventSeriesStateFinished) {
		newEvent.Series.State = oldEvent.Series.State
	}
	keepAppliedFields(newEvent)
	s.keepChain(ctx, newEvent, oldEvent)
}

// keepAppliedFields drops the managedFields entries of Update operations
// (creates, updates and patches) and keeps those of server-side apply.
// Recorders write events with plain creates and patches, so nearly every
// event would otherwise carry an entry (about 0.5 KiB in the store's cache
// and in etcd) that tracks ownership of fields that, once written, never
// change (ValidateUpdate). What such entries are for is conflict detection
// for a later applier, who now takes over those fields without a conflict;
// appliers keep their own entries, so apply still removes what an applier
// stops applying.
func keepAppliedFields(event *core.Event) {
	if len(event.ManagedFields) == 0 {
		return
	}
	applied := event.ManagedFields[:0]
	for _, entry := range event.ManagedFields {
		if entry.Operation == metav1.ManagedFieldsOperationApply {
			applied = append(applied, entry)
		}
	}
	if len(applied) == 0 {
		applied = nil
	}
	event.ManagedFields = applied
}

// Validate validates a new event against the rules of the request's API version.
func (Strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateEventCreate(obj.(*core.Event), requestGroupVersion(ctx))
}

// WarningsOnCreate returns no warnings.
func (Strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// Canonicalize clears the internal-only DeprecatedHost, which validation has
// by now required to be empty, so that it can never reach storage.
func (Strategy) Canonicalize(obj runtime.Object) {
	obj.(*core.Event).DeprecatedHost = ""
}

// AllowCreateOnUpdate is true, as for kube-apiserver's events: a PUT of an
// event that does not exist creates it.
func (Strategy) AllowCreateOnUpdate(context.Context) bool { return true }

// ValidateUpdate validates an update against the rules of the request's API
// version, the series state machine included: in-process writers
// (InternalWriteContext) meet it as clients do.
func (Strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateEventUpdate(obj.(*core.Event), old.(*core.Event), requestGroupVersion(ctx))
}

// WarningsOnUpdate returns no warnings.
func (Strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// AllowUnconditionalUpdate is true: an update without a resourceVersion
// overwrites, as client-go's legacy event recorder expects.
func (Strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

// requestGroupVersion is the group and version the request was made in, or
// the zero value outside of a request.
func requestGroupVersion(ctx context.Context) schema.GroupVersion {
	if info, ok := genericapirequest.RequestInfoFrom(ctx); ok {
		return schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
	}
	return schema.GroupVersion{}
}
