package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// recStore records what a Reflector writes.
type recStore struct {
	mu  sync.Mutex
	ops []string
}

func (s *recStore) rec(op string) {
	s.mu.Lock()
	s.ops = append(s.ops, op)
	s.mu.Unlock()
}
func (s *recStore) Add(obj any) error    { s.rec("add " + describe(obj)); return nil }
func (s *recStore) Update(obj any) error { s.rec("update " + describe(obj)); return nil }
func (s *recStore) Delete(obj any) error { s.rec("delete " + describe(obj)); return nil }
func (s *recStore) Bookmark(rv string)   { s.rec("bookmark " + rv) }
func (s *recStore) Replace(list []any, rv string) error {
	s.rec(fmt.Sprintf("replace %v rv=%s", describeAll(list), rv))
	return nil
}
func (s *recStore) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ops)
}

var fastBackoff = Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond, Jitter: -1}

type reflectorRun struct {
	r      *reflector
	store  *recStore
	errs   chan error
	cancel context.CancelFunc
	done   chan struct{}
}

func runReflector(t *testing.T, lw toolscache.ListerWatcherWithContext, opts reflectorOptions) *reflectorRun {
	t.Helper()
	if opts.Backoff == (Backoff{}) {
		opts.Backoff = fastBackoff
	}
	run := &reflectorRun{store: &recStore{}, errs: make(chan error, 100), done: make(chan struct{})}
	opts.WatchErrorHandler = func(ctx context.Context, r *toolscache.Reflector, err error) {
		// client-go's handlers read the Reflector's name and type, so it must be there.
		if r == nil {
			t.Errorf("WatchErrorHandler got a nil Reflector")
		} else if r.Name() != run.r.Name() || r.TypeDescription() != "*v1.Pod" {
			t.Errorf("WatchErrorHandler got Reflector %q of %q, want %q of *v1.Pod",
				r.Name(), r.TypeDescription(), run.r.Name())
		} else {
			// The handler most operators wrap; an expired error is logged at V(4).
			toolscache.DefaultWatchErrorHandler(ctx, r, apierrors.NewResourceExpired("test"))
		}
		select {
		case run.errs <- err:
		default:
		}
	}
	run.r = newReflector(lw, &corev1.Pod{}, run.store, opts)
	ctx, cancel := context.WithCancel(context.Background())
	run.cancel = cancel
	go func() { defer close(run.done); run.r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-run.done
	})
	return run
}

func (run *reflectorRun) stop(t *testing.T) {
	t.Helper()
	run.cancel()
	waitClosed(t, run.done, 5*time.Second, "reflector to stop")
}

func (run *reflectorRun) nextErr(t *testing.T) *ListWatchError {
	t.Helper()
	select {
	case err := <-run.errs:
		var lwe *ListWatchError
		if !errors.As(err, &lwe) {
			t.Fatalf("WatchErrorHandler got %T %v, want *ListWatchError", err, err)
		}
		return lwe
	case <-time.After(5 * time.Second):
		t.Fatal("no error reported")
		return nil
	}
}

func items(objs ...runtime.Object) []runtime.Object { return objs }

// Request summaries (as summarize renders them) and store calls that many tests expect.
const (
	reqList             = `list rv="" limit=500`
	reqWatchList        = `watch rv="" sendInitialEvents`
	reqWatch1           = `watch rv="1"`
	reqWatch2           = `watch rv="2"`
	reqWatch10          = `watch rv="10"`
	reqWatch11          = `watch rv="11"`
	storeReplaceEmpty10 = "replace [] rv=10"
)

