package informer

import (
	"errors"
	"sync"
	"sync/atomic"

	toolscache "k8s.io/client-go/tools/cache"
)

// deltaType is the kind of change a Delta carries.
type deltaType string

// The Delta types, as in client-go.
const (
	// deltaAdded: a watch ADDED event.
	deltaAdded deltaType = "Added"
	// deltaUpdated: a watch MODIFIED event.
	deltaUpdated deltaType = "Updated"
	// deltaDeleted: a watch DELETED event (Object is the last state) or, from
	// Replace, a toolscache.DeletedFinalStateUnknown tombstone.
	deltaDeleted deltaType = "Deleted"
	// deltaReplaced: the object was part of a (re)list; it may or may not have
	// changed.
	deltaReplaced deltaType = "Replaced"
	// deltaSync: a periodic resync re-delivers the stored object.
	deltaSync deltaType = "Sync"
	// deltaEvicted: the object left the FIFO's filter (a shard hand-off, see
	// deltaFIFO.SetFilter): it is removed from the store without a
	// notification.
	deltaEvicted deltaType = "Evicted"
)

// delta is one change of one object. Object is the object after the change,
// or for Deleted the last known state (possibly a DeletedFinalStateUnknown).
type delta struct {
	Type   deltaType
	Object any
}

// deltaList are the pending changes of one key, oldest first.
type deltaList []delta

// Oldest returns the oldest delta, or nil if there is none.
func (d deltaList) Oldest() *delta {
	if len(d) == 0 {
		return nil
	}
	return &d[0]
}

// Newest returns the newest delta, or nil if there is none.
func (d deltaList) Newest() *delta {
	if len(d) == 0 {
		return nil
	}
	return &d[len(d)-1]
}

// keyListerGetter is what the DeltaFIFO needs to know about the store it
// feeds (its "known objects"): the Indexer implements it.
type keyListerGetter interface {
	ListKeys() []string
	GetByKey(key string) (item any, exists bool, err error)
}

// bookmarker is implemented by known objects that track the store's RV.
type bookmarker interface{ Bookmark(rv string) }

// popProcessFunc processes all pending Deltas of one key. isInInitialList is
// true while the items of the first Replace are being popped.
type popProcessFunc func(deltas deltaList, isInInitialList bool) error

// errFIFOClosed is returned by Pop once the DeltaFIFO is closed and empty.
var errFIFOClosed = errors.New("DeltaFIFO: queue is closed")

// deltaFIFOOptions configure a DeltaFIFO. All fields are optional.
type deltaFIFOOptions struct {
	// KeyFunction computes keys; default toolscache.DeletionHandlingMetaNamespaceKeyFunc.
	KeyFunction toolscache.KeyFunc
	// KnownObjects is the store the popped Deltas are applied to (the
	// Indexer). Without it, Replace and Delete only know queued keys and
	// Resync does nothing. If it also has Bookmark(rv string), the FIFO calls
	// it with the newest received resourceVersion whenever the queue drains.
	KnownObjects keyListerGetter
}

