package informer

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// ReasonWatchListTimeout: a WatchList stream did not end its initial events
// within the WatchListTimeout (e.g. a server or ListerWatcher that ignores
// sendInitialEvents); the Reflector fell back to LIST.
const ReasonWatchListTimeout = "WatchListTimeout"

// errInitialEventsIncomplete: the stream closed before the initial-events-end
// bookmark.
var errInitialEventsIncomplete = errors.New("watch closed before the initial events ended")

// useWatchList reports whether the initial list is streamed: WatchList is on
// and the ListerWatcher does not opt out with
// IsWatchListSemanticsUnSupported() == true.
func (r *Reflector) useWatchList() bool {
	return r.opts.WatchList && !watchlist.DoesClientNotSupportWatchListSemantics(r.lw)
}

// watchList streams the initial list (KEP-3157): a watch with
// sendInitialEvents=true and resourceVersionMatch=NotOlderThan at RV "" (the
// newest state) delivers every object as ADDED, then a bookmark annotated
// k8s.io/initial-events-end. The objects are collected (transformed, so the
// temporary set is as small as the store) and Replaced into the store at the
// bookmark's RV, as a LIST would be; the open stream is returned to continue
// as the watch. Errors: the stream's error, errInitialEventsIncomplete, or a
// ReasonWatchListTimeout ListWatchError when the end bookmark does not come.
func (r *Reflector) watchList(ctx context.Context) (watch.Interface, error) {
	start := r.clock.Now()
	timeoutSeconds := r.watchTimeout()
	sendInitial := true
	w, err := r.lw.WatchWithContext(ctx, metav1.ListOptions{
		ResourceVersion:      "",
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents:    &sendInitial,
		AllowWatchBookmarks:  true,
		TimeoutSeconds:       &timeoutSeconds,
	})
	if err != nil {
		return nil, err
	}
	limit := r.opts.WatchListTimeout
	if limit <= 0 {
		limit = DefaultWatchListTimeout
	}
	timer := r.clock.NewTimer(limit)
	defer timer.Stop()

	items := newTable(0)
	for {
		select {
		case <-ctx.Done():
			w.Stop()
			return nil, ctx.Err()
		case <-timer.C():
			w.Stop()
			return nil, &ListWatchError{Name: r.name, Op: "watchlist", Reason: ReasonWatchListTimeout,
				Err: fmt.Errorf("no initial-events-end bookmark within %s", limit)}
		case e, ok := <-w.ResultChan():
			if !ok {
				return nil, errInitialEventsIncomplete
			}
			if e.Type == watch.Error {
				w.Stop()
				return nil, apierrors.FromObject(e.Object)
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
				list := make([]any, len(items.objs))
				copy(list, items.objs)
				stats := ListStats{Objects: len(list), ResourceVersion: rv, Duration: r.clock.Since(start), WatchList: true}
				if err := r.install(ctx, "watchlist", list, rv, stats); err != nil {
					w.Stop()
					return nil, err
				}
				return w, nil
			}
			key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(e.Object)
			if err != nil {
				continue
			}
			switch e.Type {
			case watch.Added, watch.Modified:
				if obj, ok := r.transformed(ctx, e.Object); ok {
					items.set(key, obj)
				}
			case watch.Deleted:
				items.del(key)
			}
		}
	}
}
