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

// Package storage is the etcd-backed store of events: the registry store
// with a TTL, its storage codec that interns repeating strings, the packed
// selectable field sets and indexes of the store's cache, the folding of
// isomorphic creates, and the context of the server's own writes. One store
// serves core/v1, events.k8s.io/v1beta1 and events.k8s.io/v1; its strategy
// is pkg/registry/event's.
package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"k8s.io/utils/clock"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
)

// REST is the events store: a generic registry store of the internal Event,
// keyed and encoded as core/v1 events, in which every create and update
// puts the object under an etcd lease of the configured TTL, and whose
// storage folds isomorphic creates of hot series when folding is on.
type REST struct {
	*genericregistry.Store
	strategy eventregistry.Strategy
	// folder folds isomorphic creates; nil when folding is off.
	folder *Folder
}

var (
	_ rest.ShortNamesProvider   = &REST{}
	_ rest.SingularNameProvider = &REST{}
	_ rest.StandardStorage      = &REST{}
)

// NewREST returns the events store, which validates and prepares writes
// with strategy (NewStrategy, with a chain resolver in a cluster), over the
// storage options assemble (pipeline.build). options.TTL is rounded down to
// whole seconds, the granularity of etcd leases. With options.Folding, the
// store folds isomorphic creates of hot series (Folder); the server must
// run the store's Folder, whose end writes the folded counts still in
// memory.
func NewREST(strategy eventregistry.Strategy, options Options) (*REST, error) {
	return newREST(strategy, options, clock.RealClock{})
}

func newREST(strategy eventregistry.Strategy, options Options, clk clock.WithDelayedExecution) (*REST, error) {
	ttlFunc, err := TTLFunc(options.TTL)
	if err != nil {
		return nil, err
	}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &core.Event{} },
		NewListFunc:               func() runtime.Object { return &core.EventList{} },
		PredicateFunc:             Matcher,
		TTLFunc:                   ttlFunc,
		DefaultQualifiedResource:  core.Resource("events"),
		SingularQualifiedResource: core.Resource("event"),

		CreateStrategy: strategy,
		UpdateStrategy: strategy,
		DeleteStrategy: strategy,

		TableConvertor: eventregistry.TableConvertor{},
	}
	table := newStringTable()
	storeOptions := &generic.StoreOptions{
		RESTOptions: pipeline{Options: options, table: table},
		AttrFunc:    newAttrFunc(table),
		Indexers:    Indexers(),
		TriggerFunc: TriggerFuncs(),
	}
	if err := store.CompleteWithOptions(storeOptions); err != nil {
		return nil, err
	}
	r := &REST{Store: store, strategy: strategy}
	if options.Folding != nil {
		if r.folder, err = newFolder(*options.Folding, r, clk); err != nil {
			store.DestroyFunc()
			return nil, err
		}
	}
	return r, nil
}

// Create stores a new event (or folds it, see Folder). Its chain of
// controller owners is resolved once the create passed validation and
// admission (createValidation, which the generic store calls with a copy
// of the event it then stores): a refused create reads nothing, and a dry
// run reads what its create would.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	event, ok := obj.(*core.Event)
	if !ok {
		return r.Store.Create(ctx, obj, createValidation, options)
	}
	if event.Name != "" || event.GenerateName == "" {
		return r.create(ctx, event, createValidation, options)
	}
	// The name is generated here, as the generic store would (which would
	// store a copy of event), so that the event given its chain is the one
	// stored.
	var (
		created runtime.Object
		err     error
	)
	for range maxNameGenerationAttempts {
		attempt := event.DeepCopy()
		attempt.Name = r.strategy.GenerateName(attempt.GenerateName)
		if created, err = r.create(ctx, attempt, createValidation, options); !apierrors.IsAlreadyExists(err) {
			break
		}
	}
	return created, err
}

// maxNameGenerationAttempts is the generic store's number of generated
// names tried before a create is refused as a conflict.
const maxNameGenerationAttempts = 8