func waitRequests(t *testing.T, f *informertest.Fake, n int) []informertest.Request {
	t.Helper()
	reqs, err := f.WaitForRequests(testCtx(t), n)
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

// summarize renders requests as "list rv= limit=2 continue=c1", "watch rv=10"
// or `watch rv="" sendInitialEvents` (a WatchList request).
func summarize(reqs []informertest.Request) []string {
	out := make([]string, 0, len(reqs))
	for _, r := range reqs {
		o := r.Options
		s := fmt.Sprintf("%s rv=%q", r.Verb, o.ResourceVersion)
		if o.SendInitialEvents != nil && *o.SendInitialEvents {
			s += " sendInitialEvents"
		}
		if r.Verb == informertest.VerbList {
			s += fmt.Sprintf(" limit=%d", o.Limit)
			if o.Continue != "" {
				s += " continue=" + o.Continue
			}
		}
		out = append(out, s)
	}
	return out
}

func TestListAndWatchPaginatesWithConsistentReadThenWatchesFromListRV(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(
		informertest.ListResponse{Items: items(pod("a", "p1", "3"), pod("a", "p2", "5")), ResourceVersion: "10",
			Continue: "c1"},
		informertest.ListResponse{Items: items(pod("b", "p3", "7")), ResourceVersion: "10"},
	)
	f.ScriptWatch(informertest.WatchResponse{})
	run := runReflector(t, f, reflectorOptions{PageSize: 2})
	reqs := waitRequests(t, f, 3)
	equalStrings(t, "requests", summarize(reqs[:3]), []string{
		`list rv="" limit=2`,
		`list rv="" limit=2 continue=c1`,
		reqWatch10,
	})
	w := reqs[2].Options
	if !w.AllowWatchBookmarks {
		t.Error("watch without AllowWatchBookmarks")
	}
	if w.TimeoutSeconds == nil || *w.TimeoutSeconds < 300 || *w.TimeoutSeconds > 600 {
		t.Errorf("watch TimeoutSeconds = %v, want within [300, 600]", w.TimeoutSeconds)
	}
	equalStrings(t, "store", run.store.all(), []string{"replace [a/p1@3 a/p2@5 b/p3@7] rv=10"})
	stats, ok := run.r.LastListSummary()
	if !ok || stats.Pages != 2 || stats.Objects != 3 || stats.ResourceVersion != "10" {
		t.Fatalf("LastListSummary = %+v, %v", stats, ok)
	}
}

func TestDefaultPageSizeIs500(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	runReflector(t, f, reflectorOptions{})
	reqs := waitRequests(t, f, 1)
	if reqs[0].Options.Limit != 500 || reqs[0].Options.ResourceVersion != "" {
		t.Fatalf("first list options = %+v", reqs[0].Options)
	}
}

func TestWatchEventsReachStoreAndBookmarksOnlyAdvanceRV(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(informertest.ListResponse{ResourceVersion: "10"})
	f.ScriptWatch(informertest.WatchResponse{Events: []watch.Event{
		{Type: watch.Added, Object: pod("a", "x", "11")},
		{Type: watch.Modified, Object: pod("a", "x", "12")},
		informertest.BookmarkEvent(&corev1.Pod{}, "15"),
		{Type: watch.Deleted, Object: pod("a", "x", "16")},
		informertest.BookmarkEvent(&corev1.Pod{}, "20"),
	}, Close: true})
	run := runReflector(t, f, reflectorOptions{})
	reqs := waitRequests(t, f, 3) // list, watch, re-watch
	equalStrings(t, "store", run.store.all(), []string{
		storeReplaceEmpty10, "add a/x@11", "update a/x@12", "bookmark 15", "delete a/x@16", "bookmark 20",
	})
	equalStrings(t, "requests", summarize(reqs[:3]), []string{reqList, reqWatch10, `watch rv="20"`})
	if got := run.r.LastSyncResourceVersion(); got != "20" {
		t.Fatalf("LastSyncResourceVersion = %q, want 20", got)
	}
}

func TestNormalWatchEndRewatchesFromLastRVWithoutRelist(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(informertest.ListResponse{ResourceVersion: "10"})
	f.ScriptWatch(
		informertest.WatchResponse{Events: []watch.Event{{Type: watch.Added, Object: pod("a", "x", "11")}}, Close: true},
		informertest.WatchResponse{Events: []watch.Event{{Type: watch.Modified, Object: pod("a", "x", "13")}}, Close: true},
	)
	runReflector(t, f, reflectorOptions{})
	reqs := waitRequests(t, f, 4)
	equalStrings(t, "requests", summarize(reqs[:4]), []string{
		reqList, reqWatch10, reqWatch11, `watch rv="13"`,
	})
}

func TestRelistAfter410UsesConsistentRead(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script informertest.WatchResponse
		reason string
	}{
		{"expired event", informertest.WatchResponse{Events: []watch.Event{
			{Type: watch.Added, Object: pod("a", "x", "11")},
			informertest.StatusEvent(informertest.ErrExpired()),
		}}, ReasonExpired},
		{"gone on open", informertest.WatchResponse{Err: informertest.ErrGone()}, ReasonExpired},
		{"too large RV on open", informertest.WatchResponse{Err: informertest.ErrTooLargeResourceVersion()},
			ReasonTooLargeResourceVersion},
		{"too large RV event, message only (older servers)", informertest.WatchResponse{Events: []watch.Event{
			informertest.StatusEvent(apierrors.NewTimeoutError("Too large resource version: 1000, current: 10", 1)),
		}}, ReasonTooLargeResourceVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := informertest.New(&corev1.Pod{})
			f.ScriptList(informertest.ListResponse{ResourceVersion: "10"}, informertest.ListResponse{ResourceVersion: "30"})
			f.ScriptWatch(tc.script, informertest.WatchResponse{})
			// A huge backoff proves the relist does not wait for it.
			run := runReflector(t, f, reflectorOptions{Backoff: Backoff{Initial: time.Hour, Jitter: -1}})
			reqs := waitRequests(t, f, 4)
			got := summarize(reqs[:4])
			equalStrings(t, "requests", got, []string{reqList, reqWatch10, reqList, `watch rv="30"`})
			if err := run.nextErr(t); err.Reason != tc.reason || err.Op != "watch" {
				t.Fatalf("reported %s/%s, want watch/%s", err.Op, err.Reason, tc.reason)
			}
		})
	}
}

