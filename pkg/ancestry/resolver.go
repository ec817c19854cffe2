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
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	"github.com/kube-events/events-apiserver/pkg/ownerchain"
)

// retryableTTL bounds how long a failure that may pass is cached.
const retryableTTL = time.Second

// Reference is the object an event is about, as its regarding field
// (involvedObject in core/v1) names it.
type Reference struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	UID        types.UID
	// OutOfScope is why the object is not to be read for the event that
	// names it (ReasonOtherNamespace): its chain is empty, and nothing is
	// read.
	OutOfScope string
}

// Options tune a Resolver; a zero field takes its default.
type Options struct {
	// Timeout bounds one resolution, every read included: the event's
	// first write waits for it. 1s by default.
	Timeout time.Duration
	// CacheSize is how many objects' controllers are kept (by UID), so
	// that the pods of one ReplicaSet read it and its Deployment once.
	// 10,000 by default.
	CacheSize int
	// CacheTTL is how long an object's controller is trusted once read:
	// an object is rarely adopted by another controller, but can be.
	// 10 minutes by default.
	CacheTTL time.Duration
	// NegativeTTL is how long a failed read (forbidden, not found, an
	// unknown kind) is not tried again, and how long the read of an object
	// an event names without its UID (by name alone, so the object may be
	// replaced) is trusted. 10 seconds by default.
	NegativeTTL time.Duration
	// DiscoveryResetInterval is the least time between two refreshes of
	// discovery when a kind is unknown (a CRD installed since), so that
	// events about a kind that never maps do not refresh it on each write.
	// 30 seconds by default.
	DiscoveryResetInterval time.Duration
	// QPS and Burst limit the reads to kube-apiserver: 50 and 100 by
	// default.
	QPS   float32
	Burst int
	// NamespaceQPS and NamespaceBurst limit the reads made for the events
	// of one namespace, so that no namespace takes the others' share; by
	// default all of QPS and Burst: a namespace's storm (a scheduler's
	// FailedScheduling series in takeover) would otherwise leave its
	// chains pending, and each pending chain costs a write more. A
	// resolution past them is pending (ReasonThrottled) and resolved
	// again later.
	NamespaceQPS   float32
	NamespaceBurst int
}

// Defaulted returns o with every zero field set to its default.
func (o Options) Defaulted() Options {
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 10000
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = 10 * time.Minute
	}
	if o.NegativeTTL <= 0 {
		o.NegativeTTL = 10 * time.Second
	}
	if o.DiscoveryResetInterval <= 0 {
		o.DiscoveryResetInterval = 30 * time.Second
	}
	if o.QPS <= 0 {
		o.QPS = 50
	}
	if o.Burst <= 0 {
		o.Burst = 100
	}
	if o.NamespaceQPS <= 0 {
		o.NamespaceQPS = o.QPS
	}
	if o.NamespaceBurst <= 0 {
		o.NamespaceBurst = max(1, o.Burst)
	}
	return o
}

// Resolver finds the chain of controller owners of an event's regarding
// object in the cluster: it follows the ownerReferences with controller:
// true to the top, reading objects' metadata only through kube-apiserver,
// with the resource of each kind from discovery. It never fails: what it
// cannot read (a forbidden or deleted owner, an unknown kind, a budget
// spent) ends the chain there and is counted in
// events_apiserver_ancestry_unresolved_total.
type Resolver struct {
	metadata metadata.Interface
	mapper   *restmapper.DeferredDiscoveryRESTMapper
	options  Options
	clock    clock.PassiveClock

	// links holds, by what was read (see cacheKey), what a read found:
	// its controller or why it could not be read (until the link
	// expires).
	links *lru.Cache
	// shares holds each namespace's rate limiter of reads
	// (NamespaceQPS), least recently used first out.
	shares *lru.Cache
	// sharesLock serializes the get-or-add of a namespace's limiter.
	sharesLock sync.Mutex
	// reads joins concurrent reads of one object (the events of a
	// ReplicaSet's new pods, which all ask for it).
	reads singleflight.Group

	resetLock sync.Mutex
	lastReset time.Time
}

