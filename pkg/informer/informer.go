package informer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/clock"
)

var _ toolscache.SharedIndexInformer = (*SharedIndexInformer)(nil)

// minimumResyncPeriod is the smallest resync period a handler can get;
// shorter non-zero periods are raised to it.
const minimumResyncPeriod = time.Second

// Options configure a SharedIndexInformer. Every field is optional.
type Options struct {
	// Name for logs and errors, e.g. "Pod.v1."; default: the example
	// object's Go type (its GVK for unstructured objects).
	Name string
	// ResyncPeriod of handlers added with AddEventHandler; 0 = never.
	ResyncPeriod time.Duration
	// Indexers are the initial indexes (more via AddIndexers, also after start).
	Indexers toolscache.Indexers
	// NamespaceScoped names the namespace-scoped indexes: see IndexerOptions.
	NamespaceScoped func(indexName string) bool
	// Transform runs once on every object received (listed or watched)
	// before it is stored; never on tombstones or resyncs.
	Transform toolscache.TransformFunc
	// WatchErrorHandler gets every list/watch error (a *ListWatchError) with
	// a stand-in *toolscache.Reflector, never run, of the informer's name.
	WatchErrorHandler toolscache.WatchErrorHandlerWithContext
	// Logger; zero value: logr.FromContextOrDiscard(ctx) of RunWithContext.
	Logger logr.Logger
	// PageSize of LIST requests; 0 = 500.
	PageSize int64

	// CrashOnHandlerPanic re-panics when a handler panics (client-go's
	// default); false: the panic is recovered, logged and counted.
	CrashOnHandlerPanic bool
	// Backoff between failed list/watch attempts; zero value = DefaultBackoff.
	Backoff Backoff
	// MinWatchTimeout: each watch asks for a timeout in [min, 2×min];
	// 0 = 5 minutes.
	MinWatchTimeout time.Duration
	// WatchStallTimeout: a watch silent (no event, no bookmark) this long is
	// re-opened from the last RV, logged and counted in
	// deltacache_informer_errors_total{op="watch",reason="WatchStalled"};
	// 0 = 2 minutes (two of kube-apiserver's bookmark intervals); negative =
	// only a watch outliving its server-side timeout by a minute.
	WatchStallTimeout time.Duration
	// Clock for timers (resync, backoff, watch stalls); default real time.
	Clock clock.WithTicker
	// DisableWatchList makes every list a paginated LIST. Default: lists are
	// streamed (WatchList, KEP-3157, as client-go since v0.35) unless the
	// ListerWatcher opts out (IsWatchListSemanticsUnSupported); a server
	// that refuses or never ends the stream gets LIST from then on.
	DisableWatchList bool
	// WatchListTimeout: a WatchList stream silent this long before its
	// initial-events-end bookmark, or not ended within three of it, falls
	// back to LIST; 0 = 10 s (client-go waits without bound).
	WatchListTimeout time.Duration

	// MetricLabels of the informer's series; zero value: the example
	// object's GroupVersionKind and shape.
	MetricLabels MetricLabels
	// ConsistencyCheck: see ConsistencyCheck; the zero value is off.
	ConsistencyCheck ConsistencyCheck
	// HandlerLabel names a registration in the "handler" label of the
	// deltacache_handler_* series; nil or "" = the default: its HandlerName
	// (NamedHandler), else its Go type with package paths cut to package
	// names ("cache.ResourceEventHandlerFuncs"); "#2", "#3"... appended to a
	// label a live registration of the informer already has.
	HandlerLabel func(toolscache.ResourceEventHandler) string
	// Metrics receives the informer's metrics; nil = DefaultMetrics.
	Metrics *Metrics
	// ListProgressInterval: a long list, and each registration not synced
	// once the informer has, logs its progress this often; 0 = 5 s,
	// negative = never.
	ListProgressInterval time.Duration

	// StorageCodec turns on compact storage: the store holds objects encoded
	// and every read decodes a new object. Handlers get objects as received
	// (an OnUpdate's old object decoded once for all). An object the codec
	// fails on is kept decoded (counted, logged once per key). nil = stored
	// as received (client-go's behaviour). Codecs: package codec.
	StorageCodec StorageCodec

	// ShardSelector restricts the informer to one shard (KEP-5866), sent on
	// every request and applied on the client too; nil = every object.
	ShardSelector *ShardSelector

	// Snapshot writes the store to a file (at an interval and at stop) and
	// starts the informer from it, caught up with the server, instead of a
	// full list; the zero value is off. Needs StorageCodec.
	Snapshot Snapshot
}

