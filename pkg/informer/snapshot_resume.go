package informer

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// The warm start: the Reflector's first list, when a snapshot was loaded,
// is made from it instead of the server. The snapshot's records are a
// private staging set (key → what the DeltaFIFO would queue for a listed
// object); the live store and the DeltaFIFO are not touched until the set
// has caught up, so Get, List and HasSynced behave as during a cold list.
//
// Catching up: the server's current resourceVersion R is read first (a
// consistent LIST of one object). Then a watch from the snapshot's
// resourceVersion, with bookmarks and a 3 s timeout (the API server's watch
// cache sends a bookmark 2 s before a watch's deadline, and none to a watch
// whose deadline is less than 2 s away when it opens: k8s.io/apiserver
// v0.37 cacheWatcher.nextBookmarkTime; so it comes after about a second
// even for a kind that did not change), replays every change since the
// snapshot onto the staging set, re-opened from the last resourceVersion
// seen until an event or bookmark at R or later arrived: the set then is
// the server's state at that resourceVersion, which is at least as new as
// the moment the informer started.
//
// When the server no longer has the snapshot's resourceVersion (410), the
// snapshot's resourceVersion is newer than the server's (another history:
// etcd restored from a backup), or the snapshot is older than
// Snapshot.MaxAge, a metadata-only LIST
// (consistent, paginated) is compared with the set by uid and
// resourceVersion, page by page: keys the server no longer has are dropped,
// objects added or changed are fetched with Get (through the same admit path
// as listed objects) while the next pages are listed, and a watch from the
// metadata list's resourceVersion catches up to the newest of that list and
// the fetched objects. Too many objects changed (snapshot_diff.go,
// maxDiffShare), or no ListMetadata or Get: a cold list instead.
//
// A key never moves backwards in the set: an event older than the record
// held for its key (resourceVersions compared as integers, rvOlder) is not
// applied. That is what lets a watch replay changes onto objects fetched or
// written later than its starting point.
//
// Then the set is handed to the DeltaFIFO as the first list
// (beginInitialStream, appendInitial, endInitialStream with the caught-up
// resourceVersion): handlers get one Add per object, isInInitialList true,
// exactly as from a cold list, and the watch goes on from there. Any failure
// before the hand-off drops the set and lists cold.

const (
	// catchUpWatchSeconds is the server-side timeout of a catch-up watch:
	// the shortest that gets the API server's pre-deadline bookmark.
	catchUpWatchSeconds = 3
	// catchUpTimeout bounds the whole catch-up; past it the informer lists cold.
	catchUpTimeout = 30 * time.Second
	// appendInitialPart is how many staged objects go to the DeltaFIFO at once.
	appendInitialPart = 4096
)

var (
	errCatchUpTimeout = errors.New("the watch did not reach the server's resourceVersion in time")
	errNoDiff         = errors.New("no metadata diff configured (Snapshot.ListMetadata and Get)")
	errSnapshotTooOld = errors.New("snapshot older than MaxAge")
	errSnapshotAhead  = errors.New("snapshot resourceVersion newer than the server's")
)

// warmSnapshot is a loaded snapshot: its header and the staging set.
type warmSnapshot struct {
	header *snapshotHeader
	// records is the number of records of the file.
	records int
	// objs is the staging set, filled by the decode of the records, which
	// runs while the catch-up watch opens: read it after wait. restored is
	// closed when the decode ends (nil: objs is filled already), restoreErr
	// (a *snapshotDiscard) set before if it failed.
	objs       map[string]any
	restored   chan struct{}
	restoreErr error
}

