// Package informer is deltacache's own implementation of the client-go
// informer machinery, one stage per file in data-path order:
//
//	listwatch.go      ListerWatcher adapters (typed REST, dynamic, metadata-only)
//	reflector.go      Reflector: paginated LIST → Replace, then Watch from the list's RV
//	watch_list.go     the Reflector's streaming initial list (WatchList, opt-in)
//	backoff.go        the Reflector's retry delays
//	errors.go         ListWatchError and the classification of list/watch failures
//	delta_fifo.go     DeltaFIFO: key → Deltas, queue of keys, bounded per key
//	indexer.go        Indexer: thread-safe store with indexes
//	table.go          the Indexer's dense key → object table
//	informer.go       SharedIndexInformer: the pop loop (store first, then handlers), resync
//	handler_queue.go  HandlerRegistration: one goroutine and one coalescing queue per handler
//	metrics.go        Prometheus metrics of the pipeline
//
// Tests use the scriptable fake ListerWatcher of package informertest.
//
// It uses client-go's interfaces and shared types (toolscache.ListerWatcher,
// ResourceEventHandler, ResourceEventHandlerRegistration, DoneChecker,
// DeletedFinalStateUnknown, Indexers, TransformFunc, Store, Indexer,
// SharedIndexInformer, Controller) so that it plugs into controller-runtime,
// but none of client-go's machinery behind them. It knows nothing of
// controller-runtime.
//
// # Semantics shared with client-go (v0.37)
//
//   - The Reflector lists, Replaces the store with the list, then watches from
//     the list's resourceVersion with bookmarks; a watch that ends normally is
//     re-opened from the last RV; 410 Expired/Gone or "too large resource
//     version" causes a relist; other errors back off (0.8s doubling to 30s,
//     full jitter, reset after 2 minutes without failures) and relist.
//   - A relist emits a Replaced delta per listed object and a
//     toolscache.DeletedFinalStateUnknown tombstone for every key that is
//     stored or queued but no longer listed.
//   - The store is updated before handlers are notified. Handlers get
//     OnAdd(obj, isInInitialList), OnUpdate(old, new), OnDelete(obj or
//     tombstone); updates whose resourceVersion did not change (resyncs, and
//     relisted objects that did not change) go only to handlers due for
//     resync.
//   - A registration's HasSynced becomes true when the informer has synced
//     and the handler has processed every object of the initial list.
//   - The transform runs exactly once per received object (in the Reflector,
//     as it is received: listed, streamed or watched), before it is queued;
//     never on bookmarks, tombstones or resyncs.
//
// # Where we go beyond client-go
//
// Bounded queues. Both queues coalesce per key, so their memory is
// O(distinct keys), not O(events), whatever the event rate and however slow
// a handler is.
//
// DeltaFIFO rule (M is a change: Added, Updated, Replaced or Sync; D a delete):
//
//	M + M     → one M with the newest object and the stronger type
//	            (Added > Updated > Replaced > Sync): Added+Updated → Added(latest),
//	            Updated+Updated → Updated(latest)
//	D + D     → one D (the newer, unless it is a tombstone)
//	M + D     → M, D           (kept: a deletion)
//	D + M     → D, M           (kept: a re-creation)
//	D, M + D  → D              (re-created and deleted again while queued)
//
// so a key holds at most three Deltas.
//
// Handler queue rule (per registration; latest state wins):
//
//	Add + Update    → Add(newest)                 (isInInitialList kept)
//	Update + Update → Update(oldest old, newest new)
//	Add + Delete    → nothing delivered (counted as handled for HasSynced)
//	Update + Delete → Delete
//	Delete + Add    → Delete, Add                 (the object was re-created)
//	Delete + Delete → the first Delete
//
// so a key holds at most two notifications. Keys are delivered in the order
// they were first queued; notifications of one key in order.
//
// No lock held while processing. Pop hands a key's Deltas to the informer
// without holding the queue lock, so the Reflector never waits for the pop
// loop; handlers run on their own goroutines, so a stuck handler blocks
// neither the informer nor other handlers. Replace and Resync wait for the
// key being processed, so the tombstones they compute are exact.
//
// The store never goes back in time. Every list is a consistent read
// (resourceVersion ""), never a possibly stale watch-cache read at RV "0"
// (kubernetes#59848); a list whose RV is older than the RV already applied is
// not installed (ReasonStaleList). A continue token that expires mid-list
// restarts one unpaginated consistent list instead of stitching snapshots.
// The store's LastStoreSyncResourceVersion is the RV its content reflects:
// set by Replace, and by the DeltaFIFO when it drains.
//
// Errors are values. Every list/watch error is a *ListWatchError with a
// Reason (Forbidden, NotFound, Expired, TooLargeResourceVersion, Transport,
// ...) that wraps the API error, so apierrors.IsForbidden and friends work;
// the informer keeps the last one as LastError until a list or watch
// succeeds, passes each to the WatchErrorHandler, and logs one line per
// backoff step with the reason and the next delay.
//
// Contained panics. A panicking handler is recovered, logged and counted
// (HandlerRegistration.Panics); delivery continues and the registration
// still syncs. Options.CrashOnHandlerPanic restores client-go's crash.
//
// Resync periods are per handler and exact: the informer wakes when the
// earliest handler is due, also for handlers added after start with a
// shorter period than any before (client-go stretches those).
//
// Stalled watches. A watch that outlives its own server-side timeout by a
// minute without closing is abandoned and re-opened (a dead connection);
// Options.WatchStallTimeout abandons a watch that is silent for less.
//
// Reads hold the lock for microseconds. The Indexer keeps objects in a dense
// slice, so List copies pointers with one copy under the read lock (the
// result is allocated before locking); index buckets hold the objects, so
// ByIndex needs no second lookup; Replace builds the new table and indexes
// before taking the write lock, which it holds only to swap them in.
//
// Metrics. Lists installed, list/watch errors by operation and reason,
// handler panics, and whether each informer has synced
// (deltacache_informer_*; see RegisterMetrics). client-go has no reflector
// metrics.
//
// WatchList. Options.WatchList streams the initial list (sendInitialEvents,
// KEP-3157) when the ListerWatcher does not opt out, collecting transformed
// objects, and falls back to a paginated LIST if the stream fails or its
// initial-events-end bookmark does not arrive within WatchListTimeout
// (client-go waits forever). It is off by default, and our adapters opt out
// (IsWatchListSemanticsUnSupported() == true) for now: the default path is the
// paginated LIST.
package informer