// SharedIndexInformer implements toolscache.SharedIndexInformer: Reflector →
// DeltaFIFO → Indexer, then handlers (see HandlerRegistration). It runs once,
// until its context ends (then IsStopped; no handler can be added). A key new
// to the store is an OnAdd (isInInitialList for the first list), a stored key
// an OnUpdate (if unchanged, only to handlers due for resync), a deleted one
// an OnDelete (obj or a DeletedFinalStateUnknown).
type SharedIndexInformer struct {
	name string
	lw   toolscache.ListerWatcherWithContext
	// watchListUnsupported: the ListerWatcher given to the constructor opts
	// out of WatchList (kept because the context wrapper hides it).
	watchListUnsupported bool
	example              runtime.Object
	opts                 Options
	clock                clock.WithTicker
	indexer              *Indexer
	fifo                 *deltaFIFO

	// deliverMu is held while a popped key is applied and distributed, and
	// while handlers are added or removed (so a new handler's replay and the
	// live events do not overlap) and while resync due-ness is decided.
	deliverMu sync.Mutex
	// syncing are the handlers due for resync in the current round.
	syncing map[*HandlerRegistration]bool
	// notes is handleBatch's buffer, reused from batch to batch.
	notes []batchNote

	mu                sync.Mutex
	started, stopped  bool
	syncMarked        bool
	transform         toolscache.TransformFunc
	watchErrorHandler toolscache.WatchErrorHandlerWithContext
	handlers          []*HandlerRegistration
	reflector         *reflector
	// checkMu guards lastDrift, the last consistency check's report.
	checkMu   sync.Mutex
	lastDrift *DriftReport
	// removals: the keys removed from the store while a check runs.
	removals   checkRemovals
	log        logr.Logger
	startTime  time.Time
	resyncWake chan struct{}
	// progressWake wakes syncProgressLoop (buffer of one).
	progressWake chan struct{}
	// obs is the informer's metric state, set once by Run.
	obs atomic.Pointer[informerMetrics]
	// codecErrs are the keys whose storage codec errors were logged.
	codecErrs codecErrors
	// shard is the current shard selector, changed under shardMu (see
	// SetShardSelector).
	shard   atomic.Pointer[ShardSelector]
	shardMu sync.Mutex
}