// deltaFIFO is a queue of keys, each with its pending Deltas; it sits between
// the Reflector (producer) and the informer loop (the single consumer).
//
// Semantics follow client-go's deltaFIFO (Replaced deltas enabled, queued-key
// tombstones as in client-go 1.27+), with these differences:
//
//   - Deltas per key are bounded (see mergeDelta): a burst of changes to one
//     key costs one slot, so the queue holds O(distinct keys) memory.
//   - Pop runs the process function without holding the queue lock, so the
//     Reflector never waits behind a slow consumer; Replace and Resync wait
//     for the in-flight key instead, so their view of the known objects is
//     exact.
//   - When the queue drains it records the newest received resourceVersion in
//     the known objects (Bookmark), so the store's RV is the RV its content
//     reflects.
//   - A relist is popped whole: popBatch hands every key a relist queued to
//     one call of its process function (see Replace), so that the consumer
//     can install the relist at once, as client-go's atomic FIFO (one
//     ReplacedAll delta) lets its consumer do.
type deltaFIFO struct {
	keyFunc toolscache.KeyFunc
	known   keyListerGetter

	mu    sync.Mutex
	cond  sync.Cond
	items map[string]deltaList
	queue []string
	// highWater is the most keys queued at once since the items map was
	// last released (see releaseDrainedLocked).
	highWater int
	// spare are emptied Deltas arrays of popped keys, reused for keys that
	// get queued again (at most maxSpare).
	spare []deltaList

	// populated is set by the first Replace, Add, Update or Delete;
	// initialPopulationCount counts the keys of the first Replace still to be
	// popped (and processed).
	populated              bool
	initialPopulationCount int
	// relistSpan counts the keys at the head of the queue that the last
	// relist queued and that are not popped yet (see Replace).
	relistSpan   int
	synced       chan struct{}
	syncedClosed bool

	processing bool
	// inFlight are the keys of the batch being processed (Pop, popBatch).
	inFlight map[string]struct{}
	// batch is the array of the last popped batch, reused by the next pop.
	batch  []poppedKey
	closed bool

	receivedRV string // newest RV received (object RV, list RV or bookmark)
	appliedRV  string // last RV handed to known objects
	// drainedRV is appliedRV for readers that take no lock (the snapshot
	// writer): every event received up to it has been applied.
	drainedRV atomic.Pointer[string]

	// filter is the shard selector that admits the objects queued by Add,
	// Update, Delete and Replace (nil: every object; see SetFilter).
	filter *ShardSelector
}

// newDeltaFIFO returns an empty, open DeltaFIFO.
func newDeltaFIFO(opts deltaFIFOOptions) *deltaFIFO {
	f := &deltaFIFO{
		keyFunc: opts.KeyFunction,
		known:   opts.KnownObjects,
		items:   map[string]deltaList{},
		synced:  make(chan struct{}),
	}
	if f.keyFunc == nil {
		f.keyFunc = toolscache.DeletionHandlingMetaNamespaceKeyFunc
	}
	f.cond.L = &f.mu
	return f
}

// KeyOf returns the key of obj: an item's (the Reflector's queuedItem), a
// tombstone's, the newest object's of Deltas, else the key function's.
func (f *deltaFIFO) KeyOf(obj any) (string, error) {
	switch o := obj.(type) {
	case *queuedItem:
		return o.key, nil
	case toolscache.DeletedFinalStateUnknown:
		return o.Key, nil
	case deltaList:
		if len(o) == 0 {
			return "", errors.New("DeltaFIFO: empty Deltas have no key")
		}
		return f.KeyOf(o.Newest().Object)
	}
	return f.keyFunc(obj)
}

// Add queues an Added delta for obj.
func (f *deltaFIFO) Add(obj any) error {
	return f.queueObject(deltaAdded, obj)
}

// Update queues an Updated delta for obj.
func (f *deltaFIFO) Update(obj any) error {
	return f.queueObject(deltaUpdated, obj)
}

// Delete queues a Deleted delta for obj, unless its key is neither queued,
// being processed, nor in the known objects: a delete of something the
// consumer never saw is dropped.
func (f *deltaFIFO) Delete(obj any) error {
	return f.queueObject(deltaDeleted, obj)
}

