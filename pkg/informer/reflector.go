package informer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// reflectorStore receives what the Reflector lists and watches (the
// DeltaFIFO). If it also has Bookmark(rv string), watch bookmarks are passed
// on.
type reflectorStore interface {
	Add(obj any) error
	Update(obj any) error
	Delete(obj any) error
	Replace(list []any, resourceVersion string) error
}

// defaultPageSize is the LIST page size when none is configured.
const defaultPageSize = 500

// defaultMinWatchTimeout is the lower bound of the randomised watch timeout;
// each watch asks the server to end it after [min, 2×min].
const defaultMinWatchTimeout = 5 * time.Minute

// defaultWatchListTimeout bounds the silence between the events of a
// WatchList stream before its initial-events-end bookmark (and, times three,
// the whole stream) before falling back to LIST (client-go waits without
// bound and only warns every 10 seconds). With it, a stream whose end
// bookmark never comes falls back within 30 seconds, well inside
// controller-runtime's two-minute CacheSyncTimeout.
const defaultWatchListTimeout = 10 * time.Second

// defaultWatchStallTimeout is how long an open watch may deliver nothing (no
// event, no bookmark) before it is abandoned and re-opened from the last RV,
// when WatchStallTimeout is 0. The Reflector always asks for bookmarks, and
// kube-apiserver's watch cache sends a watcher one about every minute
// (k8s.io/apiserver pkg/storage/cacher, defaultBookmarkFrequency), plus one
// 2 s before the watch's deadline. Two intervals tolerate one lost or late
// bookmark (they are best effort) and bound a silent watch's stale data to
// two minutes instead of its timeoutSeconds plus a minute (up to 11). A
// server that sends no bookmarks (an aggregated API without a watch cache)
// costs a re-watch from the same RV every two minutes on a quiet kind, never
// a relist.
const defaultWatchStallTimeout = 2 * time.Minute

// shortWatch: a watch that ends without events sooner than this is retried
// after a backoff delay instead of at once.
const shortWatch = time.Second

// reflectorOptions configure a Reflector. All fields are optional.
type reflectorOptions struct {
	// Name for logs and errors; default: the example object's Go type.
	Name string
	// PageSize of LIST requests; 0 = defaultPageSize.
	PageSize int64
	// Backoff between failed attempts; zero value = DefaultBackoff.
	Backoff Backoff
	// MinWatchTimeout: each watch gets TimeoutSeconds in [min, 2×min];
	// 0 = defaultMinWatchTimeout.
	MinWatchTimeout time.Duration
	// WatchStallTimeout: an open watch that delivers nothing (no event, no
	// bookmark, no close) for this long is abandoned and re-opened from the
	// last RV. 0 = defaultWatchStallTimeout; negative = only abandon a watch
	// that outlives its own server-side timeout by a minute.
	WatchStallTimeout time.Duration
	// WatchErrorHandler is called for every list/watch error. Its
	// *toolscache.Reflector is a stand-in that is never run: its Name and
	// TypeDescription are this Reflector's, so handlers written for client-go
	// (toolscache.DefaultWatchErrorHandler, or one that wraps it) log them as
	// usual. The error is a *ListWatchError wrapping the original.
	WatchErrorHandler toolscache.WatchErrorHandlerWithContext
	// Logger; zero value = logr.FromContextOrDiscard of Run's context.
	Logger *logr.Logger
	// Clock for timers; default the real clock.
	Clock clock.WithTicker
	// Transform is applied exactly once to every received object (listed,
	// streamed or watched) before it is handed to the store; never to
	// bookmarks. An object whose transform fails is dropped and logged.
	Transform toolscache.TransformFunc
	// DisableWatchList: always list with a paginated LIST (see
	// Options.DisableWatchList). Default false: stream the initial list
	// when the ListerWatcher supports it.
	DisableWatchList bool
	// WatchListTimeout: see Options.WatchListTimeout.
	WatchListTimeout time.Duration
	// ListProgressInterval: see Options.ListProgressInterval.
	ListProgressInterval time.Duration
	// ShardSelector: see Options.ShardSelector; nil = every object.
	ShardSelector *ShardSelector

	// metrics are the informer's series; nil outside an informer.
	metrics *informerMetrics
	// item, set by an informer with compact storage, turns each transformed
	// object into what the store is given in its place (see Indexer.itemOf:
	// an item with the key, resourceVersion, index values and encoding).
	// nil: the store is given the object.
	item func(obj runtime.Object, how admitHow) any
	// snapshot, set by an informer with snapshots on, is the snapshot the
	// first list may be made from (see reflector.warmStart).
	snapshot *snapshotSource
}