// NewSharedIndexInformer returns an informer for the objects lw lists and
// watches, of exampleObject's Go type (e.g. &corev1.Pod{}). An lw without
// context-aware methods is wrapped (toolscache.ToListerWatcherWithContext).
func NewSharedIndexInformer(
	lw toolscache.ListerWatcher, exampleObject runtime.Object, opts Options,
) *SharedIndexInformer {
	s := &SharedIndexInformer{
		lw:                   toolscache.ToListerWatcherWithContext(lw),
		watchListUnsupported: watchlist.DoesClientNotSupportWatchListSemantics(lw),
		example:              exampleObject,
		opts:                 opts,
		clock:                opts.Clock,
		transform:            opts.Transform,
		watchErrorHandler:    opts.WatchErrorHandler,
		resyncWake:           make(chan struct{}, 1),
		progressWake:         make(chan struct{}, 1),
		log:                  opts.Logger,
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	s.name = opts.Name
	if s.name == "" {
		s.name = objectTypeName(exampleObject)
	}
	s.indexer = NewIndexerWithOptions(toolscache.DeletionHandlingMetaNamespaceKeyFunc, opts.Indexers,
		IndexerOptions{Codec: opts.StorageCodec, OnCodecError: s.codecError, NamespaceScoped: opts.NamespaceScoped})
	s.fifo = newDeltaFIFO(deltaFIFOOptions{
		KeyFunction:  toolscache.DeletionHandlingMetaNamespaceKeyFunc,
		KnownObjects: s.indexer,
	})
	s.shard.Store(opts.ShardSelector)
	s.fifo.SetFilter(opts.ShardSelector)
	return s
}

// NewInformer has the signature of controller-runtime's
// cache.Options.NewInformer hook: an informer with the given default resync
// period and indexes.
func NewInformer(
	lw toolscache.ListerWatcher, exampleObject runtime.Object, resync time.Duration, indexers toolscache.Indexers,
) toolscache.SharedIndexInformer {
	return NewSharedIndexInformer(lw, exampleObject, Options{ResyncPeriod: resync, Indexers: indexers})
}

// Name returns the informer's name.
func (s *SharedIndexInformer) Name() string { return s.name }

// Indexer returns the live store (the same object as GetIndexer()).
func (s *SharedIndexInformer) Indexer() *Indexer { return s.indexer }

// GetStore returns the live store.
func (s *SharedIndexInformer) GetStore() toolscache.Store { return s.indexer }

// GetIndexer returns the live store.
func (s *SharedIndexInformer) GetIndexer() toolscache.Indexer { return s.indexer }

// AddIndexers adds indexes to the store at any time, back-filled; a duplicate
// name is an error.
func (s *SharedIndexInformer) AddIndexers(indexers toolscache.Indexers) error {
	return s.indexer.AddIndexers(indexers)
}

// HasSynced reports whether the first list is in the store (and the handlers'
// queues); per handler: the registration's HasSynced.
func (s *SharedIndexInformer) HasSynced() bool { return s.fifo.HasSynced() }

// HasSyncedChecker returns a DoneChecker that completes when HasSynced does.
func (s *SharedIndexInformer) HasSyncedChecker() toolscache.DoneChecker {
	return doneChecker{name: s.name, done: s.fifo.Synced()}
}

// LastSyncResourceVersion returns the RV of the last list, event or bookmark
// seen by the Reflector; "" before Run.
func (s *SharedIndexInformer) LastSyncResourceVersion() string {
	if r := s.getReflector(); r != nil {
		return r.LastSyncResourceVersion()
	}
	return ""
}

// LastError returns the last list/watch error that keeps the informer from
// being in sync (a *ListWatchError wrapping the API error, so
// apierrors.IsForbidden etc. work), or nil when healthy.
func (s *SharedIndexInformer) LastError() error {
	if r := s.getReflector(); r != nil {
		return r.LastError()
	}
	return nil
}

// LastErrorSince returns LastError and since when the list/watch errors have
// had its Reason with no success between them: the informer's data has not
// changed since then at the latest. nil and the zero time when healthy.
func (s *SharedIndexInformer) LastErrorSince() (error, time.Time) {
	if r := s.getReflector(); r != nil {
		return r.LastErrorSince()
	}
	return nil, time.Time{}
}

// LastListSummary describes the last successful list; ok is false before one.
func (s *SharedIndexInformer) LastListSummary() (stats ListSummary, ok bool) {
	if r := s.getReflector(); r != nil {
		return r.LastListSummary()
	}
	return ListSummary{}, false
}

func (s *SharedIndexInformer) getReflector() *reflector {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reflector
}

// IsStopped reports whether Run has returned. A stopped informer never runs
// again and accepts no handlers.
func (s *SharedIndexInformer) IsStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// SetTransform sets the transform; an error after start.
func (s *SharedIndexInformer) SetTransform(handler toolscache.TransformFunc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("informer %s has already started", s.name)
	}
	s.transform = handler
	return nil
}