// Replace queues the result of a (re)list: a Replaced delta for every object
// in list, and a Deleted tombstone (toolscache.DeletedFinalStateUnknown) for
// every key that is queued (and not already ending in a delete) or known to
// the store but absent from list. Objects the filter (SetFilter) does not
// admit are left out of the list. resourceVersion is the list's RV. The first
// Replace defines the initial list for HasSynced. Replace waits until no key
// is being processed, so the known objects it consults are current.
//
// Any later Replace is a relist, and the whole queue is then part of it (its
// keys, and the keys queued before it, which it lists, tombstones, or leaves
// ending in their delete):
// the next popBatch takes all of them in one batch, however many they are,
// with poppedKey.relist set (Pop still pops them one by one). A second
// relist before that pop extends the span to the whole queue again.
func (f *deltaFIFO) Replace(list []any, resourceVersion string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.processing {
		f.cond.Wait()
	}
	// listed is needed only to find keys the list no longer has: none if
	// nothing is queued or stored (the initial list).
	var knownKeys []string
	if f.known != nil {
		knownKeys = f.known.ListKeys()
	}
	var listed map[string]struct{}
	if len(f.items) > 0 || len(knownKeys) > 0 {
		listed = make(map[string]struct{}, len(list))
	}
	var errs []error
	for _, obj := range list {
		key, ok, err := f.queueListedLocked(obj)
		if err != nil {
			errs = append(errs, err)
		}
		if ok && listed != nil {
			listed[key] = struct{}{}
		}
	}
	if listed == nil {
		f.finishReplaceLocked(resourceVersion)
		return errors.Join(errs...)
	}

	// Queued keys the list no longer has.
	for key, ds := range f.items {
		if _, ok := listed[key]; ok {
			continue
		}
		newest := ds.Newest()
		if newest.Type == deltaDeleted || newest.Type == deltaEvicted {
			continue
		}
		f.appendLocked(key, delta{Type: deltaDeleted, Object: toolscache.DeletedFinalStateUnknown{Key: key, Obj: newest.Object}})
	}
	// Stored keys the list no longer has.
	if f.known != nil {
		for _, key := range knownKeys {
			if _, ok := listed[key]; ok {
				continue
			}
			if _, queued := f.items[key]; queued {
				continue
			}
			obj, exists, err := f.known.GetByKey(key)
			if err != nil || !exists {
				continue
			}
			f.appendLocked(key, delta{Type: deltaDeleted, Object: toolscache.DeletedFinalStateUnknown{Key: key, Obj: obj}})
		}
	}

	f.finishReplaceLocked(resourceVersion)
	return errors.Join(errs...)
}

// queueListedLocked queues a Replaced delta for the listed object obj,
// unless the filter does not admit it; it returns obj's key and whether it
// was queued, or the key function's error.
func (f *deltaFIFO) queueListedLocked(obj any) (key string, queued bool, err error) {
	if f.filter != nil && !f.admitsLocked(obj) { // unsharded: no call
		return "", false, nil
	}
	key, err = f.KeyOf(obj)
	if err != nil {
		return "", false, toolscache.KeyError{Obj: obj, Err: err}
	}
	f.appendLocked(key, delta{Type: deltaReplaced, Object: obj})
	return key, true, nil
}

// finishReplaceLocked ends a Replace: the first one defines the initial
// list, a later one (a relist) spans the whole queue; resourceVersion is
// received.
func (f *deltaFIFO) finishReplaceLocked(resourceVersion string) {
	if f.populated {
		f.relistSpan = len(f.queue)
	} else {
		f.populated = true
		f.initialPopulationCount = len(f.queue)
	}
	if resourceVersion != "" {
		f.receivedRV = resourceVersion
	}
	f.checkSyncedLocked()
	f.maybeApplyRVLocked()
}

// Resync queues a Sync delta with the stored object for every known key that
// is not queued (a queued key is delivered anyway, and a stored copy would be
// older than what is queued). Like Replace, it first waits until no key is
// being processed, so every key of a batch in flight gets its Sync too, with
// the object that batch stored (as client-go's, whose Pop holds the queue lock
// while processing). It must not be called from the process function.
func (f *deltaFIFO) Resync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.processing {
		f.cond.Wait()
	}
	if f.known == nil {
		return nil
	}
	for _, key := range f.known.ListKeys() {
		if _, queued := f.items[key]; queued {
			continue
		}
		obj, exists, err := f.known.GetByKey(key)
		if err != nil || !exists {
			continue
		}
		f.appendLocked(key, delta{Type: deltaSync, Object: obj})
	}
	return nil
}