// ListSummary describes the Reflector's last successful list.
type ListSummary struct {
	Pages           int           // LIST requests made (0 if streamed)
	Objects         int           // objects listed
	ResourceVersion string        // of the list
	Duration        time.Duration // from the first request to the Replace
	WatchList       bool          // the list was streamed (WatchList)
}

// reflector keeps a ReflectorStore in step with the server: ListAndWatch
// gets the complete state at resourceVersion "" (a consistent read) —
// streamed (WatchList, see watchList) when the ListerWatcher supports it,
// else by a paginated LIST — Replaces the store with it, then watches from
// its RV with bookmarks requested, re-watching from the last RV whenever a
// watch ends normally. Run repeats ListAndWatch with backoff until its
// context ends.
//
// Error handling (client-go's classes, with these choices):
//   - 410 Expired/Gone or "too large resource version", on list or watch:
//     relist at RV "" without delay, at most once a minute: a repeat within
//     the minute waits for the backoff (no tight relist loop).
//   - a continue token expiring mid-list: the partial list is discarded and
//     one unpaginated consistent LIST is made; the store never sees a
//     partial list.
//   - connection refused or 429 when opening a watch: backoff, then re-watch
//     from the same RV.
//   - anything else: backoff, then relist.
//
// Every error is reported to the WatchErrorHandler and kept as LastError
// (cleared by the next successful list or watch) as a *ListWatchError that
// wraps the original. A relist whose RV is older than the RV already applied
// is not installed (ReasonStaleList). Watch events of another Go type (or,
// for unstructured, another GroupVersionKind) than the example object are
// dropped; watch.Error events become errors via apierrors.FromObject.
type reflector struct {
	name         string
	lw           toolscache.ListerWatcherWithContext
	store        reflectorStore
	expectedType reflect.Type
	expectedGVK  schema.GroupVersionKind
	opts         reflectorOptions
	clock        clock.WithTicker
	backoff      *backoffState

	// watchListOff, once set, is why WatchList is no longer tried (the
	// server refused it, or never ended its initial events). Only the Run
	// goroutine uses it.
	watchListOff string

	mu      sync.Mutex
	lastRV  string
	lastErr error
	// errSince is when lastErr's reason began to repeat: the time of the
	// first error of the current run of errors with that reason.
	errSince  time.Time
	lastList  ListSummary
	listCount int

	// handlerView is what the WatchErrorHandler receives as its *toolscache.Reflector.
	handlerView func() *toolscache.Reflector

	// relistRequests holds a pending relist request (buffer of one).
	relistRequests chan errRelistRequested

	// shard is the shard selector of the next requests (nil: everything);
	// serverSharding a ServerSharding, learnt from the first sharded list.
	shard          atomic.Pointer[ShardSelector]
	serverSharding atomic.Int32
	// coarsened is set once the Reflector logged that it sends a coarser
	// selector than its own (see ShardSelector.forServer).
	coarsened atomic.Bool
	// listedShard is what ListedShard returns.
	listedShard atomic.Pointer[shardList]
	// warmTried is set once the first list tried the snapshot (Run
	// goroutine only); start is how the first list was had.
	warmTried bool
	start     atomic.Pointer[startReport]
}

// RequestRelist makes the Reflector end its watch and relist with a
// consistent read (RV ""), at once and without backoff; reason is logged.
// Requests made while a list is under way, or while one is pending, are one.
// The consistency check uses it to heal drift.
func (r *reflector) RequestRelist(reason string) {
	r.requestRelist(relistCauseDrift, reason)
}