// SetWatchErrorHandler sets the list/watch error handler (its Reflector is a
// stand-in named after the informer); an error after start.
func (s *SharedIndexInformer) SetWatchErrorHandler(handler toolscache.WatchErrorHandler) error {
	return s.SetWatchErrorHandlerWithContext(func(_ context.Context, r *toolscache.Reflector, err error) {
		handler(r, err)
	})
}

// SetWatchErrorHandlerWithContext sets the handler for list/watch errors; an
// error after start.
func (s *SharedIndexInformer) SetWatchErrorHandlerWithContext(handler toolscache.WatchErrorHandlerWithContext) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("informer %s has already started", s.name)
	}
	s.watchErrorHandler = handler
	return nil
}

// GetController returns a toolscache.Controller view of the informer.
func (s *SharedIndexInformer) GetController() toolscache.Controller {
	return informerController{s: s}
}

// Run is RunWithContext with a context that ends when stopCh closes.
func (s *SharedIndexInformer) Run(stopCh <-chan struct{}) {
	s.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext lists, watches and delivers until ctx ends, then stops the
// handlers (dropping what is pending) and, as client-go's, returns once no
// handler call runs. It runs once; later calls return at once.
func (s *SharedIndexInformer) RunWithContext(ctx context.Context) {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		s.log.Info("informer already started; ignoring Run", "name", s.name)
		return
	}
	s.started = true
	s.startTime = s.clock.Now()
	if s.log.GetSink() == nil {
		s.log = logr.FromContextOrDiscard(ctx)
	}
	s.log = s.log.WithValues("informer", s.name)
	log := s.log
	// client-go's contextual logging (REST client, watch decoder) uses it
	// too, instead of klog's global logger.
	ctx = logr.NewContext(ctx, log)
	im := s.startMetrics()
	snapWriter, snapSource := s.snapshotSetup()
	s.reflector = newReflector(s.lw, s.example, s.fifo, reflectorOptions{
		Name:                 s.name,
		Transform:            s.transform,
		DisableWatchList:     s.opts.DisableWatchList || s.watchListUnsupported,
		WatchListTimeout:     s.opts.WatchListTimeout,
		PageSize:             s.opts.PageSize,
		Backoff:              s.opts.Backoff,
		MinWatchTimeout:      s.opts.MinWatchTimeout,
		WatchStallTimeout:    s.opts.WatchStallTimeout,
		WatchErrorHandler:    s.watchErrorHandler,
		Logger:               &log,
		Clock:                s.clock,
		ListProgressInterval: s.opts.ListProgressInterval,
		ShardSelector:        s.shard.Load(),
		metrics:              im,
		item:                 s.itemStage(),
		snapshot:             snapSource,
	})
	for _, h := range s.handlers {
		h.start()
	}
	s.mu.Unlock()

	defer s.stopMetrics()
	var wg sync.WaitGroup
	wg.Go(func() { s.reflector.Run(ctx) })
	wg.Go(func() { s.resyncLoop(ctx) })
	wg.Go(func() { s.syncProgressLoop(ctx) })
	if s.opts.ConsistencyCheck.enabled() {
		wg.Go(func() { s.consistencyLoop(ctx) })
	}
	if snapWriter != nil {
		wg.Go(func() { s.snapshotLoop(ctx, snapWriter) })
	}
	wg.Go(func() {
		select {
		case <-s.fifo.Synced():
			s.markSynced()
		case <-ctx.Done():
		}
	})
	wg.Go(func() {
		<-ctx.Done()
		s.fifo.Close()
	})
	for {
		err := s.fifo.popBatch(maxPopBatch, s.handleBatch)
		if errors.Is(err, errFIFOClosed) {
			break
		}
		if err != nil {
			log.Error(err, "unable to apply deltas")
		}
	}
	wg.Wait()

	s.deliverMu.Lock()
	s.mu.Lock()
	s.stopped = true
	handlers := s.handlers
	s.handlers = nil
	s.mu.Unlock()
	s.deliverMu.Unlock()
	for _, h := range handlers {
		h.stop()
	}
	// As client-go's, Run returns once no handler call is running (a handler
	// that never returns keeps it from returning).
	for _, h := range handlers {
		<-h.Stopped()
	}
}