// Bookmark records rv as received. The known objects get it (Bookmark) once
// every delta received before it has been processed.
func (f *deltaFIFO) Bookmark(rv string) {
	if rv == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.receivedRV = rv
	f.maybeApplyRVLocked()
}

// Pop waits for a queued key, removes it with all its Deltas and calls
// process with them, without holding the queue lock. It returns process's
// error, or ErrFIFOClosed once the queue is closed (queued keys are dropped).
// There must be a single consumer. An item of the initial list counts as
// popped (for HasSynced) only after process returned. process may keep the
// Deltas.
func (f *deltaFIFO) Pop(process popProcessFunc) error {
	return f.pop(1, false, func(batch []poppedKey, _ int) error {
		return process(batch[0].deltas, batch[0].initial)
	})
}

// poppedKey is one key popped by popBatch, with its Deltas; initial is true
// for the items of the first Replace (isInInitialList), relist for the keys
// of a relist popped whole (see Replace): a batch's relist keys come first.
type poppedKey struct {
	key     string
	deltas  deltaList
	initial bool
	relist  bool
}

// popBatch is Pop for up to maxKeys keys at once (a maxKeys below 1 counts
// as 1): it waits for a queued key, removes the oldest keys (at most maxKeys,
// but every key of a pending relist, see Replace) with their Deltas and
// calls process with them, in queue order, and the number of keys still
// queued, without holding the queue lock. The keys count as in flight (for
// Delete, Replace and Resync) until process returns, and the initial-list
// items among them count as popped (for HasSynced) only then. process must
// not keep the batch or its Deltas after it returns: their arrays are reused
// for later keys.
func (f *deltaFIFO) popBatch(maxKeys int, process func(batch []poppedKey, queued int) error) error {
	return f.pop(maxKeys, true, process)
}

// pop implements Pop and popBatch; batched (popBatch) takes a pending relist
// whole and reuses the batch's Deltas arrays once process returns.
func (f *deltaFIFO) pop(maxKeys int, batched bool, process func(batch []poppedKey, queued int) error) error {
	f.mu.Lock()
	for len(f.queue) == 0 || f.closed {
		if f.closed {
			f.mu.Unlock()
			return errFIFOClosed
		}
		f.cond.Wait()
	}
	n := min(max(maxKeys, 1), len(f.queue))
	relist := 0
	if batched {
		relist = min(f.relistSpan, len(f.queue))
		n = max(n, relist)
	}
	f.relistSpan -= min(n, f.relistSpan)
	// A key is initial while the initial list is not fully popped.
	initial := n
	if f.populated {
		initial = min(n, f.initialPopulationCount)
	}
	if f.inFlight == nil {
		f.inFlight = make(map[string]struct{}, n)
	}
	batch := f.batch[:0]
	if cap(batch) < n {
		batch = make([]poppedKey, 0, n)
	}
	for i, key := range f.queue[:n] {
		batch = append(batch, poppedKey{key: key, deltas: f.items[key], initial: i < initial, relist: i < relist})
		delete(f.items, key)
		f.inFlight[key] = struct{}{}
		f.queue[i] = ""
	}
	f.queue = f.queue[n:]
	f.releaseDrainedLocked()
	queued := len(f.queue)
	f.processing = true
	f.mu.Unlock()

	// Deferred, so that a panicking process leaves the queue usable.
	defer f.endPop(batch, batched)
	return process(batch, queued)
}

