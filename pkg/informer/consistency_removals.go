package informer

import (
	"sync"
	"sync/atomic"
)

// checkRemovals records the keys the informer loop removes from the store
// (a Deleted delta: a watch DELETED event, or a relist's tombstone) while a
// consistency check runs. A check lists the server at some resourceVersion
// and compares the store afterwards, once it has caught up: an object the
// list had and the store removed since was deleted at the server after the
// list (a later list or event said so), and its absence proves nothing. The
// store keeps no deletion record, so without this every object deleted
// between a check's list and its comparison would read as missing (its
// listed resourceVersion is older than the store's), which the sharded soak
// found in bursts after its faults, when the store caught up on many deletes
// during a check.
type checkRemovals struct {
	// running counts the checks running (changed under mu, read without it by
	// note); keys is nil when none runs.
	running atomic.Int32
	mu      sync.Mutex
	keys    map[string]struct{}
}

// begin starts recording for one check; end must follow.
func (c *checkRemovals) begin() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running.Add(1) == 1 {
		c.keys = make(map[string]struct{})
	}
}

// end stops recording for one check; the record goes with the last one.
func (c *checkRemovals) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running.Add(-1) == 0 {
		c.keys = nil
	}
}

// note records that key left the store, if a check runs: an atomic load
// when none does, an uncontended lock per removal while one does.
func (c *checkRemovals) note(key string) {
	if c.running.Load() == 0 {
		return
	}
	c.mu.Lock()
	if c.keys != nil {
		c.keys[key] = struct{}{}
	}
	c.mu.Unlock()
}

// removed reports whether key left the store since the oldest running check
// began.
func (c *checkRemovals) removed(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.keys[key]
	return ok
}
