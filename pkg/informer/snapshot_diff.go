package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// diffGetWorkers is how many Gets of a metadata diff are in flight at once.
const diffGetWorkers = 16

// A metadata diff gives up for a cold list once the objects it must fetch
// are more than diffGetFloor and more than 1/maxDiffShare of those listed so
// far: a Get costs the API server about as much as listing a few dozen
// objects (its request handling, not its body), so past a few percent the
// Gets cost more than the list they replace. Measured with the restart
// section of make bench (50k pods on a local envtest server, 16 Gets in
// flight): 798 Gets took longer than the metadata LIST of all 50k pods.
const (
	maxDiffShare = 20 // 5 %
	diffGetFloor = 64
)

// diffPageFactor: the diff's metadata LIST asks for pages this many times
// the informer's PageSize. A page of metadata is a fraction of a page of
// objects, and the pages come one after the other: with 500 a diff of 70k
// objects made 140 requests in sequence.
const diffPageFactor = 10

// errTooManyChanged: the diff gave up (see maxDiffShare).
var errTooManyChanged = errors.New("too many objects changed since the snapshot for a diff")

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
// a consistent, paginated metadata LIST (its first page requested while the
// snapshot's records still decode) compared page by page by uid and
// resourceVersion, Gets of what was added or changed, sent as each page is
// compared and so made while the next pages are listed, the keys no page
// listed dropped, and a watch from the list's RV up to the newest RV seen.
// It returns the caught-up RV and the objects fetched, and logs how long
// each step took; errTooManyChanged when it gave up.
func (r *reflector) snapshotDiff(ctx context.Context, ws *warmSnapshot) (string, int, error) {
	cfg := r.opts.snapshot.cfg
	if cfg.ListMetadata == nil || cfg.Get == nil {
		return "", 0, errNoDiff
	}
	start := r.clock.Now()
	var (
		f         *diffFetcher
		seen      = make(map[string]struct{}, ws.records)
		listed    int
		fetched   int
		decodeFor float64
	)
	defer func() {
		if f != nil {
			f.stop()
		}
	}()
	rv, pages, err := r.diffList(ctx, func(listRV string, page []listedMeta) error {
		if f == nil {
			waited := r.clock.Now()
			if err := ws.wait(ctx); err != nil {
				return err
			}
			decodeFor = r.clock.Since(waited).Seconds()
			f = r.newDiffFetcher(ctx, listRV)
		}
		fetch := comparePage(ws, page, seen)
		listed += len(page)
		fetched += len(fetch)
		if fetched > diffGetFloor && fetched*maxDiffShare > listed {
			return fmt.Errorf("%w: %d of the first %d objects listed (more than %d and 1/%d)",
				errTooManyChanged, fetched, listed, diffGetFloor, maxDiffShare)
		}
		f.send(fetch)
		return f.apply(ws, false)
	})
	if err != nil {
		return "", 0, err
	}
	listedAt := r.clock.Now()
	newest := rv
	if f != nil {
		f.close()
		if err := f.apply(ws, true); err != nil {
			return "", 0, err
		}
		newest = f.newest(rv)
	}
	dropUnlisted(ws, seen)
	fetchedAt := r.clock.Now()
	rv, err = r.catchUp(ctx, ws, rv, newest)
	if err != nil {
		return "", 0, err
	}
	r.logger(ctx).WithValues("reflector", r.name).Info("snapshot compared with a metadata list",
		"listed", listed, "pages", pages, "fetched", fetched,
		"listSeconds", listedAt.Sub(start).Seconds(),
		"decodeWaitSeconds", decodeFor,
		"getSecondsAfterList", fetchedAt.Sub(listedAt).Seconds(),
		"catchUpSeconds", r.clock.Since(fetchedAt).Seconds())
	return rv, fetched, nil
}

// diffList lists the scope's metadata (within the shard) in pages of
// diffPageFactor × PageSize, gives each page to compare with the list's RV
// as it comes, and returns the list's RV and the number of pages.
func (r *reflector) diffList(ctx context.Context, compare func(rv string, page []listedMeta) error) (string, int, error) {
	cfg := r.opts.snapshot.cfg
	sel := r.shard.Load()
	pageSize := r.opts.PageSize
	if pageSize <= 0 {
		pageSize = defaultPageSize
	}
	opts := metav1.ListOptions{ResourceVersion: "", Limit: pageSize * diffPageFactor}
	var rv string
	var page []listedMeta
	pages := 0
	for {
		r.shardOptions(ctx, &opts, sel)
		r.opts.metrics.listRequest()
		list, err := cfg.ListMetadata(ctx, opts)
		if err != nil {
			return "", 0, err
		}
		r.opts.metrics.listPage()
		pages++
		if rv == "" {
			// Every page of a paginated list is at the first page's RV.
			rv = list.ResourceVersion
			if _, ok := parseRV(rv); !ok {
				return "", 0, fmt.Errorf("metadata list resourceVersion %q is not an integer", rv)
			}
		}
		page = page[:0]
		for i := range list.Items {
			it := &list.Items[i]
			if sel != nil && !sel.admits(it) {
				continue
			}
			key := it.Name
			if it.Namespace != "" {
				key = it.Namespace + "/" + it.Name
			}
			page = append(page, listedMeta{diffFetch: diffFetch{key: key, namespace: it.Namespace, name: it.Name},
				uid: string(it.UID), rv: it.ResourceVersion})
		}
		if err := compare(rv, page); err != nil {
			return "", 0, err
		}
		if list.Continue == "" {
			return rv, pages, nil
		}
		opts.Continue = list.Continue
	}
}