// wait returns once objs holds the snapshot's records, or the decode's
// error, or ctx's.
func (ws *warmSnapshot) wait(ctx context.Context) error {
	if ws.restored == nil {
		return nil
	}
	select {
	case <-ws.restored:
		return ws.restoreErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// snapshotSource is the Reflector's access to its informer's snapshot.
type snapshotSource struct {
	cfg Snapshot
	// load reads the snapshot and starts decoding it, for a Reflector with
	// the shard selector given: nil and nil when there is none, or a
	// *snapshotDiscard.
	load func(shard *ShardSelector) (*warmSnapshot, error)
	// keyOf is the store's key function.
	keyOf func(obj any) (string, error)
}

// startReport says how an informer got its first list.
type startReport struct {
	// Start is startCold, startResumed, startDiffed or startDiscarded.
	Start string
	// Reason a snapshot was discarded, or a warm start given up ("" else).
	Reason string
	// Loaded objects from the snapshot; Fetched by the metadata diff.
	Loaded, Fetched int
}

// startReport returns how the informer got its first list; ok is false
// before it has, and for an informer without snapshots (always cold).
func (s *SharedIndexInformer) startReport() (startReport, bool) {
	if r := s.getReflector(); r != nil {
		if p := r.start.Load(); p != nil {
			return *p, true
		}
	}
	return startReport{}, false
}

// reportStart records and counts how the first list was had (only an
// informer with snapshots on reports it).
func (r *reflector) reportStart(rep startReport) {
	r.start.Store(&rep)
	r.opts.metrics.started(rep.Start, rep.Reason, rep.Loaded, rep.Fetched)
}

// warmStart makes the first list from the snapshot, if there is a usable
// one; it reports whether it did (false: list cold; the reason is reported).
func (r *reflector) warmStart(ctx context.Context) bool {
	src := r.opts.snapshot
	log := r.logger(ctx).WithValues("reflector", r.name)
	ws, err := src.load(r.shard.Load())
	if err != nil {
		log.Info("snapshot discarded; starting cold", "reason", discardReason(err), "error", err.Error())
		r.reportStart(startReport{Start: startDiscarded, Reason: discardReason(err)})
		return false
	}
	if ws == nil {
		return false
	}
	stream := r.initialStream()
	if stream == nil {
		return false
	}
	start := r.clock.Now()
	loaded := ws.records
	rep := startReport{Start: startResumed, Loaded: loaded}
	rv, err := "", error(nil)
	if age := time.Since(ws.header.written); age > src.cfg.maxAge() {
		err = fmt.Errorf("%w: written %s ago, MaxAge %s", errSnapshotTooOld, age.Round(time.Millisecond), src.cfg.maxAge())
	} else {
		rv, err = r.resume(ctx, ws)
	}
	caughtUp := r.clock.Now()
	if err != nil && ctx.Err() == nil && diffable(err) {
		log.V(1).Info("snapshot not resumable by watch; comparing it with a metadata list", "reason", err.Error())
		rep.Start = startDiffed
		rv, rep.Fetched, err = r.snapshotDiff(ctx, ws)
	}
	if err == nil {
		err = ws.wait(ctx) // a kind that did not change: no event waited for it
	}
	if err == nil && rep.Start == startResumed {
		log.Info("snapshot caught up by a watch", "catchUpSeconds", caughtUp.Sub(start).Seconds(),
			"decodeWaitSeconds", r.clock.Since(caughtUp).Seconds())
	}
	if d, ok := errors.AsType[*snapshotDiscard](err); ok {
		log.Info("snapshot discarded; starting cold", "reason", d.reason, "error", err.Error())
		r.reportStart(startReport{Start: startDiscarded, Reason: d.reason})
		return false
	}
	if err != nil {
		if ctx.Err() == nil {
			log.Info("warm start given up; starting cold", "error", err.Error())
			r.reportStart(startReport{Start: startCold, Reason: "warm start failed", Loaded: loaded})
		}
		return false
	}
	r.reportStart(rep) // before the hand-off, after which the informer may sync and log it
	r.handOff(stream, ws, rv, start)
	return true
}

// diffable reports whether err leaves the metadata diff to try: the
// snapshot's RV is unusable for a watch, the snapshot is too old, or the
// watch did not catch up in time.
func diffable(err error) bool {
	return needsDiff(err) || errors.Is(err, errCatchUpTimeout) || errors.Is(err, errSnapshotTooOld) ||
		errors.Is(err, errSnapshotAhead)
}

// needsDiff reports whether err means the snapshot's resourceVersion is
// unusable for a watch (410 Expired or Gone, or too large for the server).
func needsDiff(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || isTooLargeResourceVersion(err)
}

func discardReason(err error) string {
	if d, ok := errors.AsType[*snapshotDiscard](err); ok {
		return d.reason
	}
	return discardUnreadable
}

// resume catches the staging set up by a watch from the snapshot's RV to the
// server's current RV.
func (r *reflector) resume(ctx context.Context, ws *warmSnapshot) (string, error) {
	target, err := r.currentRV(ctx)
	if err != nil {
		return "", err
	}
	if rvOlder(target, ws.header.resourceVersion) {
		return "", fmt.Errorf("%w: %s > %s", errSnapshotAhead, ws.header.resourceVersion, target)
	}
	return r.catchUp(ctx, ws, ws.header.resourceVersion, target)
}

// currentRV returns the server's current resourceVersion: that of a
// consistent LIST of one object.
func (r *reflector) currentRV(ctx context.Context) (string, error) {
	opts := metav1.ListOptions{ResourceVersion: "", Limit: 1}
	r.shardOptions(ctx, &opts, r.shard.Load())
	r.opts.metrics.listRequest()
	obj, err := r.lw.ListWithContext(ctx, opts)
	if err != nil {
		return "", err
	}
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		return "", fmt.Errorf("unable to understand list result %T: %w", obj, err)
	}
	rv := lm.GetResourceVersion()
	if _, ok := parseRV(rv); !ok {
		return "", fmt.Errorf("server resourceVersion %q is not an integer", rv)
	}
	return rv, nil
}

// catchUp applies the changes after from to the staging set, by short
// watches re-opened from the last RV seen, until an event or bookmark at
// target or later; it returns that RV.
func (r *reflector) catchUp(ctx context.Context, ws *warmSnapshot, from, target string) (string, error) {
	rv := from
	deadline := r.clock.Now().Add(catchUpTimeout)
	for rvOlder(rv, target) {
		if !r.clock.Now().Before(deadline) {
			return "", errCatchUpTimeout
		}
		timeout := int64(catchUpWatchSeconds)
		opts := metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: &timeout}
		r.shardOptions(ctx, &opts, r.shard.Load())
		w, err := r.lw.WatchWithContext(ctx, opts)
		if err != nil {
			return "", err
		}
		r.opts.metrics.watchStarted()
		rv, err = r.catchUpWatch(ctx, w, ws, rv, target)
		w.Stop()
		if err != nil {
			return "", err
		}
	}
	return rv, nil
}

