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

// Package chains gives their chain of controller owners to the stored
// events that lack it: those whose chain stopped short for a failure that
// may pass (kube-apiserver unreachable, a spent budget), marked with the
// ownerchain.PendingAnnotation, and, in offload mode, those that reach the
// store without going through its strategy, as kube-apiserver writes the
// cluster's events straight into this server's etcd.
package chains

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kube-events/events-apiserver/pkg/ancestry"
	"github.com/kube-events/events-apiserver/pkg/apis/core"
	corev1 "github.com/kube-events/events-apiserver/pkg/apis/core/v1"
	"github.com/kube-events/events-apiserver/pkg/etcdfollow"
	"github.com/kube-events/events-apiserver/pkg/ownerchain"
	eventregistry "github.com/kube-events/events-apiserver/pkg/registry/event"
	"github.com/kube-events/events-apiserver/pkg/storedevent"
)

const (
	// workers is how many events the annotator resolves and writes at once.
	workers = 2
	// pageSize is how many stored events each read of the first pass holds.
	pageSize = 500
	// restartDelay is the wait before following etcd again after its
	// client could not be made.
	restartDelay = time.Second
	// retryBase and retryMax bound the wait before an event's pending
	// chain is resolved again, doubled at each failure: kube-apiserver
	// back within seconds is met within seconds, a long outage costs a
	// read per event every few minutes.
	retryBase, retryMax = 500 * time.Millisecond, 5 * time.Minute
)

// Store is what the annotator needs of the events store: reads and
// updates through its strategy, which sets the chain (see
// event.Strategy.PrepareForUpdate).
type Store interface {
	rest.Getter
	rest.Updater
}

// Config configures an Annotator.
type Config struct {
	// Events is the store the annotator writes through.
	Events Store
	// Chains resolves a chain; the annotator asks it before it reads an
	// event back, so that an event about an object without owners costs
	// no read and no write (the answer is cached).
	Chains eventregistry.ChainResolver
	// Unannotated says events stored with no chain at all are given one
	// too: in offload mode, where kube-apiserver writes events past the
	// strategy. Otherwise only pending chains are resolved again.
	Unannotated bool
	// Seals, where kube-apiserver writes events past the strategy, tells
	// the chains the server sealed from those others wrote, which are
	// resolved again (the strategy replaces them); nil otherwise.
	Seals *ancestry.Sealer
	// NewClient returns an etcd client whose keys are under the storage
	// prefix (pkg/apiserver.NewEtcdClient).
	NewClient func() (*clientv3.Client, error)
	// StoragePrefix is that prefix ("/registry"), and ResourcePrefix the
	// events' ("events"): an event's key is
	// <StoragePrefix>/<ResourcePrefix>/<namespace>/<name>.
	StoragePrefix, ResourcePrefix string
	// Codec decodes what is stored into the internal Event.
	Codec runtime.Codec
	// Transformer undoes the encryption at rest, if any.
	Transformer value.Transformer
}

// Annotator follows the stored events in etcd and gives every one stored
// with a pending chain (or, with Config.Unannotated, none; with
// Config.Seals, another writer's) the chain of its
// regarding object, with one update through the store (an in-process
// write, which the strategy resolves as it does a create's), resolving
// again with a backoff while the chain stays pending. It reads every
// stored event once when it starts, then watches etcd: writes through this
// server's API carry their chain unless its resolution failed, those of
// kube-apiserver in offload mode do not. Run it elected: its updates are
// fenced, and one replica is enough.
type Annotator struct {
	cfg       Config
	keyPrefix string // the events' prefix in a client under the storage prefix
}

// item is one event to give a chain: its key, and what it is about.
type item struct {
	event     types.NamespacedName
	regarding ancestry.Reference
}

// NewAnnotator returns an annotator; Events, Chains, NewClient and Codec
// are required.
func NewAnnotator(cfg Config) (*Annotator, error) {
	if cfg.Events == nil || cfg.Chains == nil || cfg.NewClient == nil || cfg.Codec == nil {
		return nil, errors.New("chains: Events, Chains, NewClient and Codec are required")
	}
	return &Annotator{cfg: cfg, keyPrefix: path.Join("/", cfg.ResourcePrefix) + "/"}, nil
}

// Name is the controller's name in logs and health checks.
func (*Annotator) Name() string { return "ancestry-annotator" }

// Run follows etcd and annotates until ctx ends; it returns once its
// writes ended.
func (a *Annotator) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.Info("Giving their chain of controller owners to events stored without one")
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.NewTypedItemExponentialFailureRateLimiter[item](retryBase, retryMax),
		workqueue.TypedRateLimitingQueueConfig[item]{Name: "events_apiserver_ancestry_annotator"})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for a.processNext(ctx, queue) {
			}
		})
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := a.follow(ctx, queue); err != nil && ctx.Err() == nil {
			logger.Error(err, "Following the stored events failed", "after", restartDelay)
		}
	}, restartDelay)
	queue.ShutDown()
	wg.Wait()
}