// create creates event, which has its name, resolving its chain between
// admission and the write; the folder, if any, then stores it or folds it
// (a dry run is never folded).
func (r *REST) create(ctx context.Context, event *core.Event, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	var fold *foldCreate
	validate := func(ctx context.Context, validated runtime.Object) error {
		if createValidation != nil {
			if err := createValidation(ctx, validated); err != nil {
				return err
			}
		}
		if err := r.strategy.ResolveChain(ctx, event); err != nil {
			return err
		}
		if r.folder == nil || (options != nil && len(options.DryRun) > 0) || !r.folder.folds(ctx, event) {
			return nil
		}
		c := r.folder.admit(ctx, event)
		fold = &c
		if c.batch != nil {
			// Not stored: the folder writes it with the others of its
			// batch.
			return errFolded
		}
		return nil
	}
	created, err := r.Store.Create(ctx, event, validate, options)
	switch {
	case fold == nil:
		return created, err
	case fold.batch != nil:
		if !errors.Is(err, errFolded) {
			return nil, fmt.Errorf("a folded create was stored: %w", err)
		}
		return r.folder.wait(ctx, *fold)
	case err == nil:
		if event, ok := created.(*core.Event); ok {
			r.folder.stored(*fold, event)
		}
	}
	return created, err
}

// errFolded ends the generic store's create of an event the folder folds,
// after its validation and before its write.
var errFolded = errors.New("folded")

// Update updates an event (or creates it, a PUT of an event that does not
// exist). A chain of controller owners the stored event lacks, or has
// pending, is resolved once the write passed validation and admission
// (updateValidation, or createValidation for a create, which the generic
// store calls with copies of the event it then stores): a refused update
// reads nothing.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	updated := &updatedEvent{UpdatedObjectInfo: objInfo}
	validateCreate := func(ctx context.Context, validated runtime.Object) error {
		if createValidation != nil {
			if err := createValidation(ctx, validated); err != nil {
				return err
			}
		}
		if updated.event == nil {
			return nil
		}
		return r.strategy.ResolveChain(ctx, updated.event)
	}
	validateUpdate := func(ctx context.Context, validated, old runtime.Object) error {
		if updateValidation != nil {
			if err := updateValidation(ctx, validated, old); err != nil {
				return err
			}
		}
		oldEvent, ok := old.(*core.Event)
		if !ok || updated.event == nil {
			return nil
		}
		return r.strategy.ResolveUpdatedChain(ctx, updated.event, oldEvent)
	}
	return r.Store.Update(ctx, name, updated, validateCreate, validateUpdate, forceAllowCreate, options)
}

// updatedEvent is an update's new object that remembers the event it last
// returned: the one the generic store prepares, validates (as a copy) and
// stores.
type updatedEvent struct {
	rest.UpdatedObjectInfo
	event *core.Event
}

func (u *updatedEvent) UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error) {
	obj, err := u.UpdatedObjectInfo.UpdatedObject(ctx, old)
	u.event, _ = obj.(*core.Event)
	return obj, err
}

// Folder is the store's folder, nil when folding is off.
func (r *REST) Folder() *Folder { return r.folder }

// TTLFunc returns the store's TTLFunc: every create and every update
// (including patches and the legacy recorder's count bumps) renews the
// event's lease to ttl, whatever lease it had before.
func TTLFunc(ttl time.Duration) (func(runtime.Object, uint64, bool) (uint64, error), error) {
	if ttl < time.Second {
		return nil, fmt.Errorf("event TTL must be at least 1s, got %v", ttl)
	}
	seconds := uint64(ttl / time.Second)
	return func(runtime.Object, uint64, bool) (uint64, error) { return seconds, nil }, nil
}

// ShortNames lets kubectl users type "ev", as for kube-apiserver's events.
func (r *REST) ShortNames() []string { return []string{"ev"} }

// GetSingularName is "event".
func (r *REST) GetSingularName() string { return "event" }