// requestRelist is RequestRelist with the relist's cause, one of the
// RelistCause* values (counted in deltacache_informer_relists_total).
func (r *reflector) requestRelist(cause, reason string) {
	select {
	case r.relistRequests <- errRelistRequested{cause: cause, reason: reason}:
	default:
	}
}

// errRelistRequested ends a watch for a relist request: its cause (a
// RelistCause* value) and the reason logged.
type errRelistRequested struct{ cause, reason string }

func (e errRelistRequested) Error() string { return "relist requested: " + e.reason }

// newReflector returns a Reflector that feeds store from lw. expectedType is
// an example of the objects (e.g. &corev1.Pod{}); nil disables type checks.
func newReflector(
	lw toolscache.ListerWatcherWithContext, expectedType runtime.Object, store reflectorStore, opts reflectorOptions,
) *reflector {
	r := &reflector{lw: lw, store: store, opts: opts, clock: opts.Clock, relistRequests: make(chan errRelistRequested, 1)}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	if r.opts.PageSize <= 0 {
		r.opts.PageSize = defaultPageSize
	}
	if r.opts.MinWatchTimeout <= 0 {
		r.opts.MinWatchTimeout = defaultMinWatchTimeout
	}
	if r.opts.WatchStallTimeout == 0 {
		r.opts.WatchStallTimeout = defaultWatchStallTimeout
	}
	if expectedType != nil {
		r.expectedType = reflect.TypeOf(expectedType)
		if u, ok := expectedType.(*unstructured.Unstructured); ok {
			r.expectedGVK = u.GroupVersionKind()
		}
	}
	r.name = opts.Name
	if r.name == "" {
		r.name = objectTypeName(expectedType)
	}
	r.backoff = newBackoffState(opts.Backoff, r.clock, nil)
	r.shard.Store(opts.ShardSelector)
	r.handlerView = sync.OnceValue(func() *toolscache.Reflector {
		return toolscache.NewReflectorWithOptions(nil, expectedType, nil, toolscache.ReflectorOptions{
			Name: r.name, TypeDescription: objectTypeName(expectedType), Clock: r.clock,
		})
	})
	return r
}

// Name returns the Reflector's name.
func (r *reflector) Name() string { return r.name }

// LastSyncResourceVersion returns the RV of the last list, event or bookmark
// applied to the store ("" before the first list).
func (r *reflector) LastSyncResourceVersion() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastRV
}

// LastError returns the last list/watch error (a *ListWatchError) if no list
// or watch has succeeded since, else nil.
func (r *reflector) LastError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

// LastErrorSince returns LastError and since when the errors have had its
// reason without a successful list or watch between them (the zero time with
// a nil error).
func (r *reflector) LastErrorSince() (error, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr, r.errSince
}

// LastListSummary describes the last successful list; ok is false before one.
func (r *reflector) LastListSummary() (stats ListSummary, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastList, r.listCount > 0
}

func (r *reflector) logger(ctx context.Context) logr.Logger {
	if r.opts.Logger != nil {
		return *r.opts.Logger
	}
	return logr.FromContextOrDiscard(ctx)
}

// Run lists and watches until ctx ends, backing off after failures.
func (r *reflector) Run(ctx context.Context) {
	log := r.logger(ctx).WithValues("reflector", r.name)
	// An unusable RV is answered by an immediate relist, at most once a
	// minute: a server that keeps answering 410 gets the backoff.
	var lastImmediate time.Time
	for ctx.Err() == nil {
		err := r.ListAndWatch(ctx)
		if ctx.Err() != nil {
			return
		}
		var delay time.Duration
		var requested errRelistRequested
		switch {
		case err == nil:
		case errors.As(err, &requested):
			log.Info("Relisting with a consistent read", "reason", requested.reason)
		case needsConsistentRelist(err) && (lastImmediate.IsZero() || r.clock.Since(lastImmediate) >= time.Minute):
			lastImmediate = r.clock.Now()
			log.V(1).Info("resourceVersion unusable; relisting with a consistent read",
				"reason", lwReason(err), "error", err.Error())
		default:
			delay = r.backoff.next()
			log.Error(err, "list/watch failed; retrying",
				"reason", lwReason(err), "retryIn", delay.Round(time.Millisecond).String())
		}
		if !r.sleep(ctx, delay) {
			return
		}
		r.opts.metrics.relist(err)
	}
}