// itemStage returns the Reflector's item option: the Indexer's encoding stage
// with compact storage on, nil without (the Reflector then hands on each
// object as it is, with no call per object).
func (s *SharedIndexInformer) itemStage() func(runtime.Object, admitHow) any {
	if !s.indexer.readsCopy() {
		return nil
	}
	return s.indexer.itemOf
}

// AddEventHandler adds a handler with the informer's default resync period.
// See AddEventHandlerWithOptions.
func (s *SharedIndexInformer) AddEventHandler(
	handler toolscache.ResourceEventHandler,
) (toolscache.ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(handler, toolscache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod adds a handler that receives a resync
// OnUpdate(obj, obj) for every stored object every resyncPeriod (0 = never;
// non-zero periods below 1 s are raised to it).
func (s *SharedIndexInformer) AddEventHandlerWithResyncPeriod(
	handler toolscache.ResourceEventHandler, resyncPeriod time.Duration,
) (toolscache.ResourceEventHandlerRegistration, error) {
	return s.AddEventHandlerWithOptions(handler, toolscache.HandlerOptions{ResyncPeriod: &resyncPeriod})
}

// AddEventHandlerWithOptions adds a handler (nil options.ResyncPeriod:
// Options.ResyncPeriod) and returns its *HandlerRegistration; added after
// start, it first gets the store as OnAdd(obj, true). An error once stopped.
func (s *SharedIndexInformer) AddEventHandlerWithOptions(
	handler toolscache.ResourceEventHandler, options toolscache.HandlerOptions,
) (toolscache.ResourceEventHandlerRegistration, error) {
	if handler == nil {
		return nil, errors.New("nil event handler")
	}
	s.deliverMu.Lock()
	defer s.deliverMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, fmt.Errorf("handler %T was not added to informer %s because it has stopped already", handler, s.name)
	}
	period := s.opts.ResyncPeriod
	if options.ResyncPeriod != nil {
		period = *options.ResyncPeriod
	}
	if period > 0 && period < minimumResyncPeriod {
		period = minimumResyncPeriod
	}
	log := s.log
	if options.Logger != nil {
		log = *options.Logger
	}
	reg := newRegistration(s, handler, max(period, 0), log)
	reg.label = s.uniqueHandlerLabelLocked(handler)
	if period > 0 {
		reg.nextResync = s.clock.Now().Add(period)
	}
	if s.started {
		s.indexer.table.Load().each(func(key string, r *record) bool {
			reg.enqueue(key, notification{kind: noteAdd, newObj: s.indexer.handlerObject(key, r), initial: true})
			return true
		})
		reg.start()
	}
	if s.syncMarked {
		reg.markInformerSynced()
		s.wakeSyncProgress()
	}
	s.handlers = append(s.handlers, reg)
	s.wakeResync()
	return reg, nil
}

// RemoveEventHandler stops delivery to the registration's handler (a call in
// progress finishes; its Stopped channel tells when). Idempotent; an error if
// handle is not this informer's.
func (s *SharedIndexInformer) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	reg, ok := handle.(*HandlerRegistration)
	if !ok || reg == nil || reg.informer != s {
		return fmt.Errorf("registration %T does not belong to informer %s", handle, s.name)
	}
	s.deliverMu.Lock()
	s.mu.Lock()
	for i, h := range s.handlers {
		if h == reg {
			s.handlers = append(s.handlers[:i:i], s.handlers[i+1:]...)
			break
		}
	}
	delete(s.syncing, reg)
	s.mu.Unlock()
	s.deliverMu.Unlock()
	reg.stop()
	s.wakeResync()
	return nil
}

func (s *SharedIndexInformer) wakeResync() {
	select {
	case s.resyncWake <- struct{}{}:
	default:
	}
}