// follow queues every stored event without a chain, then those written
// since (etcdfollow: a watch that ends is started again from its revision,
// and only a compaction past it reads every event again), until ctx ends.
func (a *Annotator) follow(ctx context.Context, queue workqueue.TypedRateLimitingInterface[item]) error {
	client, err := a.cfg.NewClient()
	if err != nil {
		return fmt.Errorf("etcd client: %w", err)
	}
	defer func() { _ = client.Close() }()
	follower, err := etcdfollow.New(etcdfollow.Config{Name: a.Name(), KV: client.KV, Watcher: client.Watcher, Prefix: a.keyPrefix, PageSize: pageSize})
	if err != nil {
		return err
	}
	follower.Run(ctx, annotatorFeed{a: a, queue: queue})
	return nil
}

// annotatorFeed queues what the annotator's follower reads: every stored
// event listed, and every one written since.
type annotatorFeed struct {
	a     *Annotator
	queue workqueue.TypedRateLimitingInterface[item]
}

func (f annotatorFeed) Listed(ctx context.Context, _ int64, kvs []*mvccpb.KeyValue, _ bool) error {
	for _, kv := range kvs {
		f.a.consider(ctx, kv, f.queue)
	}
	return nil
}

func (f annotatorFeed) Watched(ctx context.Context, _ int64, changes []*clientv3.Event) error {
	for _, change := range changes {
		if change.Type == mvccpb.PUT {
			f.a.consider(ctx, change.Kv, f.queue)
		}
	}
	return nil
}

// consider queues the event kv holds if its chain is pending, or absent
// with Config.Unannotated.
func (a *Annotator) consider(ctx context.Context, kv *mvccpb.KeyValue, queue workqueue.TypedRateLimitingInterface[item]) {
	data, err := storedevent.PlainValue(ctx, a.cfg.Transformer, a.cfg.StoragePrefix, kv)
	if err == nil && !a.cfg.Unannotated && !bytes.Contains(data, pendingKey) {
		return // most events, checked without decoding them
	}
	var event *core.Event
	if err == nil {
		event, err = storedevent.Decode(a.cfg.Codec, data)
	}
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Skipping a stored event that does not decode", "key", string(kv.Key), "err", err)
		return
	}
	if !a.wants(ctx, event) {
		return
	}
	queue.Add(item{
		event:     types.NamespacedName{Namespace: event.Namespace, Name: event.Name},
		regarding: ancestry.RegardingReference(event),
	})
}

// wants tells whether event is one to give a chain: it has a pending one,
// none (with Config.Unannotated), or another writer's.
func (a *Annotator) wants(ctx context.Context, event *core.Event) bool {
	return ownerchain.NeedsChain(event.Annotations) && (a.cfg.Unannotated || ownerchain.IsPending(event.Annotations)) ||
		!a.cfg.Seals.Trusts(ctx, event)
}

// pendingKey is the ownerchain.PendingAnnotation's key as it is in a stored
// event's bytes, JSON or protobuf alike.
var pendingKey = []byte(ownerchain.PendingAnnotation)

// processNext annotates one queued event; false once the queue shut down.
func (a *Annotator) processNext(ctx context.Context, queue workqueue.TypedRateLimitingInterface[item]) bool {
	next, shutdown := queue.Get()
	if shutdown {
		return false
	}
	defer queue.Done(next)
	if err := a.annotate(ctx, next); err != nil && ctx.Err() == nil {
		logger := klog.FromContext(ctx)
		if pending := (pendingError{}); errors.As(err, &pending) {
			logger.V(2).Info("The chain of controller owners of an event stopped short; resolving again", "event", next.event, "reason", pending.reason, "retries", queue.NumRequeues(next))
		} else {
			logger.Error(err, "Giving an event its chain of controller owners failed; retrying", "event", next.event)
		}
		queue.AddRateLimited(next)
		return true
	}
	queue.Forget(next)
	return true
}

// pendingError is a resolution that stopped short again, for reason.
type pendingError struct{ reason string }

func (e pendingError) Error() string { return "chain still pending: " + e.reason }

// annotate gives the event its chain once it resolves to the top (or as
// far as it ever will), by an update of what is stored (on condition that
// it did not change since it was read); the strategy sets the chain, as
// the event has none or a pending one.
func (a *Annotator) annotate(ctx context.Context, next item) error {
	chain := a.cfg.Chains.Resolve(ctx, next.regarding)
	if chain.Pending != "" {
		return pendingError{reason: chain.Pending}
	}
	ctx = eventregistry.InternalWriteContext(ctx, next.event.Namespace, corev1.SchemeGroupVersion)
	obj, err := a.cfg.Events.Get(ctx, next.event.Name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	event, ok := obj.(*core.Event)
	if !ok {
		return fmt.Errorf("getting event %s returned %T", next.event, obj)
	}
	// Another writer's chain is replaced even by none.
	if a.cfg.Seals.Trusts(ctx, event) &&
		(!ownerchain.NeedsChain(event.Annotations) || (!ownerchain.IsPending(event.Annotations) && len(chain.Ancestors) == 0)) {
		return nil
	}
	_, _, err = a.cfg.Events.Update(ctx, next.event.Name, rest.DefaultUpdatedObjectInfo(event),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		klog.FromContext(ctx).V(4).Info("Gave an event its chain of controller owners", "event", next.event)
	}
	return err
}
