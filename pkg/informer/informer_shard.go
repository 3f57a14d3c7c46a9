package informer

import (
	"context"
	"time"
)

// ShardSelector returns the informer's current shard selector (nil: every
// object).
func (s *SharedIndexInformer) ShardSelector() *ShardSelector { return s.shard.Load() }

// ShardSettled reports whether the last list the Reflector installed used
// the current shard selector, so every object of the shard, as of that list,
// is in the store or queued. False before the first list, and from a
// SetShardSelector that changes the selector until its relist is queued.
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
// current shard: ShardSettled and no delta of key queued or being applied.
// It returns the current selector (nil: everything) for the caller to decide
// whether key's object, maybe known only in part (a namespace, not a uid), is
// in it: if so and the store lacks key, it did not exist at the store's RV.
func (s *SharedIndexInformer) ShardHolds(key string) (*ShardSelector, bool) {
	sel, ok := s.settledShard()
	return sel, ok && !s.fifo.pending(key)
}

// AwaitApplied waits, at most timeout, while a batch holding a delta of key is
// being applied (popped, not yet processed; a queued key is not waited for),
// and reports whether it waited: a reader that found key absent meanwhile
// reads again, and the store's answer is then final for that delta.
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
// before or after Run: objects sel drops leave the store without a Delete
// (a hand-off is no deletion), then the Reflector relists and watches with
// sel (what it adds comes as Adds). It returns once those objects are out,
// or with ctx's error (the eviction goes on). Meanwhile the store holds a
// subset of the old and new shards' union; once relisted, the new shard.
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