// ListAndWatch lists once (streamed, if WatchList is on and allowed, else
// paginated), then watches until the context ends or a relist is needed. It
// returns the error that ended it (nil when the context ended).
func (r *reflector) ListAndWatch(ctx context.Context) error {
	select { // the list below is the relist any pending request asked for
	case <-r.relistRequests:
	default:
	}
	if r.opts.snapshot != nil && !r.warmTried {
		r.warmTried = true
		if r.warmStart(ctx) {
			return r.watchLoop(ctx, nil)
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	if r.opts.snapshot != nil && r.start.Load() == nil {
		r.reportStart(startReport{Start: startCold})
	}
	if r.useWatchList() {
		w, timeoutSeconds, err := r.watchList(ctx)
		if err == nil {
			return r.watchLoop(ctx, &openWatch{w: w, timeoutSeconds: timeoutSeconds})
		}
		if isContextError(ctx, err) {
			return nil
		}
		lwe := classify(r.name, "watchlist", err)
		switch {
		case watchListRefused(lwe):
			// The server does not stream lists: that is no failure of this informer,
			// so it is counted and passed to the WatchErrorHandler but never kept as
			// LastError, which would read as a permanent error (400/422) while the
			// LIST that replaces the stream is under way.
			_ = r.notify(ctx, lwe)
			r.watchListOff = lwe.Reason
			r.logger(ctx).Info("streaming list unavailable; using LIST from now on",
				"reflector", r.name, "reason", lwe.Reason, "error", lwe.Err.Error())
		default:
			_ = r.report(ctx, lwe) // kept as LastError; the LIST below is the fallback
			r.logger(ctx).Info("streaming list failed; falling back to LIST",
				"reflector", r.name, "reason", lwe.Reason, "error", lwe.Err.Error())
		}
	}
	if err := r.list(ctx); err != nil {
		if isContextError(ctx, err) {
			return nil
		}
		return r.report(ctx, classify(r.name, "list", err))
	}
	return r.watchLoop(ctx, nil)
}

// admitHow says what an admitted object becomes (see reflector.admit).
type admitHow int

const (
	// admitListed: a listed or streamed object, encoded early without its
	// decoded object with compact storage on (a list never holds N decoded
	// objects).
	admitListed admitHow = iota
	// admitWatched: an added or modified object, encoded early and kept
	// decoded for the handlers.
	admitWatched
	// admitDeleted: a deleted object, handed on as transformed (the store
	// only removes its key).
	admitDeleted
)

// admitVerdict is what admit did with an object.
type admitVerdict int

const (
	admitted     admitVerdict = iota
	outsideShard              // the shard filter dropped it (counted)
	dropped                   // its transform failed or returned no object (logged)
)

// admit is the one path by which a received object (listed, streamed or
// watched) enters the store: the shard filter sel (ShardSelector.admits),
// then the transform, then the encoding stage (reflectorOptions.item). It
// returns what the store is given, or the reason the object was dropped.
func (r *reflector) admit(ctx context.Context, sel *ShardSelector, obj runtime.Object, how admitHow) (any, admitVerdict) {
	if sel != nil && !r.keep(sel, obj) { // unsharded: no call
		return nil, outsideShard
	}
	obj, ok := r.transformed(ctx, obj)
	if !ok {
		return nil, dropped
	}
	if r.opts.item == nil {
		return obj, admitted
	}
	return r.opts.item(obj, how), admitted
}

// transformed applies the transform; ok is false if the object must be dropped.
func (r *reflector) transformed(ctx context.Context, obj runtime.Object) (runtime.Object, bool) {
	if r.opts.Transform == nil {
		return obj, true
	}
	out, err := r.opts.Transform(obj)
	if err != nil {
		r.logger(ctx).Error(err, "transform failed; dropping object", "reflector", r.name)
		return nil, false
	}
	o, ok := out.(runtime.Object)
	if !ok {
		r.logger(ctx).Error(fmt.Errorf("transform returned %T", out),
			"transform result is not a runtime.Object; dropping it", "reflector", r.name)
		return nil, false
	}
	return o, true
}

// list runs one consistent, paginated LIST and replaces the store with it.
// The first list into an empty store is streamed to it page by page (see
// initialStreamer); any other is collected and Replaced at once.
func (r *reflector) list(ctx context.Context) error {
	start := r.clock.Now()
	sel := r.shard.Load()
	opts := metav1.ListOptions{ResourceVersion: "", Limit: r.opts.PageSize}
	stream := r.initialStream()
	var items []any
	var rv string
	pages, streamed := 0, 0
	restarted := false
	progress := r.newListProgress(ctx, false)
	for {
		r.opts.metrics.listRequest()
		r.shardOptions(ctx, &opts, sel)
		obj, err := r.lw.ListWithContext(ctx, opts)
		if err != nil {
			if opts.Continue != "" && !restarted && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)) {
				// The continue token expired: start over with one unpaginated
				// consistent list rather than stitching two snapshots. What was
				// streamed stays queued; the Replace of the new list deletes what
				// that list no longer has.
				r.logger(ctx).V(1).Info("continue token expired mid-list; relisting in one request",
					"reflector", r.name, "pages", pages)
				restarted = true
				items, pages, stream, streamed = nil, 0, nil, 0
				opts = metav1.ListOptions{ResourceVersion: ""}
				continue
			}
			return err
		}
		pages++
		r.opts.metrics.listPage()
		lm, err := meta.ListAccessor(obj)
		if err != nil {
			return fmt.Errorf("unable to understand list result %T: %w", obj, err)
		}
		part, err := meta.ExtractListWithAlloc(obj)
		if err != nil {
			return fmt.Errorf("unable to extract items of %T: %w", obj, err)
		}
		if pages == 1 {
			r.learnServerSharding(ctx, sel, obj)
		}
		page := items
		if stream != nil {
			page = make([]any, 0, len(part))
		}
		for _, o := range part {
			if obj, verdict := r.admit(ctx, sel, o, admitListed); verdict == admitted {
				page = append(page, obj)
			}
		}
		if stream != nil {
			r.appendStreamed(ctx, stream, page)
			streamed += len(page)
		} else {
			items = page
		}
		rv = lm.GetResourceVersion()
		if lm.GetContinue() == "" {
			break
		}
		progress.report(streamed+len(items), pages)
		opts.Continue = lm.GetContinue()
		opts.ResourceVersion = ""
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}

	stats := ListSummary{Pages: pages, Objects: streamed + len(items), ResourceVersion: rv, Duration: r.clock.Since(start)}
	if stream != nil {
		r.installStreamed(stream, sel, rv, stats)
		return nil
	}
	return r.install(ctx, "list", sel, items, rv, stats)
}