// endPop ends the processing of batch: its keys are no longer in flight,
// its initial-list items count as popped, and with reuse its Deltas arrays
// are kept for later keys.
func (f *deltaFIFO) endPop(batch []poppedKey, reuse bool) {
	n := len(batch)
	f.mu.Lock()
	for i := range batch {
		if !reuse || len(f.spare) >= maxSpare {
			break
		}
		if ds := batch[i].deltas; cap(ds) > 0 && cap(ds) <= 4 {
			clear(ds)
			f.spare = append(f.spare, ds[:0])
		}
	}
	// The batch array is reused by the next pop (single consumer), unless
	// sized for a large list; it must not keep the popped objects alive.
	clear(batch)
	f.batch = nil
	if cap(batch) <= drainedRelease {
		f.batch = batch[:0]
	}
	f.processing = false
	clear(f.inFlight)
	if len(f.queue) == 0 && n > drainedRelease {
		f.inFlight = nil // a map never shrinks
	}
	if f.initialPopulationCount > 0 {
		f.initialPopulationCount -= min(n, f.initialPopulationCount)
		f.checkSyncedLocked()
	}
	f.maybeApplyRVLocked()
	f.cond.Broadcast()
	f.mu.Unlock()
}

// drainedRelease is the number of distinct keys queued at once above which
// a drained queue gives its map and array back to the garbage collector
// (a Go map never shrinks): after an initial list, the FIFO would otherwise
// hold tens of bytes per listed object for the informer's life.
const drainedRelease = 256

// drainedMapRelease is drainedRelease for the items map and queue array:
// higher, because a burst of updates fills and drains the queue again and
// again, and a map given back is grown anew each time.
const drainedMapRelease = 1024

// releaseDrainedLocked replaces the items map and queue array by small
// ones when the queue is empty and they once held many keys.
func (f *deltaFIFO) releaseDrainedLocked() {
	// While an initial list is streamed in (see initialStreamer) the queue
	// drains between its parts: the map is kept for the next part, and let
	// go at the first drain once the list has ended.
	if len(f.queue) > 0 || f.highWater <= drainedMapRelease || !f.populated {
		return
	}
	f.items = map[string]deltaList{}
	f.queue = nil
	f.highWater = 0
}

// inFlightLocked reports whether key is being processed (Pop or popBatch).
func (f *deltaFIFO) inFlightLocked(key string) bool {
	if !f.processing {
		return false
	}
	_, ok := f.inFlight[key]
	return ok
}

// HasSynced reports whether every key of the first Replace has been popped
// and processed, or whether Add, Update or Delete was called before any
// Replace.
func (f *deltaFIFO) HasSynced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hasSyncedLocked()
}

// Synced returns a channel that is closed when HasSynced becomes true.
func (f *deltaFIFO) Synced() <-chan struct{} { return f.synced }

// Len returns the number of queued keys.
func (f *deltaFIFO) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue)
}

// Close closes the queue: blocked and future Pops return ErrFIFOClosed.
func (f *deltaFIFO) Close() {
	f.mu.Lock()
	f.closed = true
	f.cond.Broadcast()
	f.mu.Unlock()
}

// IsClosed reports whether Close was called.
func (f *deltaFIFO) IsClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

func (f *deltaFIFO) hasSyncedLocked() bool {
	return f.populated && f.initialPopulationCount == 0
}

func (f *deltaFIFO) markPopulatedLocked() {
	if !f.populated {
		f.populated = true
		f.checkSyncedLocked()
	}
}

func (f *deltaFIFO) checkSyncedLocked() {
	if !f.syncedClosed && f.hasSyncedLocked() {
		f.syncedClosed = true
		close(f.synced)
	}
}

// maybeApplyRVLocked hands the newest received RV to the known objects when
// nothing is queued or in flight: the store then reflects that RV.
func (f *deltaFIFO) maybeApplyRVLocked() {
	if len(f.queue) > 0 || f.processing || f.receivedRV == f.appliedRV {
		return
	}
	if b, ok := f.known.(bookmarker); ok {
		b.Bookmark(f.receivedRV)
	}
	f.appliedRV = f.receivedRV
	rv := f.receivedRV
	f.drainedRV.Store(&rv)
}

