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
	// startCtx is the context of the cache's Start (set before the ring runs): once
	// it has ended, the ring's leave only refuses reconciles (see serveSlots).
	startCtx context.Context
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
// slots gained are accepted from then on. When the cache's Start has ended (the ring
// leaving at stop), the informers are left as they are. Errors: ctx's, or a store's
// eviction's.
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
	if slots.IsEmpty() && sh.startCtx != nil && sh.startCtx.Err() != nil {
		// The cache is stopping and the ring leaves: reconciles of every slot are
		// refused from now on (guard), but the informers, which stop with the cache,
		// keep their stores, so that the snapshots they write at stop hold the share
		// they served, not an empty store.
		sh.serving = slots
		sh.served.Store(&slots)
		return nil
	}
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

// awaitFirstShardRound holds the first list of a sharded kind's informer until the
// ring's first round has ended (informerMap.beforeRun), so that a replica restarted
// while its Lease still claims its slots (a crash, an OOM kill) lists with those slots
// rather than with none, and its informers can resume the snapshots they wrote for
// them (a snapshot is resumed only with the shard it was complete for). The round
// takes a few requests; until it ends a sharded informer would select nothing anyway.
// It returns false if ctx ended first.
func (c *Cache) awaitFirstShardRound(ctx context.Context, e *entry) bool {
	if !c.isSharded(e.key.gvk) {
		return true
	}
	select {
	case <-c.sharder.ring.FirstRound():
		return true
	case <-ctx.Done():
		return false
	}
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
