package informer

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// ReasonWatchListTimeout: a WatchList stream fell silent for the
// WatchListTimeout, did not end its initial events within three of them
// (e.g. a server or ListerWatcher that ignores sendInitialEvents), or sent a
// live event (MODIFIED, DELETED) before its initial-events-end bookmark (a
// proxy or aggregated server that drops bookmarks); the Reflector fell back
// to LIST.
const ReasonWatchListTimeout = "WatchListTimeout"

// errInitialEventsIncomplete: the stream closed before the initial-events-end
// bookmark.
var errInitialEventsIncomplete = errors.New("watch closed before the initial events ended")

// useWatchList reports whether the initial list is streamed: WatchList is not
// disabled by the options, the ListerWatcher does not opt out with
// IsWatchListSemanticsUnSupported() == true (ours do when bookmarks are off),
// and the server has not refused it or failed to end its initial events
// before (see watchListRefused).
func (r *Reflector) useWatchList() bool {
	return !r.opts.DisableWatchList && r.watchListOff == "" &&
		!watchlist.DoesClientNotSupportWatchListSemantics(r.lw)
}

// watchListOverallFactor bounds a whole WatchList stream, in WatchListTimeouts.
const watchListOverallFactor = 3

// watchListRefused reports whether a failed WatchList attempt means the
// server (or the ListerWatcher) will not stream lists at all, so the
// Reflector uses LIST from then on instead of paying for the attempt at every
// relist: the request was rejected as invalid (a server whose WatchList
// feature gate is off answers 422 "sendInitialEvents is forbidden"), or the
// initial-events-end bookmark did not come in time (see ReasonWatchListTimeout:
// a server that ignores sendInitialEvents, or bookmarks dropped on the way).
// Other failures (403, 404, transport, 5xx, a stream closed early) make that
// one attempt fall back to LIST; the next relist streams again (client-go).
func watchListRefused(err *ListWatchError) bool {
	return err.Reason == ReasonWatchListTimeout || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
}