// queueObject records obj's RV and appends a delta of type t; a Deleted
// delta of a key the consumer never saw (see Delete) is dropped.
func (f *deltaFIFO) queueObject(t deltaType, obj any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.markPopulatedLocked()
	key, err := f.KeyOf(obj)
	if err != nil {
		return toolscache.KeyError{Obj: obj, Err: err}
	}
	if f.filter != nil && !f.admitsLocked(obj) { // unsharded: no call
		return nil
	}
	if t == deltaDeleted {
		if known, err := f.knowsLocked(key); !known {
			return err
		}
	}
	var rv string
	if e, ok := obj.(*queuedItem); ok { // the Reflector's: its RV read once
		rv = e.rv
	} else {
		rv = objectRV(obj)
	}
	if rv != "" {
		f.receivedRV = rv
	}
	f.appendLocked(key, delta{Type: t, Object: obj})
	return nil
}

// knowsLocked reports whether key is queued, being processed or stored in
// the known objects, and the known objects' lookup error.
func (f *deltaFIFO) knowsLocked(key string) (bool, error) {
	if _, queued := f.items[key]; queued || f.inFlightLocked(key) {
		return true, nil
	}
	if f.known == nil {
		return false, nil
	}
	_, exists, err := f.known.GetByKey(key)
	return err == nil && exists, err
}

// maxSpare bounds the Deltas arrays a DeltaFIFO keeps for reuse.
const maxSpare = 1024

// appendLocked merges d into key's Deltas and queues key if it was not.
func (f *deltaFIFO) appendLocked(key string, d delta) {
	old, queued := f.items[key]
	if !queued && len(f.spare) > 0 {
		old = f.spare[len(f.spare)-1]
		f.spare[len(f.spare)-1] = nil
		f.spare = f.spare[:len(f.spare)-1]
	}
	f.items[key] = mergeDelta(old, d)
	if !queued {
		f.queue = append(f.queue, key)
		f.highWater = max(f.highWater, len(f.queue))
	}
	f.cond.Broadcast()
}

// mergeDelta appends d to ds, keeping a key's Deltas bounded (at most three:
// change, delete, change). The rule, with M a change (Added, Updated,
// Replaced, Sync) and D a delete:
//
//   - M then M: one delta with the newest object and the stronger type
//     (Added > Updated > Replaced > Sync), so Added+Updated → Added(latest)
//     and Updated+Updated → Updated(latest).
//   - D then D: one delete, the newer one unless it is a tombstone (client-go's
//     dedup of consecutive deletes).
//   - M then D, or D then M: kept as two (a deletion, or a re-creation).
//   - D, M then D: the re-created object was deleted again before anybody saw
//     it; the trailing M and D are dropped, leaving the first D.
func mergeDelta(ds deltaList, d delta) deltaList {
	n := len(ds)
	if n == 0 {
		if cap(ds) > 0 {
			return append(ds, d)
		}
		return deltaList{d}
	}
	last := ds[n-1]
	switch {
	case d.Type == deltaDeleted && last.Type == deltaDeleted:
		if _, tomb := d.Object.(toolscache.DeletedFinalStateUnknown); !tomb {
			ds[n-1] = d
		}
		return ds
	case d.Type == deltaDeleted:
		if n >= 2 && ds[n-2].Type == deltaDeleted {
			return ds[:n-1]
		}
		return append(ds, d)
	case last.Type == deltaDeleted:
		return append(ds, d)
	default:
		ds[n-1] = delta{Type: strongerType(last.Type, d.Type), Object: d.Object}
		return ds
	}
}

func strongerType(a, b deltaType) deltaType {
	rank := func(t deltaType) int {
		switch t {
		case deltaAdded:
			return 4
		case deltaUpdated:
			return 3
		case deltaReplaced:
			return 2
		case deltaEvicted:
			return 0 // a change that follows an eviction is kept
		default:
			return 1
		}
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}