// catchUpWatch applies w's events to the staging set until one reaches
// target, w ends, or it outlives its timeout by 3 s; it returns the last RV
// applied.
func (r *reflector) catchUpWatch(
	ctx context.Context, w watch.Interface, ws *warmSnapshot, rv, target string,
) (string, error) {
	timer := r.clock.NewTimer((catchUpWatchSeconds + 3) * time.Second)
	defer timer.Stop()
	for rvOlder(rv, target) {
		select {
		case <-ctx.Done():
			return rv, ctx.Err()
		case <-timer.C():
			return rv, nil
		case e, ok := <-w.ResultChan():
			if !ok {
				return rv, nil
			}
			if e.Type == watch.Error {
				return rv, apierrors.FromObject(e.Object)
			}
			erv, err := r.stage(ctx, ws, e)
			if err != nil {
				return rv, err
			}
			if erv != "" && !rvOlder(erv, rv) {
				rv = erv
			}
		}
	}
	return rv, nil
}

// stage applies one watch event to the staging set, unless it is older than
// the record held for its key; it returns the event's RV ("" for an event
// of another type or without metadata). An object event waits for the
// snapshot's decode (warmSnapshot.wait), whose error it returns.
func (r *reflector) stage(ctx context.Context, ws *warmSnapshot, e watch.Event) (string, error) {
	if !r.expected(e.Object) {
		return "", nil
	}
	m, err := meta.Accessor(e.Object)
	if err != nil {
		return "", nil
	}
	rv := m.GetResourceVersion()
	r.opts.metrics.watchEvent(e.Type)
	if e.Type != watch.Added && e.Type != watch.Modified && e.Type != watch.Deleted {
		return rv, nil // a bookmark
	}
	key, err := r.opts.snapshot.keyOf(e.Object)
	if err != nil {
		return rv, nil
	}
	if err := ws.wait(ctx); err != nil {
		return "", err
	}
	if cur, ok := ws.objs[key]; ok && rvOlder(rv, objectRV(cur)) {
		return rv, nil
	}
	if e.Type == watch.Deleted {
		delete(ws.objs, key)
		return rv, nil
	}
	obj, verdict := r.admit(ctx, r.shard.Load(), e.Object, admitListed)
	switch verdict {
	case admitted:
		ws.objs[key] = obj
	case outsideShard:
		delete(ws.objs, key)
	}
	return rv, nil
}

// handOff gives the caught-up staging set to the DeltaFIFO as the first
// list, at rv.
func (r *reflector) handOff(stream initialStreamer, ws *warmSnapshot, rv string, start time.Time) {
	n := len(ws.objs)
	part := make([]any, 0, max(1, min(n, appendInitialPart)))
	for key, obj := range ws.objs {
		part = append(part, obj)
		delete(ws.objs, key)
		if len(part) == cap(part) {
			_ = stream.appendInitial(part) // staged objects all have keys
			clear(part)
			part = part[:0]
		}
	}
	if len(part) > 0 {
		_ = stream.appendInitial(part)
	}
	stats := ListSummary{Objects: n, ResourceVersion: rv, Duration: r.clock.Since(start)}
	r.recordList(rv, stats)
	r.recordShardList(r.shard.Load(), rv) // before the end, as installStreamed does
	stream.endInitialStream(rv)
	r.opts.metrics.active()
}

// objectUID returns the uid of a staged object ("" when it has none).
func objectUID(obj any) types.UID {
	if e, ok := obj.(*queuedItem); ok {
		return e.uid
	}
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetUID()
	}
	return ""
}
