package event

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/kube-events/events-apiserver/pkg/apis/core"
)

// REST is the events store: a generic registry store of the internal Event,
// keyed and encoded as core/v1 events, in which every create and update
// puts the object under an etcd lease of the configured TTL.
type REST struct {
	*genericregistry.Store
	// folder, when set, folds isomorphic creates of hot series; see
	// EnableFolding.
	folder *Folder
}

var (
	_ rest.ShortNamesProvider   = &REST{}
	_ rest.SingularNameProvider = &REST{}
	_ rest.StandardStorage      = &REST{}
)

// NewREST returns the events store. ttl is how long an event lives after its
// last write (kube-apiserver's --event-ttl); it is rounded down to whole
// seconds, the granularity of etcd leases, and must be at least a second.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, ttl time.Duration) (*REST, error) {
	ttlFunc, err := TTLFunc(ttl)
	if err != nil {
		return nil, err
	}
	strategy := NewStrategy(scheme)
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

		TableConvertor: TableConvertor{},
	}
	table := newStringTable()
	options := &generic.StoreOptions{
		RESTOptions: internedStorage{RESTOptionsGetter: optsGetter, table: table},
		AttrFunc:    newAttrFunc(table),
		Indexers:    Indexers(),
		TriggerFunc: TriggerFuncs(),
	}
	if err := store.CompleteWithOptions(options); err != nil {
		return nil, err
	}
	return &REST{Store: store}, nil
}

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
