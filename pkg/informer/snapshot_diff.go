package informer

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// diffGetWorkers is how many Gets of a metadata diff are in flight at once.
const diffGetWorkers = 8

// maxDiffShare: a metadata diff that finds more than this share of the
// objects added or changed gives up for a cold list (one Get per object
// costs more than the list's pages).
const maxDiffShare = 4 // a quarter

// diffFetch is an object the metadata diff must fetch.
type diffFetch struct{ key, namespace, name string }

// snapshotDiff brings the staging set to the server's state without the
// snapshot's resourceVersion (see the file comment of snapshot_resume.go):
// a consistent, paginated metadata LIST compared by uid and resourceVersion,
// Gets of what was added or changed, and a watch from the list's RV up to
// the newest RV seen. It returns the caught-up RV and the objects fetched.
func (r *reflector) snapshotDiff(ctx context.Context, ws *warmSnapshot) (string, int, error) {
	cfg := r.opts.snapshot.cfg
	if cfg.ListMetadata == nil || cfg.Get == nil {
		return "", 0, errNoDiff
	}
	if err := ws.wait(ctx); err != nil {
		return "", 0, err
	}
	rv, listed, fetch, err := r.diffList(ctx, ws)
	if err != nil {
		return "", 0, err
	}
	if len(fetch)*maxDiffShare > listed {
		return "", 0, fmt.Errorf("%d of %d objects changed since the snapshot: more than 1/%d",
			len(fetch), listed, maxDiffShare)
	}
	newest, err := r.fetchChanged(ctx, ws, fetch, rv)
	if err != nil {
		return "", 0, err
	}
	rv, err = r.catchUp(ctx, ws, rv, newest)
	return rv, len(fetch), err
}

// diffList lists the scope's metadata and compares it with the staging set:
// keys absent from the list are dropped; it returns the list's RV, the
// objects listed (within the shard) and those to fetch.
func (r *reflector) diffList(ctx context.Context, ws *warmSnapshot) (string, int, []diffFetch, error) {
	cfg := r.opts.snapshot.cfg
	sel := r.shard.Load()
	seen := make(map[string]struct{}, len(ws.objs))
	var fetch []diffFetch
	opts := metav1.ListOptions{ResourceVersion: "", Limit: r.opts.PageSize}
	var rv string
	for {
		r.shardOptions(ctx, &opts, sel)
		r.opts.metrics.listRequest()
		list, err := cfg.ListMetadata(ctx, opts)
		if err != nil {
			return "", 0, nil, err
		}
		r.opts.metrics.listPage()
		for i := range list.Items {
			it := &list.Items[i]
			if sel != nil && !sel.admits(it) {
				continue
			}
			key := it.Name
			if it.Namespace != "" {
				key = it.Namespace + "/" + it.Name
			}
			seen[key] = struct{}{}
			if cur, ok := ws.objs[key]; ok && objectUID(cur) == it.UID && objectRV(cur) == it.ResourceVersion {
				continue
			}
			fetch = append(fetch, diffFetch{key: key, namespace: it.Namespace, name: it.Name})
		}
		rv = list.ResourceVersion
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	if _, ok := parseRV(rv); !ok {
		return "", 0, nil, fmt.Errorf("metadata list resourceVersion %q is not an integer", rv)
	}
	for key := range ws.objs {
		if _, ok := seen[key]; !ok {
			delete(ws.objs, key)
		}
	}
	return rv, len(seen), fetch, nil
}

// fetchChanged Gets the objects of fetch, diffGetWorkers at a time, and puts
// each in the staging set through admit (one at a time, on the caller's
// goroutine: the transform is not called concurrently), or drops its key
// when it is gone (NotFound: its watch event says so too) or not admitted.
// It returns the newest RV among newest and the fetched objects'.
func (r *reflector) fetchChanged(
	ctx context.Context, ws *warmSnapshot, fetch []diffFetch, newest string,
) (string, error) {
	type fetched struct {
		f   diffFetch
		obj runtime.Object
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan diffFetch)
	results := make(chan fetched, diffGetWorkers)
	get := r.opts.snapshot.cfg.Get
	var wg sync.WaitGroup
	for range min(diffGetWorkers, len(fetch)) {
		wg.Go(func() {
			for f := range work {
				obj, err := get(ctx, f.namespace, f.name)
				select {
				case results <- fetched{f: f, obj: obj, err: err}:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() {
		defer close(work)
		for _, f := range fetch {
			select {
			case work <- f:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	sel := r.shard.Load()
	for res := range results {
		if apierrors.IsNotFound(res.err) {
			delete(ws.objs, res.f.key)
			continue
		}
		if res.err != nil {
			return "", fmt.Errorf("get %s: %w", res.f.key, res.err)
		}
		staged, verdict := r.admit(ctx, sel, res.obj, admitListed)
		if verdict != admitted {
			delete(ws.objs, res.f.key)
			continue
		}
		ws.objs[res.f.key] = staged
		if orv := objectRV(staged); rvOlder(newest, orv) {
			newest = orv
		}
	}
	return newest, ctx.Err()
}