// link is what a read of an object found.
type link struct {
	// controller is the object's controller owner; nil for none or on
	// failure.
	controller *metav1.OwnerReference
	// namespace is the object's, "" for a cluster-scoped one: its
	// controller is in it or cluster-scoped.
	namespace string
	// failure is the Reason the object could not be read, "" when it was.
	failure string
	expires time.Time
}

// object is an object to read: the regarding object, then each owner.
type object struct {
	groupKind schema.GroupKind
	version   string
	namespace string
	name      string
	// uid is the UID the child's reference (or the event) names; the
	// object read must have it. Empty when the event names none.
	uid types.UID
}

// NewResolver returns a resolver that reads through kube-apiserver with
// config (the server's client of kube-apiserver).
func NewResolver(config *rest.Config, options Options) (*Resolver, error) {
	options = options.Defaulted()
	config = rest.CopyConfig(config)
	config.QPS, config.Burst = options.QPS, options.Burst
	metadataClient, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("ancestry: metadata client: %w", err)
	}
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("ancestry: discovery client: %w", err)
	}
	registerMetrics()
	return &Resolver{
		metadata: metadataClient,
		mapper:   restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discoveryClient)),
		options:  options,
		clock:    clock.RealClock{},
		links:    lru.New(options.CacheSize),
		shares:   lru.New(options.CacheSize),
	}, nil
}

// Chain is what a resolution found.
type Chain struct {
	// Ancestors are the controller owners resolved, nearest first.
	Ancestors []ownerchain.Ancestor
	// Pending is why the resolution stopped short of the top when asking
	// again may go further (a Reason that Retryable accepts: a spent
	// budget, kube-apiserver unreachable); "" when the chain is final: it
	// reached the top, or stopped where asking again would stop too (a
	// deleted or forbidden owner, a cycle).
	Pending string
}

// Retryable tells whether a chain that stopped short for reason may go
// further when resolved again.
func Retryable(reason string) bool {
	return reason == ReasonTimeout || reason == ReasonError || reason == ReasonUncached || reason == ReasonThrottled
}

// Resolve returns the chain of controller owners of the object ref names,
// reading what its cache lacks within the Timeout. If the object of that
// name has another UID than ref's (it was replaced), the chain is empty:
// the new object's owners are not the event's object's.
func (r *Resolver) Resolve(ctx context.Context, ref Reference) Chain {
	if ref.Kind == "" || ref.Name == "" {
		return Chain{}
	}
	if ref.OutOfScope != "" {
		unresolvedTotal.WithLabelValues(ref.OutOfScope).Inc()
		return Chain{}
	}
	start := r.clock.Now()
	defer func() { resolveDuration.Observe(r.clock.Since(start).Seconds()) }()
	ctx, cancel := context.WithTimeout(ctx, r.options.Timeout)
	defer cancel()
	logger := klog.FromContext(ctx)
	share := r.shareOf(ref.Namespace)
	chain, reason, err := r.walk(ref, func(o object) (link, error) { return r.controllerOf(ctx, share, o) })
	if reason != "" {
		unresolvedTotal.WithLabelValues(reason).Inc()
		logger.V(4).Info("Chain of controller owners cut short", "regarding", klog.KRef(ref.Namespace, ref.Name),
			"kind", ref.Kind, "uid", ref.UID, "resolved", len(chain), "reason", reason, "err", err)
	}
	return Chain{Ancestors: chain, Pending: pending(reason)}
}

// Lookup returns the chain of the object ref names as far as the cache
// knows it, without a read: the archiver asks it for the states it
// archives without a chain, and must not wait for kube-apiserver. A chain
// the cache does not know to the top is Pending (ReasonUncached). Lookups
// are not counted in the metrics.
func (r *Resolver) Lookup(ref Reference) Chain {
	if ref.Kind == "" || ref.Name == "" || ref.OutOfScope != "" {
		return Chain{}
	}
	chain, reason, _ := r.walk(ref, func(o object) (link, error) {
		if l, ok := r.cached(o.cacheKey()); ok {
			return l, nil
		}
		return link{failure: ReasonUncached}, nil
	})
	return Chain{Ancestors: chain, Pending: pending(reason)}
}