// comparePage compares one page of listed objects with the staging set,
// adds their keys to seen, and returns the objects added or changed (another
// uid or resourceVersion), to fetch.
func comparePage(ws *warmSnapshot, page []listedMeta, seen map[string]struct{}) []diffFetch {
	var fetch []diffFetch
	for i := range page {
		l := &page[i]
		seen[l.key] = struct{}{}
		if cur, ok := ws.objs[l.key]; ok && string(objectUID(cur)) == l.uid && objectRV(cur) == l.rv {
			continue
		}
		fetch = append(fetch, l.diffFetch)
	}
	return fetch
}

// dropUnlisted drops from the staging set the keys the list did not have.
func dropUnlisted(ws *warmSnapshot, seen map[string]struct{}) {
	for key := range ws.objs {
		if _, ok := seen[key]; !ok {
			delete(ws.objs, key)
		}
	}
}

// diffFetcher Gets the objects a metadata diff must fetch, diffGetWorkers at
// a time, each not older than the list's RV (served from the API server's
// watch cache). The results wait in done, a slice rather than a channel so
// that no worker waits while the diff's goroutine lists the next page, until
// apply puts them in the staging set on that goroutine (the transform is not
// called concurrently, and the staging set has one writer).
type diffFetcher struct {
	r      *reflector
	ctx    context.Context
	cancel context.CancelFunc
	work   chan diffFetch
	wg     sync.WaitGroup

	mu   sync.Mutex
	done []diffFetched
	// newestRV is the newest RV among the objects applied.
	newestRV string
}

type diffFetched struct {
	f   diffFetch
	obj runtime.Object
	err error
}

func (r *reflector) newDiffFetcher(ctx context.Context, listRV string) *diffFetcher {
	ctx, cancel := context.WithCancel(ctx)
	f := &diffFetcher{r: r, ctx: ctx, cancel: cancel, work: make(chan diffFetch, 1024)}
	get := r.opts.snapshot.cfg.Get
	for range diffGetWorkers {
		f.wg.Go(func() {
			for {
				var it diffFetch
				select {
				case next, ok := <-f.work:
					if !ok {
						return
					}
					it = next
				case <-ctx.Done():
					return
				}
				obj, err := get(ctx, it.namespace, it.name, metav1.GetOptions{ResourceVersion: listRV})
				if ctx.Err() != nil {
					return
				}
				f.mu.Lock()
				f.done = append(f.done, diffFetched{f: it, obj: obj, err: err})
				f.mu.Unlock()
			}
		})
	}
	return f
}

// send queues fetch for the workers (it blocks while 1,024 wait already).
func (f *diffFetcher) send(fetch []diffFetch) {
	for _, it := range fetch {
		select {
		case f.work <- it:
		case <-f.ctx.Done():
			return
		}
	}
}

// close says nothing more will be sent.
func (f *diffFetcher) close() { close(f.work) }

// stop cancels the Gets in flight and waits for the workers.
func (f *diffFetcher) stop() {
	f.cancel()
	f.wg.Wait()
}

// apply puts the results so far in the staging set, through admit, or drops
// the key of an object gone (NotFound: its watch event says so too) or not
// admitted; with all (after close), it first waits for every Get. It returns
// the first Get that failed, or the diff's context's error.
func (f *diffFetcher) apply(ws *warmSnapshot, all bool) error {
	if all {
		f.wg.Wait()
	}
	f.mu.Lock()
	batch := f.done
	f.done = nil
	f.mu.Unlock()
	sel := f.r.shard.Load()
	for _, res := range batch {
		if apierrors.IsNotFound(res.err) {
			delete(ws.objs, res.f.key)
			continue
		}
		if res.err != nil {
			return fmt.Errorf("get %s: %w", res.f.key, res.err)
		}
		staged, verdict := f.r.admit(f.ctx, sel, res.obj, admitListed)
		if verdict != admitted {
			delete(ws.objs, res.f.key)
			continue
		}
		ws.objs[res.f.key] = staged
		if orv := objectRV(staged); f.newestRV == "" || rvOlder(f.newestRV, orv) {
			f.newestRV = orv
		}
	}
	return f.ctx.Err()
}

// newest returns the newest of rv and the RVs of the objects fetched.
func (f *diffFetcher) newest(rv string) string {
	if f.newestRV != "" && rvOlder(rv, f.newestRV) {
		return f.newestRV
	}
	return rv
}
