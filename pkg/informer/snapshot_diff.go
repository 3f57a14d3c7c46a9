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

// diffPageFactor: the diff's metadata LIST asks for pages this many times
// the informer's PageSize. A page of metadata is a fraction of a page of
// objects, and the pages come one after the other: with 500 a diff of 70k
// objects made 140 requests in sequence.
const diffPageFactor = 10

// diffFetch is an object the metadata diff must fetch.
type diffFetch struct{ key, namespace, name string }

// listedMeta is what the diff keeps of a listed object: enough to compare it
// with the snapshot's and to Get it.
type listedMeta struct {
	diffFetch
	uid, rv string
}

// snapshotDiff brings the staging set to the server's state without the
// snapshot's resourceVersion (see the file comment of snapshot_resume.go):
// a consistent, paginated metadata LIST (made while the snapshot's records
// still decode) compared by uid and resourceVersion, Gets of what was added
// or changed, and a watch from the list's RV up to the newest RV seen. It
// returns the caught-up RV and the objects fetched, and logs how long each
// step took.
func (r *reflector) snapshotDiff(ctx context.Context, ws *warmSnapshot) (string, int, error) {
	cfg := r.opts.snapshot.cfg
	if cfg.ListMetadata == nil || cfg.Get == nil {
		return "", 0, errNoDiff
	}
	start := r.clock.Now()
	rv, listed, pages, err := r.diffList(ctx)
	if err != nil {
		return "", 0, err
	}
	listedAt := r.clock.Now()
	if err := ws.wait(ctx); err != nil {
		return "", 0, err
	}
	decodedAt := r.clock.Now()
	fetch := compareListed(ws, listed)
	if len(fetch)*maxDiffShare > len(listed) {
		return "", 0, fmt.Errorf("%d of %d objects changed since the snapshot: more than 1/%d",
			len(fetch), len(listed), maxDiffShare)
	}
	newest, err := r.fetchChanged(ctx, ws, fetch, rv, rv)
	if err != nil {
		return "", 0, err
	}
	fetchedAt := r.clock.Now()
	rv, err = r.catchUp(ctx, ws, rv, newest)
	if err != nil {
		return "", 0, err
	}
	r.logger(ctx).WithValues("reflector", r.name).Info("snapshot compared with a metadata list",
		"listed", len(listed), "pages", pages, "fetched", len(fetch),
		"listSeconds", listedAt.Sub(start).Seconds(),
		"decodeWaitSeconds", decodedAt.Sub(listedAt).Seconds(),
		"getSeconds", fetchedAt.Sub(decodedAt).Seconds(),
		"catchUpSeconds", r.clock.Since(fetchedAt).Seconds())
	return rv, len(fetch), nil
}

// diffList lists the scope's metadata (within the shard) in pages of
// diffPageFactor × PageSize and returns the list's RV, the objects listed and
// the number of pages.
func (r *reflector) diffList(ctx context.Context) (string, []listedMeta, int, error) {
	cfg := r.opts.snapshot.cfg
	sel := r.shard.Load()
	pageSize := r.opts.PageSize
	if pageSize <= 0 {
		pageSize = defaultPageSize
	}
	var listed []listedMeta
	opts := metav1.ListOptions{ResourceVersion: "", Limit: pageSize * diffPageFactor}
	var rv string
	pages := 0
	for {
		r.shardOptions(ctx, &opts, sel)
		r.opts.metrics.listRequest()
		list, err := cfg.ListMetadata(ctx, opts)
		if err != nil {
			return "", nil, 0, err
		}
		r.opts.metrics.listPage()
		pages++
		if listed == nil {
			listed = make([]listedMeta, 0, len(list.Items))
		}
		for i := range list.Items {
			it := &list.Items[i]
			if sel != nil && !sel.admits(it) {
				continue
			}
			key := it.Name
			if it.Namespace != "" {
				key = it.Namespace + "/" + it.Name
			}
			listed = append(listed, listedMeta{diffFetch: diffFetch{key: key, namespace: it.Namespace, name: it.Name},
				uid: string(it.UID), rv: it.ResourceVersion})
		}
		rv = list.ResourceVersion
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	if _, ok := parseRV(rv); !ok {
		return "", nil, 0, fmt.Errorf("metadata list resourceVersion %q is not an integer", rv)
	}
	return rv, listed, pages, nil
}

// compareListed compares the listed objects with the staging set: keys
// absent from the list are dropped; it returns the objects added or changed
// (another uid or resourceVersion), to fetch.
func compareListed(ws *warmSnapshot, listed []listedMeta) []diffFetch {
	seen := make(map[string]struct{}, len(listed))
	var fetch []diffFetch
	for i := range listed {
		l := &listed[i]
		seen[l.key] = struct{}{}
		if cur, ok := ws.objs[l.key]; ok && string(objectUID(cur)) == l.uid && objectRV(cur) == l.rv {
			continue
		}
		fetch = append(fetch, l.diffFetch)
	}
	for key := range ws.objs {
		if _, ok := seen[key]; !ok {
			delete(ws.objs, key)
		}
	}
	return fetch
}

// fetchChanged Gets the objects of fetch (each not older than listRV: served
// from the API server's watch cache), diffGetWorkers at a time, and puts
// each in the staging set through admit (one at a time, on the caller's
// goroutine: the transform is not called concurrently), or drops its key
// when it is gone (NotFound: its watch event says so too) or not admitted.
// It returns the newest RV among newest and the fetched objects'.
func (r *reflector) fetchChanged(
	ctx context.Context, ws *warmSnapshot, fetch []diffFetch, listRV, newest string,
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
				obj, err := get(ctx, f.namespace, f.name, metav1.GetOptions{ResourceVersion: listRV})
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
