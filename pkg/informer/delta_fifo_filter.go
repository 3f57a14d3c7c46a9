package informer

import (
	"time"

	toolscache "k8s.io/client-go/tools/cache"
)

// SetFilter makes sel the FIFO's shard filter (nil admits everything) and
// evicts what it no longer admits, in one step under the queue lock:
//
//   - from then on, Add, Update, Delete and Replace drop the objects sel
//     does not select (a Replace leaves them out of the list, so they get no
//     tombstone either);
//   - every queued key whose newest object sel does not select, and every
//     stored key (known objects) whose object it does not select, gets a
//     single Evicted delta in place of what was queued: the consumer removes
//     it from the store without notifying anybody (a shard hand-off is not a
//     deletion).
//
// It returns the keys given an Evicted delta. Like Replace, it first waits
// until no key is being processed, so the known objects it consults are
// current. The filter is ShardSelector.admits, the Reflector's too (see there
// why it runs in both).
func (f *deltaFIFO) SetFilter(sel *ShardSelector) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.processing {
		f.cond.Wait()
	}
	f.filter = sel
	if sel == nil {
		return nil
	}
	var evicted []string
	for key, ds := range f.items {
		obj := ds.Newest().Object
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if obj == nil || sel.admits(obj) {
			continue
		}
		f.items[key] = append(ds[:0], delta{Type: deltaEvicted, Object: obj})
		evicted = append(evicted, key)
	}
	if f.known == nil {
		return evicted
	}
	for _, key := range f.known.ListKeys() {
		if _, queued := f.items[key]; queued {
			continue
		}
		obj, exists, err := f.known.GetByKey(key)
		if err != nil || !exists || sel.admits(obj) {
			continue
		}
		f.appendLocked(key, delta{Type: deltaEvicted, Object: obj})
		evicted = append(evicted, key)
	}
	return evicted
}

// admitsLocked reports whether the shard filter, which must be set, admits
// obj (callers test f.filter != nil first: an unsharded queue makes no call).
// f.mu held.
func (f *deltaFIFO) admitsLocked(obj any) bool {
	return f.filter.admits(obj)
}

// awaitNotInFlight polls, every awaitPoll and at most timeout, until key is
// not in a batch being processed; it reports whether key was in flight at
// the first look. Batches apply in microseconds to milliseconds (a whole
// relist: up to a few hundred), and only a read that missed waits.
func (f *deltaFIFO) awaitNotInFlight(key string, timeout time.Duration) bool {
	f.mu.Lock()
	inFlight := f.inFlightLocked(key)
	f.mu.Unlock()
	if !inFlight {
		return false
	}
	// Wall-clock time, not the informer's clock: a brief wait of a read, which a
	// fake clock must not see.
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		time.Sleep(awaitPoll)
		f.mu.Lock()
		inFlight = f.inFlightLocked(key)
		f.mu.Unlock()
		if !inFlight {
			break
		}
	}
	return true
}

// awaitPoll is awaitNotInFlight's polling interval.
const awaitPoll = 100 * time.Microsecond

// pending reports whether a delta of key is queued or being processed: the
// store's entry of key may be about to change. SharedIndexInformer.ShardHolds
// uses it to tell an object of a list in flight from an absent one.
func (f *deltaFIFO) pending(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, queued := f.items[key]
	return queued || f.inFlightLocked(key)
}