// initialStream returns the store as an initialStreamer when the list about
// to be made may be streamed to it; nil otherwise.
func (r *reflector) initialStream() initialStreamer {
	if s, ok := r.store.(initialStreamer); ok && s.beginInitialStream() {
		return s
	}
	return nil
}

// installStreamed ends a streamed list at rv, made with the shard selector
// sel, as install does for a collected one (a first list cannot be older than
// what the store holds).
//
// The shard list is recorded before the store gets the list's end, as
// recordList is: every part is queued already (ShardSettled's condition),
// and once the store has the end the informer syncs at any moment; a caller
// that saw it synced must find the shard settled (a snapshot written at that
// moment was skipped as "shard moving", and a read of a sharded informer
// could not trust a missing key yet).
func (r *reflector) installStreamed(s initialStreamer, sel *ShardSelector, rv string, stats ListSummary) {
	r.recordList(rv, stats)
	r.recordShardList(sel, rv)
	s.endInitialStream(rv)
	r.opts.metrics.listInstalled(stats)
}

// install replaces the store with a complete list at rv, made with the shard
// selector sel, unless rv is older than what the store already reflects.
func (r *reflector) install(ctx context.Context, op string, sel *ShardSelector, items []any, rv string, stats ListSummary) error {
	if applied := r.LastSyncResourceVersion(); rvOlder(rv, applied) {
		return &ListWatchError{Name: r.name, Op: op, Reason: ReasonStaleList,
			Err: fmt.Errorf("list at resourceVersion %s is older than the applied resourceVersion %s", rv, applied)}
	}
	r.recordList(rv, stats)
	if err := r.store.Replace(items, rv); err != nil {
		r.logger(ctx).Error(err, "some listed objects were not stored", "reflector", r.name)
	}
	r.recordShardList(sel, rv)
	r.opts.metrics.listInstalled(stats)
	return nil
}