// pending is the Chain.Pending of a resolution that stopped for reason.
func pending(reason string) string {
	if Retryable(reason) {
		return reason
	}
	return ""
}

// walk follows the controller owners of ref's object up, asking
// controllerOf for each object's, and returns the chain and, when it
// stopped short of the top, why (a Reason) and the error behind it.
func (r *Resolver) walk(ref Reference, controllerOf func(object) (link, error)) ([]ownerchain.Ancestor, string, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, ReasonNoKind, err
	}
	current := object{groupKind: gv.WithKind(ref.Kind).GroupKind(), version: gv.Version, namespace: ref.Namespace, name: ref.Name, uid: ref.UID}
	seen := map[types.UID]bool{}
	if ref.UID != "" {
		seen[ref.UID] = true
	}
	var chain []ownerchain.Ancestor
	for {
		l, err := controllerOf(current)
		if l.failure != "" {
			return chain, l.failure, err
		}
		owner := l.controller
		if owner == nil {
			return chain, "", nil
		}
		if seen[owner.UID] {
			return chain, ReasonCycle, nil
		}
		if len(chain) == ownerchain.MaxDepth {
			return chain, ReasonDepth, nil
		}
		// The chain's encoding and the terms that match it assume what
		// ownerchain.ValidateRef and ValidateUID accept; an owner reference is
		// checked for less.
		if err := errors.Join(ownerchain.ValidateRef(ownerchain.Ref(owner.Kind, owner.Name)), ownerchain.ValidateUID(string(owner.UID))); err != nil {
			return chain, ReasonInvalid, err
		}
		seen[owner.UID] = true
		chain = append(chain, ownerchain.Ancestor{Kind: owner.Kind, Name: owner.Name, UID: owner.UID})
		ownerGV, err := schema.ParseGroupVersion(owner.APIVersion)
		if err != nil {
			return chain, ReasonNoKind, err
		}
		// An owner is in its child's namespace or cluster-scoped; which
		// one its mapping tells.
		current = object{groupKind: ownerGV.WithKind(owner.Kind).GroupKind(), version: ownerGV.Version, namespace: l.namespace, name: owner.Name, uid: owner.UID}
	}
}

// controllerOf returns what is known of o's controller: from the cache,
// else from a read that concurrent callers share. The error, for the log,
// is the read's when it failed (nil from the cache).
func (r *Resolver) controllerOf(ctx context.Context, share flowcontrol.PassiveRateLimiter, o object) (link, error) {
	if l, ok := r.cached(o.cacheKey()); ok {
		return l, nil
	}
	if !share.TryAccept() {
		return link{failure: ReasonThrottled}, nil
	}
	key := o.groupKind.String() + "/" + o.namespace + "/" + o.name + "/" + string(o.uid)
	// The read runs under the first caller's budget; the others wait for
	// it within theirs.
	result := r.reads.DoChan(key, func() (any, error) {
		l, err := r.read(ctx, o)
		return l, err
	})
	select {
	case res := <-result:
		return res.Val.(link), res.Err
	case <-ctx.Done():
		return link{failure: ReasonTimeout}, ctx.Err()
	}
}

// shareOf returns the rate limiter of the reads made for namespace's
// events.
func (r *Resolver) shareOf(namespace string) flowcontrol.PassiveRateLimiter {
	r.sharesLock.Lock()
	defer r.sharesLock.Unlock()
	if l, ok := r.shares.Get(namespace); ok {
		return l.(flowcontrol.PassiveRateLimiter)
	}
	l := flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(r.options.NamespaceQPS, r.options.NamespaceBurst, r.clock)
	r.shares.Add(namespace, l)
	return l
}

// cacheKey is what a link is cached by: the object asked for (kind,
// namespace, name) and the UID the read found it with, "" for an object
// asked for by name alone. A reference only hits what the server read of
// that very object: a UID a client names does not make another object's
// link its own.
type cacheKey struct {
	groupKind       schema.GroupKind
	namespace, name string
	uid             types.UID
}

// cacheKey is o's key in the cache.
func (o object) cacheKey() cacheKey {
	return cacheKey{groupKind: o.groupKind, namespace: o.namespace, name: o.name, uid: o.uid}
}

