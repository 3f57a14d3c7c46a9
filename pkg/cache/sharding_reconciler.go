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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/deltacache/deltacache/pkg/shard"
)

// ShardedReconciler wraps r, the reconciler of obj's kind, so that no key is
// reconciled by two replicas at once. obj's kind must be sharded by c (Sharding.ByUID
// or ByNamespace).
//
// Each Reconcile first finds the request's slot: shard.SlotOfNamespace(req.Namespace)
// for a namespace-sharded kind; for a uid-sharded one, the slot of the uid of the
// object c holds under req's key. If this replica does not serve the slot (or holds
// no such object), the request is skipped: Reconcile returns an empty Result and no
// error without calling r (the replica that serves it reconciles it). Otherwise the
// request is registered in flight for its slot while r runs. When the ring takes slots
// from this replica, new requests of those slots are skipped from that moment, and the
// cache does not give them up (so no other replica starts serving them) before every
// reconcile of them in flight has returned: meanwhile the ring keeps renewing this
// replica's Lease with those slots claimed, so no other replica may take them. A
// reconcile that never returns therefore holds its slot's hand-off for as long as the
// replica lives.
//
// c is the Manager's cache (mgr.GetCache()), built by New or NewWith. Errors: c is not
// a deltacache *Cache, obj's kind cannot be determined, or is not sharded by c. With a
// c that has no sharding, it returns r unchanged.
func ShardedReconciler(c crcache.Cache, obj client.Object, r reconcile.Reconciler) (reconcile.Reconciler, error) {
	dc, ok := c.(*Cache)
	if !ok {
		return nil, fmt.Errorf("deltacache: ShardedReconciler needs a deltacache cache, got %T", c)
	}
	if dc.sharder == nil {
		return r, nil
	}
	gvk, err := apiutil.GVKForObject(obj, dc.scheme)
	if err != nil {
		return nil, err
	}
	sh := dc.sharder
	if !sh.byUID[gvk] && !sh.byNamespace[gvk] {
		return nil, fmt.Errorf("deltacache: ShardedReconciler: %s is not sharded (not in Sharding.ByUID or ByNamespace)", gvk.Kind)
	}
	return &shardedReconciler{cache: dc, gvk: gvk, example: obj, byNamespace: sh.byNamespace[gvk], inner: r}, nil
}

type shardedReconciler struct {
	cache       *Cache
	gvk         schema.GroupVersionKind
	example     client.Object
	byNamespace bool
	inner       reconcile.Reconciler
}

// Reconcile implements reconcile.Reconciler (see ShardedReconciler).
func (s *shardedReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	slot, ok, err := s.slotOf(ctx, req)
	if err != nil {
		return reconcile.Result{}, err
	}
	guard := &s.cache.sharder.guard
	if !ok || !guard.enter(slot) {
		logf.FromContext(ctx).V(1).Info("Skipping a request of a slot this replica does not serve", "slot", slot)
		return reconcile.Result{}, nil
	}
	defer guard.exit(slot)
	return s.inner.Reconcile(ctx, req)
}

// slotOf returns req's slot; false if the cache holds no object of a uid-sharded kind
// under req's key.
func (s *shardedReconciler) slotOf(ctx context.Context, req reconcile.Request) (int, bool, error) {
	if s.byNamespace {
		return shard.SlotOfNamespace(req.Namespace), true, nil
	}
	obj, ok := s.example.DeepCopyObject().(client.Object)
	if !ok {
		return 0, false, fmt.Errorf("deltacache: %T is not a client.Object", s.example)
	}
	if err := s.cache.Get(ctx, req.NamespacedName, obj); err != nil {
		if errors.Is(err, ErrNotInShard) || apierrors.IsNotFound(err) {
			return 0, false, nil
		}
		return 0, false, err
	}
	return shard.SlotOfUID(string(obj.GetUID())), true, nil
}

// inFlight counts the reconciles running per slot and which slots accept new ones.
type inFlight struct {
	mu      sync.Mutex
	allowed shard.Slots
	running [shard.NumSlots]int
	// idle is closed and replaced whenever a reconcile returns.
	idle chan struct{}
}

func (f *inFlight) init() { f.idle = make(chan struct{}) }

// enter registers a reconcile of slot; false (nothing registered) if slot is not
// allowed.
func (f *inFlight) enter(slot int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.allowed.Has(slot) {
		return false
	}
	f.running[slot]++
	return true
}

// exit unregisters a reconcile of slot.
func (f *inFlight) exit(slot int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running[slot]--
	close(f.idle)
	f.idle = make(chan struct{})
}

// narrow refuses, from now on, reconciles of the slots outside keep, and waits until
// none of them is running (those refused by an earlier narrow that failed included).
// Errors: ctx's.
func (f *inFlight) narrow(ctx context.Context, keep shard.Slots) error {
	f.mu.Lock()
	f.allowed = f.allowed.Intersect(keep)
	f.mu.Unlock()
	for {
		f.mu.Lock()
		busy := 0
		for slot := range shard.NumSlots {
			if !keep.Has(slot) {
				busy += f.running[slot]
			}
		}
		idle := f.idle
		f.mu.Unlock()
		if busy == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d reconciles of the slots given up still running: %w", busy, ctx.Err())
		case <-idle:
		}
	}
}

// widen allows reconciles of slots.
func (f *inFlight) widen(slots shard.Slots) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.allowed = slots
}
