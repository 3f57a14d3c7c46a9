/*
Copyright 2026.

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

package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/deltacache/deltacache/pkg/informer"
	"github.com/deltacache/deltacache/pkg/shard"
)

// Sharding splits the objects of some kinds among the replicas of an operator (see
// WithSharding).
type Sharding struct {
	// Ring is the replicas' Lease ring: Namespace, Name (shared by the replicas) and
	// Identity (this replica's, e.g. its pod name) are required; LeaseDuration and
	// RenewInterval default as in pkg/shard. Clock and Logger: zero values are fine.
	Ring shard.Options
	// ByUID are the kinds sharded by object uid (objects that stand alone), keyed like
	// controller-runtime's ByObject: every shape (typed, unstructured, metadata-only)
	// and every namespace scope of the kind. The other kinds are cached whole by every
	// replica. ByUID and ByNamespace together need at least one kind, and a kind may
	// be in only one of them.
	ByUID []client.Object
	// ByNamespace are the kinds sharded by namespace (see WithSharding): every object
	// of a namespace goes to the replica that serves the namespace's slot
	// (shard.SlotOfNamespace), so that kinds a reconciler reads together (an App and
	// its Pods) stay together. Keyed like ByUID. Namespaced kinds only: a
	// cluster-scoped kind here is an error of New (when the RESTMapper knows the kind
	// then) or of the first informer of the kind.
	ByNamespace []client.Object
}

// WithSharding makes this replica cache only its share of the kinds of s.ByUID and
// s.ByNamespace. The replicas form a ring of coordination.k8s.io Leases in
// s.Ring.Namespace (the cache needs get, list, create, update and delete on leases
// there, and list and watch on namespaces with ByNamespace) and split the hash space
// among themselves (pkg/shard); each sharded informer lists and watches
// with the shardSelector of this replica's slots (KEP-5866), and filters on the
// client when the server does not honour it (no ShardedListAndWatch feature gate:
// memory shrinks, traffic does not). The ring runs with the cache (Start).
//
// Until the ring grants it slots, a replica's sharded informers hold nothing (they
// sync empty). When the replica's share changes, objects that leave it are dropped
// without a Delete notification to handlers (a hand-off is not a deletion) before the
// ring records their release, and objects that enter it are delivered as Adds;
// another replica serves a slot only after its owner released it or the owner's
// Lease expired. When Start's context ends, the replica leaves the ring (its Lease is
// deleted), so the others take its slots over at once. Reconcilers of sharded kinds
// wrapped with ShardedReconciler skip requests of slots not served, and a slot is
// released only once their reconciles of it have returned.
//
// Namespace sharding. The server's hash of a namespace name clusters (names that
// differ in their last characters hash close together), so ranges of it cannot
// balance; instead namespaces go to replicas by shard.SlotOfNamespace, and the cache
// watches Namespaces (one metadata-only, cluster-wide informer of its own: RBAC list
// and watch on namespaces) to give each informer of s.ByNamespace the selector of
// exactly the namespaces it owns: one one-hash range per namespace, sorted, equal
// hashes merged. A namespace created or deleted later changes that selector, which
// costs one relist of the namespace-sharded informers on the replica that owns it
// (the others' selectors do not change); changes are coalesced for
// NamespaceDebounce, so that a burst of namespaces costs one relist, not one per
// namespace. A change of the served slots applies at once. Objects of namespaces this
// replica does not own are never held (the client-side filter drops them when the
// server does not honour the selector). A selector longer than the server accepts
// (informer.MaxShardSelectorLength: about 1,170 namespaces owned by one replica) is
// sent coarsened, the client filtering the rest (see informer.ShardSelector.ForServer).
//
// Reads: List of a sharded kind returns this replica's share. Get of a key that is not
// in the store returns NotFound (apierrors.IsNotFound; client.IgnoreNotFound takes it)
// where the replica would hold the object if it existed, and an error wrapping
// ErrNotInShard where it cannot know:
//   - by namespace, NotFound when the informer holds the key's namespace (the replica
//     serves its slot, and the relist that brought the namespace in has been handed to the store),
//     or when the replica serves the slot of a namespace that does not exist (as of the
//     Namespace informer); ErrNotInShard for another replica's namespace, and for a
//     namespace this replica owns but does not hold yet: one created within
//     NamespaceDebounce, or whose relist is under way (the cache cannot tell an object
//     it has not received from an absent one). So a reconciler written the scaffolded
//     way forgets a deleted object of its share.
//   - by uid, NotFound only while the replica serves every slot (alone in its ring):
//     a key carries no uid, so the cache cannot tell "in another replica's share" from
//     "absent". Not even for an object it held and saw deleted: a new object of the same
//     name may have a uid of another share, which this replica never receives, so a
//     remembered deletion could claim NotFound for an object that exists. Wrap the
//     reconciler with ShardedReconciler (it skips requests of keys not held) or treat
//     ErrNotInShard as NotFound.
//
// ErrNotInShard does not satisfy apierrors.IsNotFound on purpose: code that creates an
// object when a Get says NotFound would create one that exists in another replica's
// share.
func WithSharding(s Sharding) Option {
	return func(c *Config) { c.Sharding = &s }
}

// ErrNotInShard is wrapped by the error of a Get of a sharded kind whose key this
// replica does not hold and for which it cannot answer NotFound (see WithSharding):
// the object is in another replica's share, in flight to this replica's store, or does
// not exist. It is not a NotFound (apierrors.IsNotFound is false).
var ErrNotInShard = errors.New("not held by this replica's shard")

// NotInShardError is the error of such a Get.
type NotInShardError struct {
	GVK schema.GroupVersionKind
	Key client.ObjectKey
}

func (e *NotInShardError) Error() string {
	return fmt.Sprintf("%s %s is %v (it is held by another replica, or does not exist)", e.GVK.Kind, e.Key, ErrNotInShard)
}

// Unwrap returns ErrNotInShard.
func (e *NotInShardError) Unwrap() error { return ErrNotInShard }

// sharder is a Cache's side of the ring: which kinds are sharded, which slots this
// replica serves, and the ring itself.
type sharder struct {
	ring *shard.Ring
	// byUID and byNamespace are the kinds sharded by uid and by namespace.
	byUID, byNamespace map[schema.GroupVersionKind]bool
	// namespaces watches Namespaces for byNamespace; nil without such kinds.
	namespaces *namespaceWatch
	// guard tracks the reconciles in flight per slot (ShardedReconciler).
	guard inFlight
	// drainWait bounds how long serveSlots waits for them: the ring's RenewInterval,
	// so that the ring, told of the wait by an error, renews its Lease (the slots stay
	// claimed) and asks again at its next round.
	drainWait time.Duration

	// mu is held while the served slots change and the informers follow, and while a
	// new informer is given the current selector, so that none is left behind.
	mu      sync.Mutex
	serving shard.Slots
	// nsSel is the selector of byNamespace kinds: the owned namespaces of serving.
	nsSel *informer.ShardSelector
	// served is a copy of serving that Get reads without sh.mu (which serveSlots
	// holds while stores evict); nil before the first grant.
	served atomic.Pointer[shard.Slots]
}

// newSharder resolves s for a cache; the ring's consumer is c.serveSlots.
func newSharder(c *Cache, s *Sharding, cfg *rest.Config, scheme *runtime.Scheme) (*sharder, error) {
	if len(s.ByUID)+len(s.ByNamespace) == 0 {
		return nil, errors.New("deltacache: WithSharding needs at least one kind in ByUID or ByNamespace")
	}
	sh := &sharder{byUID: map[schema.GroupVersionKind]bool{}, byNamespace: map[schema.GroupVersionKind]bool{},
		nsSel: &informer.ShardSelector{Field: informer.ShardByNamespace}}
	sh.guard.init()
	sh.drainWait = s.Ring.RenewInterval
	if sh.drainWait <= 0 {
		lease := s.Ring.LeaseDuration
		if lease <= 0 {
			lease = shard.DefaultLeaseDuration
		}
		sh.drainWait = lease / 5 // as pkg/shard derives it
	}
	for _, obj := range s.ByUID {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return nil, fmt.Errorf("deltacache: sharded kind %T: %w", obj, err)
		}
		sh.byUID[gvk] = true
	}
	for _, obj := range s.ByNamespace {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return nil, fmt.Errorf("deltacache: namespace-sharded kind %T: %w", obj, err)
		}
		if sh.byUID[gvk] {
			return nil, fmt.Errorf("deltacache: %s is in both Sharding.ByUID and Sharding.ByNamespace", gvk.Kind)
		}
		if err := requireNamespaced(c.mapper, gvk); err != nil {
			return nil, err
		}
		sh.byNamespace[gvk] = true
	}
	if len(sh.byNamespace) > 0 {
		var err error
		if sh.namespaces, err = newNamespaceWatch(c); err != nil {
			return nil, err
		}
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, c.httpClient)
	if err != nil {
		return nil, fmt.Errorf("deltacache: Lease client: %w", err)
	}
	opts := s.Ring
	if opts.Logger.GetSink() == nil {
		opts.Logger = c.log.WithName("shard")
	}
	if sh.ring, err = shard.New(cs.CoordinationV1(), c.serveSlots, opts); err != nil {
		return nil, fmt.Errorf("deltacache: %w", err)
	}
	return sh, nil
}

// selector is the shard selector of slots.
func selector(slots shard.Slots) *informer.ShardSelector {
	return &informer.ShardSelector{Field: informer.ShardByUID, Ranges: slots.HashRanges()}
}

// selectorLocked returns the selector of gvk's informers: nil for a kind that is not
// sharded. sh.mu is held.
func (sh *sharder) selectorLocked(gvk schema.GroupVersionKind) *informer.ShardSelector {
	switch {
	case sh.byUID[gvk]:
		return selector(sh.serving)
	case sh.byNamespace[gvk]:
		return sh.nsSel
	default:
		return nil
	}
}

// shardSelectorFor returns the selector a new informer of gvk starts with: nil for a
// kind that is not sharded.
func (c *Cache) shardSelectorFor(gvk schema.GroupVersionKind) *informer.ShardSelector {
	if !c.isSharded(gvk) {
		return nil
	}
	sh := c.sharder
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.selectorLocked(gvk)
}

// followShard gives e's informers the current selector: an entry built while the
// served slots changed may have been built with the previous one.
func (c *Cache) followShard(ctx context.Context, e *entry) error {
	if !c.isSharded(e.key.gvk) {
		return nil
	}
	sh := c.sharder
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sel := sh.selectorLocked(e.key.gvk)
	for _, s := range e.scopes {
		if err := s.informer.SetShardSelector(ctx, sel); err != nil {
			return err
		}
	}
	return nil
}

// serveSlots is the ring's Consumer. From the moment it is called, ShardedReconciler
// refuses reconciles of the slots given up, and it waits until those already running
// have returned (at most the ring's RenewInterval: then it returns an error, the ring
// renews its Lease keeping the slots claimed, and calls again next round); then every sharded informer moves to slots (namespace-sharded ones
// to the namespaces of slots, once the Namespace informer has synced), and it returns
// once the objects of the slots given up are out of the stores. Reconciles of the
// slots gained are accepted from then on. Errors: ctx's, or a store's eviction's.
func (c *Cache) serveSlots(ctx context.Context, slots shard.Slots) error {
	sh := c.sharder
	// Before sh.mu: a running reconcile may create an informer of a sharded kind,
	// which takes sh.mu (followShard). The Ring calls one at a time. The wait is
	// bounded: the Ring does not renew its Lease while it waits; on the error it
	// renews it with the slots still claimed, and calls again at its next round.
	drainCtx, cancel := context.WithTimeout(ctx, sh.drainWait)
	err := sh.guard.narrow(drainCtx, slots)
	cancel()
	if err != nil {
		return fmt.Errorf("waiting for the reconciles of the slots given up: %w", err)
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.namespaces != nil && !slots.IsEmpty() {
		if err := sh.namespaces.awaitSynced(ctx); err != nil {
			return err
		}
	}
	sh.serving = slots
	sh.served.Store(&slots)
	if sh.namespaces != nil {
		sh.nsSel = sh.namespaces.selector(slots)
	}
	if err := c.applyShardLocked(ctx, func(gvk schema.GroupVersionKind) bool { return true }); err != nil {
		return err
	}
	sh.guard.widen(slots)
	return nil
}

// applyShardLocked gives the informers of the sharded kinds that pick selects their
// current selector. sh.mu is held.
func (c *Cache) applyShardLocked(ctx context.Context, pick func(schema.GroupVersionKind) bool) error {
	sh := c.sharder
	for _, gvk := range c.informers.gvks() {
		sel := sh.selectorLocked(gvk)
		if sel == nil || !pick(gvk) {
			continue
		}
		for _, s := range c.informers.scopesOf(gvk) {
			if err := s.informer.SetShardSelector(ctx, sel); err != nil {
				return fmt.Errorf("moving %s to its new shard: %w", gvk.Kind, err)
			}
		}
	}
	return nil
}

// isSharded reports whether gvk is sharded (by uid or by namespace).
func (c *Cache) isSharded(gvk schema.GroupVersionKind) bool {
	return c.sharder != nil && (c.sharder.byUID[gvk] || c.sharder.byNamespace[gvk])
}

// Ring returns the cache's Lease ring, nil without WithSharding.
func (c *Cache) Ring() *shard.Ring {
	if c.sharder == nil {
		return nil
	}
	return c.sharder.ring
}