// resyncLoop sleeps until the earliest handler is due for resync, marks the
// due handlers as syncing and queues a Resync: the Sync deltas reach only
// those handlers, as OnUpdate(obj, obj).
func (s *SharedIndexInformer) resyncLoop(ctx context.Context) {
	for {
		s.deliverMu.Lock()
		now := s.clock.Now()
		var next time.Time
		var due map[*HandlerRegistration]bool
		for _, h := range s.handlers {
			if h.resyncPeriod <= 0 {
				continue
			}
			if !now.Before(h.nextResync) {
				if due == nil {
					due = map[*HandlerRegistration]bool{}
				}
				due[h] = true
				h.nextResync = now.Add(h.resyncPeriod)
			}
			if next.IsZero() || h.nextResync.Before(next) {
				next = h.nextResync
			}
		}
		if len(due) > 0 {
			s.syncing = due
		}
		s.deliverMu.Unlock()
		if len(due) > 0 {
			if err := s.fifo.Resync(); err != nil {
				s.log.Error(err, "resync failed")
			}
		}

		var timer clock.Timer
		var timerC <-chan time.Time
		if !next.IsZero() {
			timer = s.clock.NewTimer(next.Sub(now))
			timerC = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-s.resyncWake:
		case <-timerC:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// markSynced tells every registration that the informer synced, and logs it.
func (s *SharedIndexInformer) markSynced() {
	s.mu.Lock()
	s.syncMarked = true
	for _, h := range s.handlers {
		h.markInformerSynced()
	}
	log, start, r := s.log, s.startTime, s.reflector
	s.mu.Unlock()
	s.wakeSyncProgress()
	s.obs.Load().markSynced()
	stats, _ := r.LastListSummary()
	stored := s.indexer.StoredStats()
	kv := []any{"objects", stored.Objects,
		"seconds", s.clock.Since(start).Seconds(), "pages", stats.Pages, "streamed", stats.WatchList}
	if s.opts.StorageCodec != nil {
		// Compact storage: what the objects' encodings weigh, to size memory from.
		kv = append(kv, "encoded", stored.Encoded, "storedBytes", stored.EncodedBytes)
	}
	if rep := r.start.Load(); rep != nil {
		kv = append(kv, "start", rep.Start)
		if rep.Reason != "" {
			kv = append(kv, "reason", rep.Reason)
		}
		if rep.Loaded > 0 || rep.Start != startCold {
			kv = append(kv, "loaded", rep.Loaded, "fetched", rep.Fetched)
		}
	}
	log.Info("informer synced", kv...)
}

// maxPopBatch is the most keys the pop loop takes from the DeltaFIFO at
// once and applies to the Indexer as one batch (see writeBatch): enough to
// amortise the store's copy-on-write over the initial list, small enough
// that handlers hear of the first keys of a large list early. A relist is
// taken whole whatever its size (see handleBatch).
const maxPopBatch = 4096

// batchNote is a notification decided while a batch is applied, handed to
// the handlers once the batch is published.
type batchNote struct {
	key    string
	n      notification
	isSync bool
}

// handleBatch is the pop loop's process function: it applies the Deltas of
// the popped keys to the Indexer as one batch, then notifies the handlers
// in order (store first, then handlers, as for a single key). queued is the
// number of keys left in the DeltaFIFO.
//
// A relist comes as one batch (deltaFIFO.Replace) and is applied whole
// (Indexer.beginWholeBatch): readers see the store as it was until the
// whole relist is in, then as relisted, and handlers hear of it only then,
// as with client-go's atomic Replace (one store.Replace, then the
// notifications). Its notifications are delivered in queue order, not
// client-go's deletes first.
func (s *SharedIndexInformer) handleBatch(batch []poppedKey, queued int) error {
	s.deliverMu.Lock()
	defer s.deliverMu.Unlock()
	notes := s.notes[:0]
	if cap(notes) < len(batch) {
		notes = make([]batchNote, 0, len(batch))
	}
	var errs []error
	adds := len(batch)
	if batch[len(batch)-1].initial {
		// The rest of the initial list follows: size the store for it at
		// once rather than doubling it batch after batch.
		adds += queued
	}
	var w *writeBatch
	if batch[0].relist {
		// Most keys of a relist are stored already: no growth up front
		// (commit grows the table if the relist needs it).
		w = s.indexer.beginWholeBatch(0)
	} else {
		w = s.indexer.beginBatch(adds)
	}
	// With no handler registered, nothing is notified: no handler view is
	// made (nor a lazy old object).
	listening := len(s.handlers) > 0
	evicted := 0
	for _, p := range batch {
		// The FIFO queued every delta of p under p.key, computed by the same
		// key function.
		key := p.key
		for _, d := range p.deltas {
			if d.Type == deltaEvicted {
				if w.take(key) != nil {
					evicted++
				}
				continue
			}
			if d.Type == deltaDeleted {
				if w.take(key) == nil {
					continue
				}
				s.removals.note(key)
				if listening {
					notes = append(notes, batchNote{key: key, n: notification{kind: noteDelete, newObj: s.indexer.handlerView(d.Object)}})
				}
				continue
			}
			old, rec, err := w.swap(key, d.Object)
			if err != nil {
				errs = append(errs, err)
			}
			switch {
			case !listening:
			case old == nil:
				notes = append(notes, batchNote{key: key, n: notification{kind: noteAdd, newObj: s.indexer.handlerView(d.Object), initial: p.initial}})
			default:
				isSync := d.Type == deltaSync || (d.Type == deltaReplaced && s.indexer.sameStored(old, rec, d.Object))
				n := notification{kind: noteUpdate, oldObj: s.indexer.handlerObject(key, old), newObj: s.indexer.handlerView(d.Object)}
				notes = append(notes, batchNote{key: key, n: n, isSync: isSync})
			}
		}
	}
	w.commit()
	if evicted > 0 {
		s.obs.Load().shardEvictedObjects(evicted)
	}
	for _, bn := range notes {
		s.distribute(bn.key, bn.n, bn.isSync)
	}
	// Keep the array for the next batch, without the objects; an array sized
	// for a large list is let go.
	clear(notes)
	if cap(notes) <= drainedRelease {
		s.notes = notes[:0]
	} else {
		s.notes = nil
	}
	return errors.Join(errs...)
}

// distribute hands n to every handler (only to those due for resync when
// isSync). Caller holds deliverMu.
func (s *SharedIndexInformer) distribute(key string, n notification, isSync bool) {
	for _, h := range s.handlers {
		if isSync && !s.syncing[h] {
			continue
		}
		h.enqueue(key, n)
	}
}

// sameStored reports whether the record old, replaced by rec (of obj),
// held the same resourceVersion: for two encodings, whether they encode the
// same bytes (an object's resourceVersion is part of its encoding, and the
// same resourceVersion is the same object; a codec whose encodings of one
// object may differ says so, see EncodingComparer); else by comparing
// resourceVersions.
func (ix *Indexer) sameStored(old, rec *record, obj any) bool {
	if old.data != nil && rec.data != nil {
		if bytes.Equal(old.data, rec.data) {
			return true
		}
		ec, ok := ix.codec.(EncodingComparer)
		return ok && ec.SameEncoded(old.data, rec.data)
	}
	if old.data != nil {
		return false
	}
	return sameResourceVersion(old.obj, obj)
}

func sameResourceVersion(a, b any) bool {
	rv := objectRV(a)
	return rv != "" && rv == objectRV(b)
}

// informerController is the toolscache.Controller view of an informer.
type informerController struct{ s *SharedIndexInformer }

func (c informerController) RunWithContext(ctx context.Context)       { c.s.RunWithContext(ctx) }
func (c informerController) Run(stopCh <-chan struct{})               { c.s.Run(stopCh) }
func (c informerController) HasSynced() bool                          { return c.s.HasSynced() }
func (c informerController) HasSyncedChecker() toolscache.DoneChecker { return c.s.HasSyncedChecker() }
func (c informerController) LastSyncResourceVersion() string          { return c.s.LastSyncResourceVersion() }