// recordList records a successful list at rv. It is called before the store
// gets the list's end: once it has, the informer can sync at any moment, and
// whoever looks then must find these stats.
func (r *reflector) recordList(rv string, stats ListSummary) {
	r.mu.Lock()
	r.lastRV = rv
	r.lastErr, r.errSince = nil, time.Time{}
	r.lastList = stats
	r.listCount++
	r.mu.Unlock()
}

// watchTimeout returns a random server-side watch timeout in [min, 2×min],
// in whole seconds.
func (r *reflector) watchTimeout() int64 {
	minT := r.opts.MinWatchTimeout
	return int64((minT + time.Duration(rand.Float64()*float64(minT))).Seconds())
}

// openWatch is a watch already streaming from the last RV (the stream of a
// WatchList) and the server-side timeout it was opened with.
type openWatch struct {
	w              watch.Interface
	timeoutSeconds int64
}

// watchLoop watches from the last RV until a relist is needed. open, if not
// nil, is the first watch to use.
func (r *reflector) watchLoop(ctx context.Context, open *openWatch) error {
	for ctx.Err() == nil {
		timeoutSeconds := r.watchTimeout()
		var w watch.Interface
		var err error
		if open != nil {
			w, timeoutSeconds = open.w, open.timeoutSeconds
			open = nil
		} else {
			opts := metav1.ListOptions{
				ResourceVersion:     r.LastSyncResourceVersion(),
				AllowWatchBookmarks: true,
				TimeoutSeconds:      &timeoutSeconds,
			}
			r.shardOptions(ctx, &opts, r.shard.Load())
			w, err = r.lw.WatchWithContext(ctx, opts)
		}
		if err != nil {
			if isContextError(ctx, err) {
				return nil
			}
			lwe := r.report(ctx, classify(r.name, "watch", err))
			if rewatchable(err) {
				delay := r.backoff.next()
				r.logger(ctx).Error(lwe, "watch failed; re-watching", "reflector", r.name,
					"reason", lwe.Reason, "retryIn", delay.Round(time.Millisecond).String())
				if !r.sleep(ctx, delay) {
					return nil
				}
				continue
			}
			return lwe
		}
		r.clearError()
		r.opts.metrics.watchStarted()
		start := r.clock.Now()
		events, err := r.handleWatch(ctx, w, time.Duration(timeoutSeconds)*time.Second+time.Minute)
		w.Stop()
		r.opts.metrics.watchEnded(r.clock.Since(start))
		if ctx.Err() != nil {
			return nil
		}
		if _, ok := err.(errRelistRequested); ok {
			return err
		}
		if err != nil {
			lwe := r.report(ctx, classify(r.name, "watch", err))
			if lwe.Reason == ReasonWatchStalled {
				// Once per abandoned watch; counted in
				// deltacache_informer_errors_total{op="watch",reason="WatchStalled"}.
				r.logger(ctx).Info("watch stalled: no event or bookmark; re-watching from the last resourceVersion",
					"reflector", r.name, "resourceVersion", r.LastSyncResourceVersion(),
					"watchedFor", r.clock.Since(start).Round(time.Second).String(), "why", lwe.Err.Error())
				continue
			}
			return lwe
		}
		if events == 0 && r.clock.Since(start) < shortWatch {
			// The server closed a fresh watch at once: do not hammer it.
			if !r.sleep(ctx, r.backoff.next()) {
				return nil
			}
		}
	}
	return nil
}

