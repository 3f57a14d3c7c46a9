package informer

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// noteKind is the kind of a handler notification.
type noteKind uint8

const (
	noteAdd noteKind = iota
	noteUpdate
	noteDelete
)

// notification is one pending call of a ResourceEventHandler.
type notification struct {
	kind    noteKind
	oldObj  any // update only
	newObj  any // add, update; for delete the deleted object or tombstone
	initial bool
}

// pendingKey holds the notifications of one key that wait for delivery, as
// mergeNotification leaves them: usually one or two, more only when the key's
// object was deleted and re-created again while its handler was behind.
type pendingKey struct {
	notes []notification
	// buf is notes' initial array, so a key's first notifications cost no
	// allocation of their own.
	buf [2]notification
}

// HandlerRegistration is the toolscache.ResourceEventHandlerRegistration
// AddEventHandler returns. Its handler has its own goroutine and a queue of
// one entry per key; calls come one at a time, in order per key. Updates that
// wait for a slow handler are merged into the newest state, but every object
// it could have been told of reaches it, and so does its Delete (created and
// deleted meanwhile: Add, then Delete, as in client-go). A stuck handler costs
// memory per distinct key (plus two notifications per re-creation), never
// blocks the informer or other handlers.
type HandlerRegistration struct {
	informer *SharedIndexInformer
	handler  toolscache.ResourceEventHandler
	name     string
	// label is the "handler" label of the registration's series, unique
	// among the informer's registrations (see uniqueHandlerLabelLocked).
	label        string
	resyncPeriod time.Duration
	crash        bool
	log          logr.Logger

	// nextResync is guarded by the informer's deliverMu.
	nextResync time.Time

	mu sync.Mutex
	// pending holds one entry per key: its notifications coalesced into the
	// key's sequence of lives, each shortened to its newest state, never
	// merged away (see mergeNotification).
	pending map[string]*pendingKey
	order   []string
	// highWater is the most keys pending at once since pending was last
	// replaced (a Go map never shrinks; see next).
	highWater int
	// spare are delivered pendingKeys, reused by enqueue (at most maxSpare).
	spare   []*pendingKey
	wake    chan struct{}
	stopCh  chan struct{}
	exited  chan struct{}
	started bool
	stopped bool

	informerSynced bool
	initialLeft    int // initial-list adds not yet delivered (or merged into another)
	// initialQueued counts the initial-list adds enqueued, initialSince the
	// time of the first, syncedAt the time synced closed (see InitialProgress).
	initialQueued int
	initialSince  time.Time
	syncedAt      time.Time
	synced        chan struct{}
	syncedClosed  bool

	panics atomic.Uint64
	// metrics are this handler's series; only the delivery goroutine uses them.
	metrics handlerMetrics
}

var _ toolscache.ResourceEventHandlerRegistration = (*HandlerRegistration)(nil)

func newRegistration(
	s *SharedIndexInformer, h toolscache.ResourceEventHandler, resync time.Duration, log logr.Logger,
) *HandlerRegistration {
	return &HandlerRegistration{
		informer:     s,
		handler:      h,
		name:         fmt.Sprintf("%s/%T", s.name, h),
		resyncPeriod: resync,
		crash:        s.opts.CrashOnHandlerPanic,
		log:          log,
		pending:      map[string]*pendingKey{},
		wake:         make(chan struct{}, 1),
		stopCh:       make(chan struct{}),
		exited:       make(chan struct{}),
		synced:       make(chan struct{}),
	}
}

// HasSynced reports whether the informer has synced and this handler has
// been handed every object of the initial list (for a handler added after
// start: every object the store held when it was added) and returned.
func (r *HandlerRegistration) HasSynced() bool {
	select {
	case <-r.synced:
		return true
	default:
		return false
	}
}

// HasSyncedChecker returns a DoneChecker whose Done channel closes when
// HasSynced becomes true.
func (r *HandlerRegistration) HasSyncedChecker() toolscache.DoneChecker {
	return doneChecker{name: r.name, done: r.synced}
}