func TestListExpiredRetriesConsistentList(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(informertest.ListResponse{Err: informertest.ErrExpired()},
		informertest.ListResponse{ResourceVersion: "7"})
	run := runReflector(t, f, reflectorOptions{Backoff: Backoff{Initial: time.Hour, Jitter: -1}})
	reqs := waitRequests(t, f, 3)
	equalStrings(t, "requests", summarize(reqs[:3]), []string{reqList, reqList, `watch rv="7"`})
	if err := run.nextErr(t); err.Reason != ReasonExpired || err.Op != opList {
		t.Fatalf("reported %+v", err)
	}
}

func TestContinueTokenExpiredMidListRestartsOneFullList(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(
		informertest.ListResponse{Items: items(pod("a", "p1", "3")), ResourceVersion: "10", Continue: "c1"},
		informertest.ListResponse{Err: informertest.ErrExpired()},
		informertest.ListResponse{Items: items(pod("a", "p1", "3"), pod("a", "p2", "12")), ResourceVersion: "12"},
	)
	run := runReflector(t, f, reflectorOptions{PageSize: 1})
	reqs := waitRequests(t, f, 4)
	equalStrings(t, "requests", summarize(reqs[:4]), []string{
		`list rv="" limit=1`, `list rv="" limit=1 continue=c1`, `list rv="" limit=0`, `watch rv="12"`,
	})
	// The store only ever saw the complete second list.
	equalStrings(t, "store", run.store.all(), []string{"replace [a/p1@3 a/p2@12] rv=12"})
}