// handleWatch applies the events of w to the store until w ends (nil), an
// error event arrives, the watch stalls, or ctx ends. It returns the number
// of events applied.
func (r *reflector) handleWatch(ctx context.Context, w watch.Interface, deadline time.Duration) (int, error) {
	st := r.newStallTimer(deadline)
	defer st.timer.Stop()
	count := 0
	results := w.ResultChan()
	for n := 0; ; n++ {
		// While events flow, the next one is taken without the full select
		// (ctx and timer are looked at every fullSelectEvery events).
		e, ok, waited, err := r.nextEvent(ctx, results, st, n%fullSelectEvery != 0)
		if !ok || err != nil {
			return count, err
		}
		applied, err := r.applyEvent(ctx, e)
		if err != nil {
			return count, err
		}
		if !applied {
			continue
		}
		count++
		if waited {
			// The clock is read for events taken by the full select only: during
			// a burst that is one in fullSelectEvery, so the time of the last
			// event (for the stall timer and the activity metric) is off by at
			// most that many events.
			st.lastEvent = r.clock.Now()
			r.opts.metrics.active()
		}
	}
}

// stallTimer is handleWatch's stall detection: the watch is abandoned when
// nothing came for idle since lastEvent, or at hard (its server-side timeout
// and a minute).
type stallTimer struct {
	idle      time.Duration
	timer     clock.Timer
	lastEvent time.Time
	hard      time.Time
}

func (r *reflector) newStallTimer(deadline time.Duration) *stallTimer {
	idle := r.opts.WatchStallTimeout
	if idle <= 0 || idle > deadline {
		idle = deadline
	}
	now := r.clock.Now()
	return &stallTimer{idle: idle, timer: r.clock.NewTimer(idle), lastEvent: now, hard: now.Add(deadline)}
}

// nextEvent receives the next event of results: at once if one is ready and
// fast, else by the full select, which also ends the watch (ok false) when
// ctx ends or results is closed, returns a relist request or a stall as err,
// and re-arms the stall timer. waited reports the full select.
func (r *reflector) nextEvent(
	ctx context.Context, results <-chan watch.Event, st *stallTimer, fast bool,
) (e watch.Event, ok, waited bool, err error) {
	if fast {
		select {
		case e, ok = <-results:
			return e, ok, false, nil
		default:
		}
	}
	for {
		select {
		case <-ctx.Done():
			return e, false, true, nil
		case req := <-r.relistRequests:
			return e, false, true, req
		case <-st.timer.C():
			// The timer is not re-armed per event (that costs more than the
			// event's own queueing): it fires idle after it was armed, and is
			// re-armed for the rest of the idle period if an event came since
			// (or the rest of the watch's lifetime, if shorter).
			now := r.clock.Now()
			next := min(st.idle-now.Sub(st.lastEvent), st.hard.Sub(now))
			if next > 0 {
				st.timer.Reset(next)
				continue
			}
			return e, false, true, &ListWatchError{Name: r.name, Op: "watch", Reason: ReasonWatchStalled,
				Err: fmt.Errorf("no watch event for %s", st.idle)}
		case e, ok = <-results:
			return e, ok, true, nil
		}
	}
}

