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

// errInitialEventsIncomplete: the stream closed before the initial-events-end
// bookmark.
var errInitialEventsIncomplete = errors.New("watch closed before the initial events ended")

// useWatchList reports whether the initial list is streamed: WatchList is not
// disabled by the options, the ListerWatcher does not opt out with
// IsWatchListSemanticsUnSupported() == true (ours do when bookmarks are off),
// and the server has not refused it or failed to end its initial events
// before (see watchListRefused).
func (r *reflector) useWatchList() bool {
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
func (r *reflector) watchList(ctx context.Context) (watch.Interface, int64, error) {
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
	// The first list into an empty store is streamed to it in chunks (see
	// initialStreamer); any other is collected and Replaced at the bookmark.
	l := &streamedList{r: r, sel: sel, start: start, stream: r.initialStream(), items: newRelistSet(0),
		progress: r.newListProgress(ctx, true)}
	if err := l.receive(ctx, w, timeoutSeconds); err != nil {
		w.Stop()
		return nil, 0, err
	}
	return w, timeoutSeconds, nil
}

// streamedList is the state of one WatchList stream's initial events: the
// objects admitted so far, as chunks handed to the store (stream not nil)
// or collected in a table for a Replace.
type streamedList struct {
	r        *reflector
	sel      *ShardSelector
	start    time.Time
	stream   initialStreamer
	chunk    []any
	streamed int
	items    relistSet
	progress *listProgress
}

// receive takes the initial events of w until the initial-events-end
// bookmark has installed the list (nil), or returns the error that ends the
// attempt (see watchList): the caller stops w.
func (l *streamedList) receive(ctx context.Context, w watch.Interface, timeoutSeconds int64) error {
	r := l.r
	limit := r.opts.WatchListTimeout
	if limit <= 0 {
		limit = defaultWatchListTimeout
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
		return &ListWatchError{Name: r.name, Op: "watchlist", Reason: ReasonWatchListTimeout,
			Err: fmt.Errorf("no initial-events-end bookmark %s %s", what, d)}
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-idle.C():
			if events == eventsAtLastCheck {
				return timedOut("and no event for", limit)
			}
			eventsAtLastCheck = events
			idle.Reset(limit)
		case <-whole.C():
			return timedOut("within", overall)
		case e, ok := <-w.ResultChan():
			if !ok {
				return errInitialEventsIncomplete
			}
			events++
			if done, err := l.handle(ctx, e); done || err != nil {
				return err
			}
		}
	}
}

// handle takes one event of the stream: an object is admitted (reflector.admit)
// into the list, the initial-events-end bookmark installs it (done). Errors:
// an error event's, a live event before that bookmark, a stale list.
func (l *streamedList) handle(ctx context.Context, e watch.Event) (done bool, err error) {
	r := l.r
	if e.Type == watch.Error {
		return false, apierrors.FromObject(e.Object)
	}
	if !r.expected(e.Object) {
		return false, nil
	}
	m, err := meta.Accessor(e.Object)
	if err != nil {
		return false, nil
	}
	if e.Type == watch.Bookmark {
		if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
			return false, nil
		}
		return true, l.install(ctx, m.GetResourceVersion())
	}
	key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(e.Object)
	if err != nil {
		return false, nil
	}
	if e.Type != watch.Added {
		return false, &ListWatchError{Name: r.name, Op: "watchlist", Reason: ReasonWatchListTimeout,
			Err: fmt.Errorf("no initial-events-end bookmark before a %s event for %s", e.Type, key)}
	}
	obj, verdict := r.admit(ctx, l.sel, e.Object, admitListed)
	switch {
	case verdict != admitted:
		if verdict == outsideShard {
			return false, nil
		}
	case l.stream != nil:
		l.chunk = append(l.chunk, obj)
		if len(l.chunk) == streamChunk {
			r.appendStreamed(ctx, l.stream, l.chunk)
			l.streamed += len(l.chunk)
			l.chunk = make([]any, 0, streamChunk)
		}
	default:
		l.items.set(key, obj)
	}
	l.progress.report(l.streamed+len(l.chunk)+len(l.items.objs), 0)
	return false, nil
}

// install hands the list, complete at rv, to the store: the last chunk of a
// streamed one, or the collected table as a Replace.
func (l *streamedList) install(ctx context.Context, rv string) error {
	r := l.r
	if l.stream != nil {
		r.appendStreamed(ctx, l.stream, l.chunk)
		l.streamed += len(l.chunk)
		stats := ListSummary{Objects: l.streamed, ResourceVersion: rv, Duration: r.clock.Since(l.start), WatchList: true}
		r.installStreamed(l.stream, l.sel, rv, stats)
		return nil
	}
	// The list is the table's objects themselves (no copy); its key index
	// goes now, before the FIFO builds its own.
	list := l.items.objs
	l.items = relistSet{}
	stats := ListSummary{Objects: len(list), ResourceVersion: rv, Duration: r.clock.Since(l.start), WatchList: true}
	return r.install(ctx, "watchlist", l.sel, list, rv, stats)
}

// streamChunk is the number of a WatchList stream's initial events handed to
// an initialStreamer at once.
const streamChunk = 256

// appendStreamed hands part of a streamed list to the store.
func (r *reflector) appendStreamed(ctx context.Context, s initialStreamer, part []any) {
	if err := s.appendInitial(part); err != nil {
		r.logger(ctx).Error(err, "some listed objects were not stored", "reflector", r.name)
	}
}