func TestListErrorsReachWatchErrorHandlerAndLastError(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(
		informertest.ListResponse{Err: informertest.ErrForbidden()},
		informertest.ListResponse{Err: informertest.ErrNotFound()},
		informertest.ListResponse{Err: informertest.ErrInternal()},
		informertest.ListResponse{Err: connRefused()},
	)
	gate := make(chan struct{})
	lw := &gatedLW{Fake: f, beforeList: 5, gate: gate}
	run := runReflector(t, lw, reflectorOptions{Name: podsResource})

	want := []struct {
		reason string
		check  func(error) bool
	}{
		{ReasonForbidden, apierrors.IsForbidden},
		{ReasonNotFound, apierrors.IsNotFound},
		{ReasonServerError, apierrors.IsInternalError},
		{ReasonTransport, func(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }},
	}
	for i, w := range want {
		err := run.nextErr(t)
		if err.Reason != w.reason || err.Op != opList || err.Name != podsResource || !w.check(err) {
			t.Fatalf("error %d = %+v (%v), want list/%s wrapping the original", i, err, err, w.reason)
		}
		if !strings.HasPrefix(err.Error(), "pods: list failed ("+w.reason+"): ") {
			t.Fatalf("message %q", err.Error())
		}
	}
	// The fifth list blocks: LastError is the transport error.
	eventually(t, 5*time.Second, "LastError", func() bool {
		var lwe *ListWatchError
		return errors.As(run.r.LastError(), &lwe) && lwe.Reason == ReasonTransport
	})
	close(gate)
	waitRequests(t, f, 6) // list ok, watch
	eventually(t, 5*time.Second, "LastError cleared", func() bool { return run.r.LastError() == nil })
}

// gatedLW blocks the beforeList-th list (1-based) until gate closes.
type gatedLW struct {
	*informertest.Fake
	mu         sync.Mutex
	lists      int
	beforeList int
	gate       chan struct{}
}

func (g *gatedLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	g.mu.Lock()
	g.lists++
	n := g.lists
	g.mu.Unlock()
	if n == g.beforeList {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Fake.ListWithContext(ctx, o)
}

func TestWatchErrorEventOtherThanExpiredBacksOffAndRelists(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(informertest.ListResponse{ResourceVersion: "10"}, informertest.ListResponse{ResourceVersion: "11"})
	f.ScriptWatch(informertest.WatchResponse{Events: []watch.Event{informertest.StatusEvent(informertest.ErrInternal())}})
	run := runReflector(t, f, reflectorOptions{})
	reqs := waitRequests(t, f, 4)
	equalStrings(t, "requests", summarize(reqs[:4]), []string{reqList, reqWatch10, reqList, reqWatch11})
	if err := run.nextErr(t); err.Reason != ReasonServerError || !apierrors.IsInternalError(err) {
		t.Fatalf("reported %+v", err)
	}
}

func TestWatchOpenConnectionRefusedRewatchesWithoutRelist(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(informertest.ListResponse{ResourceVersion: "10"})
	refused := connRefused()
	f.ScriptWatch(informertest.WatchResponse{Err: refused},
		informertest.WatchResponse{Err: apierrors.NewTooManyRequests("slow down", 1)})
	run := runReflector(t, f, reflectorOptions{})
	reqs := waitRequests(t, f, 4)
	equalStrings(t, "requests", summarize(reqs[:4]), []string{reqList, reqWatch10, reqWatch10, reqWatch10})
	if e := run.nextErr(t); e.Reason != ReasonTransport {
		t.Fatalf("first error %+v", e)
	}
	if e := run.nextErr(t); e.Reason != ReasonTooManyRequests {
		t.Fatalf("second error %+v", e)
	}
}

func TestWatchDropsEventsOfUnexpectedType(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(informertest.ListResponse{ResourceVersion: "10"})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cm", ResourceVersion: "11"}}
	f.ScriptWatch(informertest.WatchResponse{Events: []watch.Event{
		{Type: watch.Added, Object: cm},
		{Type: watch.Added, Object: pod("a", "x", "12")},
	}, Close: true})
	run := runReflector(t, f, reflectorOptions{})
	waitRequests(t, f, 3)
	equalStrings(t, "store", run.store.all(), []string{storeReplaceEmpty10, "add a/x@12"})
}

func TestStaleRelistIsNotInstalled(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(
		informertest.ListResponse{ResourceVersion: "10"},
		informertest.ListResponse{Items: items(pod("a", "x", "11")), ResourceVersion: "15"}, // older than the applied 20
		informertest.ListResponse{Items: items(pod("a", "x", "25")), ResourceVersion: "25"},
	)
	f.ScriptWatch(
		informertest.WatchResponse{Events: []watch.Event{
			{Type: watch.Added, Object: pod("a", "x", "20")},
			informertest.StatusEvent(informertest.ErrExpired()),
		}},
		informertest.WatchResponse{},
	)
	run := runReflector(t, f, reflectorOptions{})
	reqs := waitRequests(t, f, 5)
	equalStrings(t, "requests", summarize(reqs[:5]), []string{
		reqList, reqWatch10, reqList, reqList, `watch rv="25"`,
	})
	equalStrings(t, "store", run.store.all(), []string{storeReplaceEmpty10, "add a/x@20", "replace [a/x@25] rv=25"})
	if e := run.nextErr(t); e.Reason != ReasonExpired {
		t.Fatalf("first error %+v", e)
	}
	if e := run.nextErr(t); e.Reason != ReasonStaleList {
		t.Fatalf("second error %+v", e)
	}
}

func TestSilentWatchIsAbandonedAndReopened(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ScriptList(informertest.ListResponse{ResourceVersion: "10"})
	f.ScriptWatch(
		informertest.WatchResponse{Events: []watch.Event{{Type: watch.Added, Object: pod("a", "x", "11")}}}, // then silence
		informertest.WatchResponse{},
	)
	run := runReflector(t, f, reflectorOptions{WatchStallTimeout: 30 * time.Millisecond})
	reqs := waitRequests(t, f, 3)
	equalStrings(t, "requests", summarize(reqs[:3]), []string{reqList, reqWatch10, reqWatch11})
	if e := run.nextErr(t); e.Reason != ReasonWatchStalled {
		t.Fatalf("error %+v", e)
	}
	if !f.Watches()[0].IsStopped() {
		t.Fatal("the stalled watch was not stopped")
	}
}

func TestReflectorRunExitsPromptlyWhenContextEnds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *informertest.Fake)
	}{
		{"while watching", func(f *informertest.Fake) {}},
		{"while backing off", func(f *informertest.Fake) {
			f.ScriptList(informertest.ListResponse{Err: informertest.ErrInternal()})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := informertest.New(&corev1.Pod{})
			tc.setup(f)
			run := runReflector(t, f, reflectorOptions{Backoff: Backoff{Initial: time.Hour, Jitter: -1}})
			waitRequests(t, f, 1)
			start := time.Now()
			run.stop(t)
			if d := time.Since(start); d > time.Second {
				t.Fatalf("Run took %s to return", d)
			}
		})
	}
}