// applyEvent hands one watch event to the store: an object through admit
// (Added, Modified: kept decoded for handlers; Deleted: not encoded), a
// bookmark's RV to a store that takes bookmarks. It reports whether the event
// counts as applied (one of another type or without metadata, an object
// whose transform failed, or an unknown event type do not); an error event
// is returned as its error.
func (r *reflector) applyEvent(ctx context.Context, e watch.Event) (bool, error) {
	if e.Type == watch.Error {
		return false, apierrors.FromObject(e.Object)
	}
	if !r.expected(e.Object) {
		r.logger(ctx).Info("dropping watch event of unexpected type", "reflector", r.name, "type", fmt.Sprintf("%T", e.Object))
		return false, nil
	}
	m, err := meta.Accessor(e.Object)
	if err != nil {
		r.logger(ctx).Error(err, "dropping watch event without object metadata", "reflector", r.name)
		return false, nil
	}
	rv := m.GetResourceVersion()
	var obj any
	if e.Type != watch.Bookmark {
		how := admitWatched
		if e.Type == watch.Deleted {
			how = admitDeleted
		}
		var verdict admitVerdict
		if obj, verdict = r.admit(ctx, r.shard.Load(), e.Object, how); verdict == outsideShard {
			r.advanceRV(rv)
			return false, nil
		} else if verdict == dropped {
			return false, nil
		}
	}
	switch e.Type {
	case watch.Added:
		err = r.store.Add(obj)
	case watch.Modified:
		err = r.store.Update(obj)
	case watch.Deleted:
		err = r.store.Delete(obj)
	case watch.Bookmark:
		if b, ok := r.store.(bookmarker); ok {
			b.Bookmark(rv)
		}
	default:
		r.logger(ctx).Info("dropping watch event of unknown type", "reflector", r.name, "eventType", e.Type)
		return false, nil
	}
	r.opts.metrics.watchEvent(e.Type)
	if err != nil {
		r.logger(ctx).Error(err, "unable to queue watch event", "reflector", r.name, "eventType", e.Type)
	}
	r.advanceRV(rv)
	return true, nil
}

// advanceRV records rv ("" is ignored) as the last RV seen.
func (r *reflector) advanceRV(rv string) {
	if rv != "" {
		r.mu.Lock()
		r.lastRV = rv
		r.mu.Unlock()
	}
}

// fullSelectEvery: handleWatch checks its context and stall timer at least
// once per this many events received back to back.
const fullSelectEvery = 64

// expected reports whether obj has the example object's Go type (and, for
// unstructured examples with a kind, its GroupVersionKind).
func (r *reflector) expected(obj runtime.Object) bool {
	if r.expectedType == nil {
		return true
	}
	if reflect.TypeOf(obj) != r.expectedType {
		return false
	}
	if r.expectedGVK.Empty() {
		return true
	}
	return obj.GetObjectKind().GroupVersionKind() == r.expectedGVK
}

// report records err as LastError, counts it and passes it to the WatchErrorHandler.
func (r *reflector) report(ctx context.Context, err *ListWatchError) *ListWatchError {
	r.mu.Lock()
	if prev, ok := r.lastErr.(*ListWatchError); !ok || prev.Reason != err.Reason {
		r.errSince = r.clock.Now()
	}
	r.lastErr = err
	r.mu.Unlock()
	return r.notify(ctx, err)
}

// notify counts err and passes it to the WatchErrorHandler without making it LastError.
func (r *reflector) notify(ctx context.Context, err *ListWatchError) *ListWatchError {
	r.opts.metrics.listWatchError(err)
	if h := r.opts.WatchErrorHandler; h != nil {
		h(ctx, r.handlerView(), err)
	}
	return err
}

func (r *reflector) clearError() {
	r.mu.Lock()
	r.lastErr, r.errSince = nil, time.Time{}
	r.mu.Unlock()
}

// sleep waits d or until ctx ends; it reports whether ctx is still alive.
func (r *reflector) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

func lwReason(err error) string {
	if lwe, ok := errors.AsType[*ListWatchError](err); ok {
		return lwe.Reason
	}
	return reasonOf(err)
}

// objectTypeName is the default name of a reflector or informer: the Go type
// of the example object, or its GroupVersionKind for unstructured objects.
func objectTypeName(obj runtime.Object) string {
	if obj == nil {
		return "<unknown>"
	}
	if u, ok := obj.(*unstructured.Unstructured); ok && !u.GroupVersionKind().Empty() {
		return u.GroupVersionKind().String()
	}
	return reflect.TypeOf(obj).String()
}
