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

package archiver

import (
	"context"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-events/events-apiserver/pkg/ancestry"
	"github.com/kube-events/events-apiserver/pkg/apis/core"
	"github.com/kube-events/events-apiserver/pkg/archive"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
	"github.com/kube-events/events-apiserver/pkg/storedevent"
)

// NewRecord is the archive record of one stored state of an event: event
// is the state decoded by the store's codec, encoder that codec, and
// revision the etcd revision that wrote it. The object is encoded without
// what the record holds beside it, its name, namespace and UID (like its
// resourceVersion, which the store never writes into it): a tenth of what
// an archived state takes on disk, put back on read (see archive.Record).
func NewRecord(event *core.Event, encoder runtime.Encoder, revision int64) (archive.Record, error) {
	stripped := *event
	stripped.Name, stripped.Namespace, stripped.UID, stripped.ResourceVersion = "", "", "", ""
	object, err := runtime.Encode(encoder, &stripped)
	if err != nil {
		return archive.Record{}, fmt.Errorf("encoding event %s/%s: %w", event.Namespace, event.Name, err)
	}
	return archive.Record{
		UID:             string(event.UID),
		Namespace:       event.Namespace,
		Name:            event.Name,
		ResourceVersion: strconv.FormatInt(revision, 10),
		Time:            core.LastObserved(event), // the order of history answers
		Fields:          storedevent.SelectableFields(event),
		Object:          object,
		// What a summary counts, by the rule of the live summaries.
		Occurrences:   core.Occurrences(event),
		FirstObserved: core.FirstObserved(event),
	}, nil
}

// ChainLookup finds the chain of controller owners of an event's regarding
// object as far as a resolver's cache knows it, without a read, so that
// archiving never waits for kube-apiserver. *ancestry.Resolver is one.
type ChainLookup interface {
	Lookup(regarding ancestry.Reference) ancestry.Chain
}

// withCachedChain gives event the chain chains knows to the top when the
// event was stored with a pending chain or none (kube-apiserver wrote it in
// offload mode, or its resolution failed), so that its archived state
// answers the ancestor terms even if the live event is gone before it is
// given its chain (see pkg/registry/event/chains). It tells whether it
// changed event.
//
// A chain seals does not trust (another writer's, where kube-apiserver
// writes events past the strategy) is never archived: it is dropped, then
// completed as a missing one.
func withCachedChain(ctx context.Context, event *core.Event, chains ChainLookup, seals *ancestry.Sealer) bool {
	dropped := false
	if !seals.Trusts(ctx, event) {
		ancestry.SetChain(event, ancestry.Chain{})
		delete(event.Annotations, ownerchain.SealAnnotation)
		dropped = true
	}
	if !ownerchain.NeedsChain(event.Annotations) || chains == nil {
		return dropped
	}
	chain := chains.Lookup(ancestry.RegardingReference(event))
	if chain.Pending != "" || (len(chain.Ancestors) == 0 && !ownerchain.IsPending(event.Annotations)) {
		return dropped
	}
	ancestry.SetChain(event, chain)
	return true
}