// Name describes the registration: informer name and handler type.
func (r *HandlerRegistration) Name() string { return r.name }

// MetricLabel is the "handler" label of the registration's
// deltacache_handler_* series.
func (r *HandlerRegistration) MetricLabel() string { return r.label }

// pendingCount returns the number of keys with notifications waiting for
// delivery.
func (r *HandlerRegistration) pendingCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.order)
}

// panicCount returns how many handler calls panicked (and were recovered).
func (r *HandlerRegistration) panicCount() uint64 { return r.panics.Load() }

// Stopped returns a channel that is closed once the registration's
// goroutine has exited (after RemoveEventHandler or the informer's end, and
// after a running handler call returned).
func (r *HandlerRegistration) Stopped() <-chan struct{} { return r.exited }

// enqueue adds n for key, coalescing with what is pending for key.
func (r *HandlerRegistration) enqueue(key string, n notification) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	if n.initial {
		r.initialLeft++
		if r.initialQueued == 0 {
			r.initialSince = r.informer.clock.Now()
		}
		r.initialQueued++
	}
	pk, queued := r.pending[key]
	if !queued {
		if n := len(r.spare); n > 0 {
			pk = r.spare[n-1]
			r.spare[n-1] = nil
			r.spare = r.spare[:n-1]
		} else {
			pk = &pendingKey{}
		}
		pk.notes = pk.buf[:0]
		r.pending[key] = pk
		r.order = append(r.order, key)
		r.highWater = max(r.highWater, len(r.order))
	}
	before := countInitial(pk.notes) + boolInt(n.initial)
	pk.notes = mergeNotification(pk.notes, n)
	r.initialLeft -= before - countInitial(pk.notes)
	r.checkSyncedLocked()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// mergeNotification appends n to the pending notifications of one key,
// keeping them the server's sequence of the key's lives (an object, a UID,
// from its creation to its deletion), each shortened to its newest state:
//
//   - Add then Update → Add(newest) (keeps isInInitialList).
//   - Update then Update → Update(oldest old, newest new).
//   - Update then Delete → Delete (the handler knew the object).
//   - Add then Delete → both: the handler hears of the object it could have
//     been told about, then of its end, as client-go's handlers do.
//   - Delete then Add → both (the object was re-created).
//   - Delete then Delete → both if their UIDs differ; else the first (the
//     object the handler knew).
//
// So a key holds at most 1 + 2×(re-creations while its handler is behind)
// notifications: an Update or Delete of the object the handler knew, then an
// Add and, unless it is the live one, a Delete per later life.
func mergeNotification(notes []notification, n notification) []notification {
	if len(notes) == 0 {
		return append(notes, n)
	}
	last := &notes[len(notes)-1]
	switch n.kind {
	case noteAdd, noteUpdate:
		switch last.kind {
		case noteDelete:
			if n.kind == noteUpdate {
				// Cannot happen from the informer; keep the newest state.
				n = notification{kind: noteAdd, newObj: n.newObj, initial: n.initial}
			}
			return append(notes, n)
		case noteAdd:
			last.newObj = n.newObj
			last.initial = last.initial || n.initial
		case noteUpdate:
			last.newObj = n.newObj
		}
		return notes
	default: // noteDelete
		switch last.kind {
		case noteAdd:
			return append(notes, n)
		case noteUpdate:
			// Only a key's first notification can be an Update (after a
			// Delete, a change is an Add): the handler knew the object.
			*last = n
			return notes
		default:
			if deletedUID(last.newObj) == deletedUID(n.newObj) {
				return notes
			}
			return append(notes, n)
		}
	}
}

// deletedUID returns the UID of a Delete notification's object (a runtime
// object, a lazyObject, or a tombstone holding either); "" if it has none.
func deletedUID(o any) types.UID {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	if l, ok := o.(*lazyObject); ok {
		// Decoded once, here rather than when the handler receives it.
		o = l.get()
	}
	if m, err := meta.Accessor(o); err == nil {
		return m.GetUID()
	}
	return ""
}

