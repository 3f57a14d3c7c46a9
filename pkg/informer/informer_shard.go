package informer

import (
	"context"
	"time"
)

// ShardSelector returns the informer's current shard selector (nil: every
// object).
func (s *SharedIndexInformer) ShardSelector() *ShardSelector { return s.shard.Load() }

// ShardSettled reports whether the last list the Reflector installed was
// made with the current shard selector, so every object of the current
// shard, as of that list, is in the store or queued for it. It is false
// before the first list, and from a SetShardSelector that changes the
// selector until the relist it causes has been queued.
func (s *SharedIndexInformer) ShardSettled() bool {
	_, ok := s.settledShard()
	return ok
}

// settledShard returns the current shard selector and whether it settled.
func (s *SharedIndexInformer) settledShard() (*ShardSelector, bool) {
	sel, _, ok := s.settledShardList()
	return sel, ok
}

// settledShardList is settledShard with the resourceVersion of the list
// that settled it ("" when not settled).
func (s *SharedIndexInformer) settledShardList() (*ShardSelector, string, bool) {
	cur := s.shard.Load()
	r := s.getReflector()
	if r == nil {
		return cur, "", false
	}
	l := r.listedShard.Load()
	if l == nil || l.sel != cur {
		return cur, "", false
	}
	return cur, l.rv, true
}

// ShardHolds reports whether the store's answer for key is final for the
// current shard: the shard settled (ShardSettled) and no delta of key is
// queued or being applied (an object of the settling list not applied yet is
// pending). It returns the current selector (nil: every object), for the
// caller to decide whether key's object, which it may know only in part (a
// namespace, not a uid), would be in it: if so, and the store lacks key, the
// object did not exist as of the store's resourceVersion.
func (s *SharedIndexInformer) ShardHolds(key string) (*ShardSelector, bool) {
	sel, ok := s.settledShard()
	return sel, ok && !s.fifo.pending(key)
}

// AwaitApplied waits, at most timeout, while a batch holding a delta of key
// is being applied (popped, not yet processed), and reports whether it
// waited. A reader that found key absent while its delta was in flight reads
// again after it: the store's answer is then final for that delta (see
// ShardHolds, which counts an in-flight key as pending). A key only queued is
// not waited for.
func (s *SharedIndexInformer) AwaitApplied(key string, timeout time.Duration) bool {
	return s.fifo.awaitNotInFlight(key, timeout)
}

// ServerSharding reports what the informer learnt of the server's support
// for shardSelector (ServerShardingUnknown before its first sharded list).
func (s *SharedIndexInformer) ServerSharding() ServerSharding {
	if r := s.getReflector(); r != nil {
		return r.ServerSharding()
	}
	return ServerShardingUnknown
}

// SetShardSelector moves the informer to another shard (nil: every object),
// before or after Run:
//
// objects sel does not select are evicted from the store without a Delete
// notification (a hand-off is not a deletion), then the Reflector relists
// and watches with sel (what sel adds reaches the handlers as Adds). It
// returns once the evicted objects are out of the store, or with ctx's error
// (the eviction goes on). The store holds a subset of the union of the old
// and the new shard meanwhile, exactly the new shard once relisted.
func (s *SharedIndexInformer) SetShardSelector(ctx context.Context, sel *ShardSelector) error {
	s.shardMu.Lock()
	defer s.shardMu.Unlock()
	// An equal selector changes nothing, and the current value stays: the
	// Reflector's listed selector is compared with it by identity
	// (settledShard), so a new value would read as a change never listed.
	if s.shard.Load().Equal(sel) {
		return nil
	}
	s.shard.Store(sel)
	// The FIFO first: from now on nothing outside sel enters, and what is
	// stored outside it is evicted; then the Reflector lists sel.
	evicted := s.fifo.SetFilter(sel)
	// Run reads s.shard and builds the Reflector under s.mu: a Reflector
	// built after the Swap has sel already.
	r := s.getReflector()
	if r != nil {
		r.SetShardSelector(sel)
	}
	if r == nil && len(evicted) > 0 {
		// Not running: nobody pops the evictions, and the store is empty anyway
		// unless filled by hand.
		return nil
	}
	return s.awaitGone(ctx, evicted)
}

// awaitGone waits until none of keys is in the store. The informer loop pops
// the Evicted deltas in queue order; a key cannot come back meanwhile (the
// FIFO's filter rejects it).
func (s *SharedIndexInformer) awaitGone(ctx context.Context, keys []string) error {
	const poll = 10 * time.Millisecond
	for len(keys) > 0 {
		if _, ok, _ := s.indexer.GetByKey(keys[len(keys)-1]); !ok {
			keys = keys[:len(keys)-1]
			continue
		}
		if s.IsStopped() {
			return nil
		}
		t := s.clock.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
	}
	return nil
}