// cached returns the unexpired link of key.
func (r *Resolver) cached(key cacheKey) (link, bool) {
	v, ok := r.links.Get(key)
	if !ok {
		return link{}, false
	}
	l := v.(link)
	if !r.clock.Now().Before(l.expires) {
		r.links.Remove(key)
		return link{}, false
	}
	return l, true
}

// read reads o's metadata and caches what it found: the controller of the
// object read, by o's kind, namespace and name and the UID it has (and
// briefly without the UID, when o names none), and a failure by o's key. A
// timeout is not cached: it says more of the budget left than of the
// object; another failure that may pass (kube-apiserver unreachable), or
// any failure of an object named with a UID (which the writer chose), only
// for retryableTTL, so that the events written meanwhile share one read
// and a chain resolved again after kube-apiserver is back is read.
func (r *Resolver) read(ctx context.Context, o object) (link, error) {
	now := r.clock.Now()
	fail := func(reason string, err error) (link, error) {
		ttl := r.options.NegativeTTL
		if Retryable(reason) || o.uid != "" {
			ttl = min(ttl, retryableTTL)
		}
		l := link{failure: reason, expires: now.Add(ttl)}
		if reason != ReasonTimeout {
			r.links.Add(o.cacheKey(), l)
		}
		return l, err
	}
	mapping, err := r.mapping(ctx, o)
	if err != nil {
		return fail(reasonOf(ctx, err), err)
	}
	namespace := o.namespace
	if mapping.Scope.Name() == meta.RESTScopeNameRoot {
		namespace = ""
	}
	objectReadsTotal.Inc()
	m, err := r.metadata.Resource(mapping.Resource).Namespace(namespace).Get(ctx, o.name, metav1.GetOptions{})
	if err != nil {
		return fail(reasonOf(ctx, err), err)
	}
	read := link{controller: metav1.GetControllerOfNoCopy(m), namespace: m.Namespace, expires: now.Add(r.options.CacheTTL)}
	found := o.cacheKey()
	found.uid = m.UID
	r.links.Add(found, read)
	if o.uid == "" {
		byName := read
		byName.expires = now.Add(r.options.NegativeTTL)
		r.links.Add(o.cacheKey(), byName)
	}
	if o.uid != "" && m.UID != o.uid {
		return fail(ReasonReplaced, fmt.Errorf("%s %s/%s has UID %s, not %s", o.groupKind, namespace, o.name, m.UID, o.uid))
	}
	return read, nil
}

// mapping maps o's kind to its resource: in o's version, else in the
// preferred one (an owner reference may name a version no longer served;
// metadata is the same in every version). An unknown kind refreshes
// discovery, at most once per DiscoveryResetInterval, and is tried again.
func (r *Resolver) mapping(ctx context.Context, o object) (*meta.RESTMapping, error) {
	find := func() (*meta.RESTMapping, error) {
		m, err := r.mapper.RESTMappingWithContext(ctx, o.groupKind, o.version)
		if meta.IsNoMatchError(err) && o.version != "" {
			m, err = r.mapper.RESTMappingWithContext(ctx, o.groupKind)
		}
		return m, err
	}
	m, err := find()
	if meta.IsNoMatchError(err) && r.mayResetDiscovery() {
		r.mapper.ResetWithContext(ctx)
		m, err = find()
	}
	return m, err
}

// mayResetDiscovery tells whether discovery may be refreshed now, and if
// so notes that it is.
func (r *Resolver) mayResetDiscovery() bool {
	r.resetLock.Lock()
	defer r.resetLock.Unlock()
	now := r.clock.Now()
	if !r.lastReset.IsZero() && now.Sub(r.lastReset) < r.options.DiscoveryResetInterval {
		return false
	}
	r.lastReset = now
	return true
}

// reasonOf is the Reason of a failed mapping or read.
func reasonOf(ctx context.Context, err error) string {
	switch {
	case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		return ReasonTimeout
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return ReasonForbidden
	case apierrors.IsNotFound(err):
		return ReasonNotFound
	case meta.IsNoMatchError(err):
		return ReasonNoKind
	default:
		return ReasonError
	}
}