func countInitial(notes []notification) int {
	c := 0
	for _, n := range notes {
		if n.initial {
			c++
		}
	}
	return c
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// markInformerSynced records that the informer has synced; the registration
// is synced once its initial adds are delivered too.
func (r *HandlerRegistration) markInformerSynced() {
	r.mu.Lock()
	r.informerSynced = true
	r.checkSyncedLocked()
	r.mu.Unlock()
}

func (r *HandlerRegistration) checkSyncedLocked() {
	if !r.syncedClosed && r.informerSynced && r.initialLeft == 0 {
		r.syncedClosed = true
		r.syncedAt = r.informer.clock.Now()
		close(r.synced)
	}
}

// start runs the delivery goroutine (once).
func (r *HandlerRegistration) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started || r.stopped {
		return
	}
	r.started = true
	go r.run()
}

// stop ends delivery: pending notifications are dropped, a running handler
// call finishes. Idempotent.
func (r *HandlerRegistration) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	r.stopped = true
	r.pending, r.order = nil, nil
	close(r.stopCh)
	if !r.started {
		close(r.exited)
	}
}

// isStopped reports whether stop was called.
func (r *HandlerRegistration) isStopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

func (r *HandlerRegistration) run() {
	defer close(r.exited)
	var done *pendingKey
	for {
		key, pk, ok := r.next(done)
		if !ok {
			return
		}
		for i, n := range pk.notes {
			// A key can carry several notifications (a Delete, then the Add of
			// its re-creation); none is delivered once the handler is removed.
			if i > 0 && r.isStopped() {
				break
			}
			r.deliver(key, n)
		}
		done = pk
	}
}

// next waits for the oldest pending key and takes its notifications. done,
// if not nil, is the previous key's, now delivered: its initial-list adds
// count as delivered, and it is kept for reuse.
func (r *HandlerRegistration) next(done *pendingKey) (string, *pendingKey, bool) {
	for {
		r.mu.Lock()
		if done != nil {
			if c := countInitial(done.notes); c > 0 {
				r.initialLeft -= c
				r.checkSyncedLocked()
			}
			if len(r.spare) < maxSpare {
				*done = pendingKey{}
				r.spare = append(r.spare, done)
			}
			done = nil
		}
		if r.stopped {
			r.mu.Unlock()
			return "", nil, false
		}
		for len(r.order) > 0 {
			key := r.order[0]
			r.order[0] = ""
			r.order = r.order[1:]
			pk := r.pending[key]
			delete(r.pending, key)
			if len(r.order) == 0 && r.highWater > drainedMapRelease {
				// Drained after a burst (an initial list): let the
				// collector have the map and array sized for it.
				r.pending, r.order, r.highWater = map[string]*pendingKey{}, nil, 0
			}
			if pk != nil && len(pk.notes) > 0 {
				r.mu.Unlock()
				return key, pk, true
			}
		}
		r.mu.Unlock()
		select {
		case <-r.wake:
		case <-r.stopCh:
		}
	}
}

// deliver calls the handler, containing a panic unless CrashOnHandlerPanic.
func (r *HandlerRegistration) deliver(key string, n notification) {
	start := r.informer.clock.Now()
	defer func() {
		p := recover()
		r.observeDelivery(start, p != nil)
		if p != nil {
			if r.crash {
				panic(p)
			}
			r.panics.Add(1)
			r.log.Error(fmt.Errorf("panic: %v", p), "event handler panicked; continuing",
				"handler", r.name, "key", key, "panics", r.panics.Load())
		}
	}()
	switch n.kind {
	case noteAdd:
		r.handler.OnAdd(resolveObject(n.newObj), n.initial)
	case noteUpdate:
		r.handler.OnUpdate(resolveObject(n.oldObj), resolveObject(n.newObj))
	case noteDelete:
		r.handler.OnDelete(resolveObject(n.newObj))
	}
}

// doneChecker implements toolscache.DoneChecker.
type doneChecker struct {
	name string
	done <-chan struct{}
}

func (d doneChecker) Name() string          { return d.name }
func (d doneChecker) Done() <-chan struct{} { return d.done }