// endCheckingStreamer is an initialStreamer that records, when it gets the
// end of the list, whether its Reflector had recorded the list's shard.
type endCheckingStreamer struct {
	r           *reflector
	shardAtEnd  bool
	endedWithRV string
}

func (s *endCheckingStreamer) beginInitialStream() bool       { return true }
func (s *endCheckingStreamer) appendInitial(part []any) error { return nil }
func (s *endCheckingStreamer) endInitialStream(rv string) {
	s.shardAtEnd, s.endedWithRV = s.r.listedShard.Load() != nil, rv
}

// Once the store has a streamed list's end, the informer may sync at any
// moment; whoever then sees it synced must find the list's shard recorded
// (ShardSettled), or a snapshot written at that moment is skipped as "shard
// moving" (TestSnapshotUnusableFilesAreDiscardedLoggedAndTheInformerListsCold
// failed so, once, under load).
func TestStreamedListRecordsItsShardBeforeTheStoreGetsItsEnd(t *testing.T) {
	r := newReflector(informertest.New(&corev1.Pod{}), &corev1.Pod{}, &recStore{}, reflectorOptions{})
	s := &endCheckingStreamer{r: r}
	r.installStreamed(s, nil, "42", ListSummary{Pages: 1, Objects: 0, ResourceVersion: "42"})
	if s.endedWithRV != "42" || !s.shardAtEnd {
		t.Fatalf("end of the list at rv %q with the shard recorded: %v; want rv 42, recorded", s.endedWithRV, s.shardAtEnd)
	}
}