// watchList streams the initial list (KEP-3157): a watch with
// sendInitialEvents=true, resourceVersionMatch=NotOlderThan and bookmarks at
// RV "" (a consistent read of the newest state) delivers every object as
// ADDED, then a bookmark annotated k8s.io/initial-events-end. The objects are
// collected (transformed, so the temporary set is as small as the store) and
// Replaced into the store at the bookmark's RV, as a LIST would be; the open
// stream and its server-side timeout (seconds) are returned to continue as
// the watch. Errors: the stream's error, errInitialEventsIncomplete, or a
// ReasonWatchListTimeout ListWatchError when the stream is silent for a whole
// WatchListTimeout period (so between one and two of them), its end
// bookmark does not come within watchListOverallFactor×WatchListTimeout
// (never an endless wait), or a MODIFIED or DELETED event comes first: the
// initial events of a stream are all ADDED, so a live event means the end
// bookmark was lost and the stream would never sync.
func (r *Reflector) watchList(ctx context.Context) (watch.Interface, int64, error) {
	start := r.clock.Now()
	timeoutSeconds := r.watchTimeout()
	sendInitial := true
	sel := r.shard.Load()
	if err := r.probeServerSharding(ctx, sel); err != nil && ctx.Err() == nil {
		r.logger(ctx).Info("Could not learn whether the server filters by shard selector; filtering on the client meanwhile",
			"reflector", r.name, "error", err.Error())
	}
	opts := metav1.ListOptions{
		ResourceVersion:      "",
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents:    &sendInitial,
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       &timeoutSeconds,
	}
	r.shardOptions(ctx, &opts, sel)
	w, err := r.lw.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, 0, err
	}
	limit := r.opts.WatchListTimeout
	if limit <= 0 {
		limit = DefaultWatchListTimeout
	}
	// A healthy stream of a large list may take longer than limit, but it keeps
	// delivering: a whole period of limit without an event ends it (a timer
	// re-armed each period while the count of events moves, so an event costs no
	// timer work), and the whole stream must end within
	// watchListOverallFactor×limit, and before the server would close it (a
	// server that ignores sendInitialEvents in a busy cluster also keeps
	// delivering, and must still be found out).
	overall := min(watchListOverallFactor*limit, time.Duration(timeoutSeconds)*time.Second*9/10)
	idle, whole := r.clock.NewTimer(limit), r.clock.NewTimer(overall)
	defer idle.Stop()
	defer whole.Stop()
	events, eventsAtLastCheck := 0, 0
	timedOut := func(what string, d time.Duration) *ListWatchError {
		w.Stop()
		return &ListWatchError{Name: r.name, Op: "watchlist", Reason: ReasonWatchListTimeout,
			Err: fmt.Errorf("no initial-events-end bookmark %s %s", what, d)}
	}

	// The first list into an empty store is streamed to it in chunks (see
	// initialStreamer); any other is collected and Replaced at the bookmark.
	stream := r.initialStream()
	var chunk []any
	streamed := 0
	items := newTable(0)
	progress := r.newListProgress(ctx, true)
	for {
		select {
		case <-ctx.Done():
			w.Stop()
			return nil, 0, ctx.Err()
		case <-idle.C():
			if events == eventsAtLastCheck {
				return nil, 0, timedOut("and no event for", limit)
			}
			eventsAtLastCheck = events
			idle.Reset(limit)
		case <-whole.C():
			return nil, 0, timedOut("within", overall)
		case e, ok := <-w.ResultChan():
			if !ok {
				w.Stop() // the stream ended; this releases the watch's resources
				return nil, 0, errInitialEventsIncomplete
			}
			events++
			if e.Type == watch.Error {
				w.Stop()
				return nil, 0, apierrors.FromObject(e.Object)
			}
			if !r.expected(e.Object) {
				continue
			}
			m, err := meta.Accessor(e.Object)
			if err != nil {
				continue
			}
			if e.Type == watch.Bookmark {
				if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
					continue
				}
				rv := m.GetResourceVersion()
				if stream != nil {
					r.appendStreamed(ctx, stream, chunk)
					streamed += len(chunk)
					stats := ListStats{Objects: streamed, ResourceVersion: rv, Duration: r.clock.Since(start), WatchList: true}
					r.installStreamed(stream, sel, rv, stats)
					return w, timeoutSeconds, nil
				}
				// The list is the table's objects themselves (no copy); its
				// key index goes now, before the FIFO builds its own.
				list := items.objs
				items = table{}
				stats := ListStats{Objects: len(list), ResourceVersion: rv, Duration: r.clock.Since(start), WatchList: true}
				if err := r.install(ctx, "watchlist", sel, list, rv, stats); err != nil {
					w.Stop()
					return nil, 0, err
				}
				return w, timeoutSeconds, nil
			}
			key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(e.Object)
			if err != nil {
				continue
			}
			if e.Type != watch.Added {
				w.Stop()
				return nil, 0, &ListWatchError{Name: r.name, Op: "watchlist", Reason: ReasonWatchListTimeout,
					Err: fmt.Errorf("no initial-events-end bookmark before a %s event for %s", e.Type, key)}
			}
			if !r.keep(sel, e.Object) {
				continue
			}
			obj, ok := r.transformed(ctx, e.Object)
			switch {
			case !ok:
			case stream != nil:
				chunk = append(chunk, r.queued(obj, false))
				if len(chunk) == streamChunk {
					r.appendStreamed(ctx, stream, chunk)
					streamed += len(chunk)
					chunk = make([]any, 0, streamChunk)
				}
			default:
				items.set(key, r.queued(obj, false))
			}
			progress.report(streamed+len(chunk)+len(items.objs), 0)
		}
	}
}

// streamChunk is the number of a WatchList stream's initial events handed to
// an initialStreamer at once.
const streamChunk = 256

// appendStreamed hands part of a streamed list to the store.
func (r *Reflector) appendStreamed(ctx context.Context, s initialStreamer, part []any) {
	if err := s.appendInitial(part); err != nil {
		r.logger(ctx).Error(err, "some listed objects were not stored", "reflector", r.name)
	}
}
