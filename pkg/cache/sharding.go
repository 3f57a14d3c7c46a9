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
	// replica. At least one kind is required.
	ByUID []client.Object
}

// WithSharding makes this replica cache only its share of the kinds of s.ByUID. The
// replicas form a ring of coordination.k8s.io Leases in s.Ring.Namespace (the cache
// needs get, list, create, update and delete on leases there) and split the uid
// hash space among themselves (pkg/shard); each sharded informer lists and watches
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
// deleted), so the others take its slots over at once.
//
// Reads: List of a sharded kind returns this replica's share. Get of a key that is not
// in the store returns an error wrapping ErrNotInShard, not NotFound: the key of a
// uid-sharded object carries no uid, so the cache cannot tell "held by another
// replica" from "absent"; a reconciler of a sharded kind, which gets requests only for
// its share, treats it as it treats NotFound.
func WithSharding(s Sharding) Option {
	return func(c *Config) { c.Sharding = &s }
}

// ErrNotInShard is wrapped by the error of a Get of a sharded kind whose key this
// replica does not hold: the object is in another replica's share, or does not exist.
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
	gvks map[schema.GroupVersionKind]bool

	// mu is held while the served slots change and the informers follow, and while a
	// new informer is given the current selector, so that none is left behind.
	mu      sync.Mutex
	serving shard.Slots
}

// newSharder resolves s for a cache; the ring's consumer is c.serveSlots.
func newSharder(c *Cache, s *Sharding, cfg *rest.Config, scheme *runtime.Scheme) (*sharder, error) {
	if len(s.ByUID) == 0 {
		return nil, errors.New("deltacache: WithSharding needs at least one kind in ByUID")
	}
	sh := &sharder{gvks: map[schema.GroupVersionKind]bool{}}
	for _, obj := range s.ByUID {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return nil, fmt.Errorf("deltacache: sharded kind %T: %w", obj, err)
		}
		sh.gvks[gvk] = true
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

// shardSelectorFor returns the selector a new informer of gvk starts with: nil for a
// kind that is not sharded.
func (c *Cache) shardSelectorFor(gvk schema.GroupVersionKind) *informer.ShardSelector {
	sh := c.sharder
	if sh == nil || !sh.gvks[gvk] {
		return nil
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return selector(sh.serving)
}

// followShard gives e's informers the current selector: an entry built while the
// served slots changed may have been built with the previous one.
func (c *Cache) followShard(ctx context.Context, e *entry) error {
	sh := c.sharder
	if sh == nil || !sh.gvks[e.key.gvk] {
		return nil
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sel := selector(sh.serving)
	for _, s := range e.scopes {
		if err := s.informer.SetShardSelector(ctx, sel); err != nil {
			return err
		}
	}
	return nil
}

// serveSlots is the ring's Consumer: every sharded informer moves to slots, and it
// returns once the objects of the slots given up are out of the stores.
func (c *Cache) serveSlots(ctx context.Context, slots shard.Slots) error {
	sh := c.sharder
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.serving = slots
	sel := selector(slots)
	for _, gvk := range c.informers.gvks() {
		if !sh.gvks[gvk] {
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

// isSharded reports whether gvk is sharded.
func (c *Cache) isSharded(gvk schema.GroupVersionKind) bool {
	return c.sharder != nil && c.sharder.gvks[gvk]
}

// Ring returns the cache's Lease ring, nil without WithSharding.
func (c *Cache) Ring() *shard.Ring {
	if c.sharder == nil {
		return nil
	}
	return c.sharder.ring
}
