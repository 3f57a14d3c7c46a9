package informer

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

func TestWatchListIsTheDefaultAndContinuesOnSameStream(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ServeWatchList(true)
	f.Create(pod("a", "p1", ""))
	f.Create(pod("a", "p2", ""))
	s := newPodInformer(f, Options{})
	rec := newRecorder()
	reg := addHandler(t, s, rec)
	startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	f.Create(pod("a", "p3", ""))
	eventually(t, 10*time.Second, "p3", func() bool { return rec.count() == 3 })

	//nolint:goconst // expected values are spelled out so the test reads as its specification
	equalStrings(t, "events", append(sortedCopy(rec.all()[:2]), rec.all()[2]), []string{
		"add a/p1@2 initial", "add a/p2@3 initial", "add a/p3@4",
	})
	reqs := f.Requests()
	equalStrings(t, "requests", summarize(reqs), []string{reqWatchList})
	o := reqs[0].Options
	if o.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan || !o.AllowWatchBookmarks ||
		o.TimeoutSeconds == nil || *o.TimeoutSeconds < 300 || *o.TimeoutSeconds > 600 {
		t.Fatalf("watch-list options = %s", o.String())
	}
	stats, ok := s.LastListSummary()
	if !ok || !stats.WatchList || stats.Objects != 2 || stats.ResourceVersion != "3" || stats.Pages != 0 {
		t.Fatalf("stats = %+v", stats)
	}
	//nolint:goconst // expected values are spelled out so the test reads as its specification
	equalStrings(t, "store", storeContent(s), []string{"a/p1@2", "a/p2@3", "a/p3@4"})
}

func TestWatchListFallsBackToListWhenInitialEventsNeverEndAndKeepsListing(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ServeWatchList(true)
	f.Create(pod("a", "p1", ""))
	// A server that ignores sendInitialEvents: adds, but no end bookmark.
	f.ScriptWatch(informertest.WatchResponse{Events: []watch.Event{{Type: watch.Added, Object: pod("a", "p1", "2")}}})
	errs := make(chan *ListWatchError, 10)
	s := newPodInformer(f, Options{
		WatchListTimeout: 30 * time.Millisecond,
		WatchErrorHandler: func(_ context.Context, _ *toolscache.Reflector, err error) {
			select {
			case errs <- err.(*ListWatchError):
			default:
			}
		},
	})
	rec := newRecorder()
	reg := addHandler(t, s, rec)
	run := startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	equalStrings(t, "requests", summarize(waitRequests(t, f, 3)[:3]), []string{
		reqWatchList, reqList, reqWatch2,
	})
	equalStrings(t, "events", rec.all(), []string{"add a/p1@2 initial"})
	if !f.Watches()[0].IsStopped() {
		t.Fatal("the abandoned stream was not stopped")
	}
	select {
	case e := <-errs:
		if e.Op != opWatchList || e.Reason != ReasonWatchListTimeout {
			t.Fatalf("reported %+v", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no error reported")
	}
	// A relist (410) lists again without trying to stream.
	f.Compact()
	equalStrings(t, "requests after 410", summarize(waitRequests(t, f, 5)[3:5]), []string{reqList, reqWatch2})
	run.stop(t)
}

func TestWatchListRefusedByServerUsesListFromThenOn(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ServeWatchList(true)
	f.Create(pod("a", "p1", ""))
	refused := apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", field.ErrorList{
		field.Forbidden(field.NewPath("sendInitialEvents"),
			"sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"),
	})
	f.ScriptWatch(informertest.WatchResponse{Err: refused})
	run := runReflector(t, f, reflectorOptions{})
	equalStrings(t, "requests", summarize(waitRequests(t, f, 3)[:3]), []string{
		reqWatchList, reqList, reqWatch2,
	})
	if e := run.nextErr(t); e.Op != opWatchList || e.Reason != ReasonServerError || !apierrors.IsInvalid(e) {
		t.Fatalf("reported %+v", e)
	}
	f.Compact()
	equalStrings(t, "requests after 410", summarize(waitRequests(t, f, 5)[3:5]), []string{reqList, reqWatch2})
}

func TestWatchListRefusalIsNeverLastError(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ServeWatchList(true)
	f.Create(pod("a", "p1", ""))
	f.ScriptWatch(informertest.WatchResponse{Err: apierrors.NewBadRequest("sendInitialEvents is not supported")})
	store := &recStore{}
	lastAtReport := make(chan error, 1)
	var r *reflector
	r = newReflector(f, &corev1.Pod{}, store, reflectorOptions{
		Backoff: fastBackoff,
		WatchErrorHandler: func(_ context.Context, _ *toolscache.Reflector, err error) {
			select {
			case lastAtReport <- r.LastError():
			default:
			}
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()

	select {
	case last := <-lastAtReport:
		if last != nil {
			t.Fatalf("LastError while the refusal was reported = %v, want nil: the LIST fallback is not a failure", last)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the refusal never reached the WatchErrorHandler")
	}
	equalStrings(t, "requests", summarize(waitRequests(t, f, 3)[:3]), []string{
		reqWatchList, reqList, reqWatch2,
	})
	if err := r.LastError(); err != nil {
		t.Fatalf("LastError after the LIST fallback = %v, want nil", err)
	}
}

func TestWatchListTransientFailureFallsBackOnceThenStreamsAgain(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ServeWatchList(true)
	f.Create(pod("a", "p1", ""))
	f.ScriptWatch(informertest.WatchResponse{Events: []watch.Event{informertest.StatusEvent(informertest.ErrInternal())}})
	run := runReflector(t, f, reflectorOptions{})
	equalStrings(t, "requests", summarize(waitRequests(t, f, 3)[:3]), []string{
		reqWatchList, reqList, reqWatch2,
	})
	if e := run.nextErr(t); e.Op != opWatchList || e.Reason != ReasonServerError {
		t.Fatalf("reported %+v", e)
	}
	f.Compact()
	equalStrings(t, "requests after 410", summarize(waitRequests(t, f, 4)[3:4]), []string{reqWatchList})
	eventually(t, 5*time.Second, "streamed relist installed", func() bool { return len(run.store.all()) == 2 })
	equalStrings(t, "store", run.store.all(), []string{"replace [a/p1@2] rv=2", "replace [a/p1@2] rv=2"})
	if st, ok := run.r.LastListSummary(); !ok || !st.WatchList {
		t.Fatalf("LastListSummary = %+v, want a streamed list", st)
	}
}

func TestWatchListStreamClosedEarlyFallsBackToList(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ServeWatchList(true)
	f.ScriptWatch(informertest.WatchResponse{Events: []watch.Event{{Type: watch.Added, Object: pod("a", "p1", "2")}},
		Close: true})
	f.ScriptList(informertest.ListResponse{Items: items(pod("a", "p1", "2")), ResourceVersion: "5"})
	run := runReflector(t, f, reflectorOptions{})
	equalStrings(t, "requests", summarize(waitRequests(t, f, 3)[:3]), []string{
		reqWatchList, reqList, `watch rv="5"`,
	})
	if e := run.nextErr(t); e.Op != opWatchList || e.Reason != ReasonTransport {
		t.Fatalf("reported %+v", e)
	}
	// The streamed objects never reached the store: only the LIST did.
	equalStrings(t, "store", run.store.all(), []string{"replace [a/p1@2] rv=5"})
	if !f.Watches()[0].IsStopped() {
		t.Error("the stream that ended early was not stopped")
	}
}

func TestWatchListDisabledByOption(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ServeWatchList(true)
	s := newPodInformer(f, Options{DisableWatchList: true})
	startInformer(t, s)
	equalStrings(t, "requests", summarize(waitRequests(t, f, 2)[:2]), []string{reqList, reqWatch1})
}

func TestWatchListNotUsedWhenListerWatcherOptsOut(t *testing.T) {
	f := informertest.New(&corev1.Pod{}) // IsWatchListSemanticsUnSupported() == true
	runReflector(t, f, reflectorOptions{})
	equalStrings(t, "reflector requests", summarize(waitRequests(t, f, 2)[:2]), []string{reqList, reqWatch1})

	// A ListerWatcher without context methods is wrapped by the informer; its
	// opt-out must survive the wrapping.
	g := informertest.New(&corev1.Pod{})
	s := newPodInformer(plainLW{g}, Options{})
	startInformer(t, s)
	equalStrings(t, "informer requests", summarize(waitRequests(t, g, 2)[:2]), []string{reqList, reqWatch1})
}

// plainLW is a toolscache.ListerWatcher without the context-aware methods
// that opts out of WatchList.
type plainLW struct{ f *informertest.Fake }

func (p plainLW) List(o metav1.ListOptions) (runtime.Object, error) { return p.f.List(o) }
func (p plainLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return p.f.Watch(o)
}
func (p plainLW) IsWatchListSemanticsUnSupported() bool { return true }

func TestWatchListOverAdapterWithoutBookmarksIsNotUsed(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ServeWatchList(true)
	lw := NewListWatch(f.ListWithContext, f.WatchWithContext, ListWatchOptions{AllowWatchBookmarks: false})
	runReflector(t, lw, reflectorOptions{})
	equalStrings(t, "requests", summarize(waitRequests(t, f, 2)[:2]), []string{reqList, reqWatch1})

	g := informertest.New(&corev1.Pod{})
	g.ServeWatchList(true)
	lw = NewListWatch(g.ListWithContext, g.WatchWithContext, ListWatchOptions{AllowWatchBookmarks: true})
	runReflector(t, lw, reflectorOptions{})
	equalStrings(t, "requests with bookmarks", summarize(waitRequests(t, g, 1)[:1]), []string{reqWatchList})
}

func TestWatchListForbiddenFallsBackToListWhoseErrorIsTheAttempts(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ServeWatchList(true)
	f.ScriptWatch(informertest.WatchResponse{Err: informertest.ErrForbidden()})
	f.ScriptList(informertest.ListResponse{Err: informertest.ErrForbidden()})
	run := runReflector(t, f, reflectorOptions{})
	// As in client-go, every WatchList failure but a refusal falls back to
	// LIST at once; the attempt ends with the LIST's error, then backs off
	// and streams again.
	equalStrings(t, "requests", summarize(waitRequests(t, f, 3)[:3]), []string{
		reqWatchList, reqList, reqWatchList,
	})
	for _, op := range []string{opWatchList, opList} {
		if e := run.nextErr(t); e.Op != op || e.Reason != ReasonForbidden || !apierrors.IsForbidden(e) {
			t.Fatalf("reported %+v, want %s/Forbidden", e, op)
		}
	}
}

// watchListRun runs a Reflector whose WatchList stream is the test's: the
// first watch answers with no event and stays open.
func watchListRun(t *testing.T, limit time.Duration) (*informertest.Fake, *reflectorRun, *informertest.Stream) {
	t.Helper()
	f := informertest.New(&corev1.Pod{})
	f.ServeWatchList(true)
	f.ScriptWatch(informertest.WatchResponse{})
	run := runReflector(t, f, reflectorOptions{WatchListTimeout: limit})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := f.WaitForWatch(ctx, 0)
	must(t, err)
	return f, run, stream
}

// A stream slower than WatchListTimeout overall but never silent for that
// long is a large list arriving, not a server ignoring sendInitialEvents.
func TestWatchListSlowButSteadyStreamIsNotCutShort(t *testing.T) {
	const limit = time.Second
	f, run, stream := watchListRun(t, limit)
	const n = 12 // one every 200ms: 2.4s, longer than limit
	for i := range n {
		stream.Send(watch.Event{Type: watch.Added, Object: pod("a", fmt.Sprintf("p%02d", i), strconv.Itoa(i+2))})
		time.Sleep(limit / 5)
	}
	stream.Send(informertest.InitialEventsEndBookmark(&corev1.Pod{}, strconv.Itoa(n+1)))
	waitRequests(t, f, 1)
	eventually(t, 10*time.Second, "the streamed list installed", func() bool {
		stats, ok := run.r.LastListSummary()
		return ok && stats.WatchList && stats.Objects == n
	})
	select {
	case err := <-run.errs:
		t.Fatalf("a steady stream was reported as %v", err)
	default:
	}
	if got := summarize(f.Requests()); len(got) != 1 || got[0] != reqWatchList {
		t.Errorf("requests %v, want the one WatchList stream", got)
	}
}

// A stream that keeps delivering but never ends its initial events is cut
// after three WatchListTimeouts, and the Reflector lists instead.
func TestWatchListStreamThatNeverEndsIsCutAfterThreeTimeouts(t *testing.T) {
	const limit = 200 * time.Millisecond
	f, run, stream := watchListRun(t, limit)
	start := time.Now()
	go func() {
		for i := 0; !stream.IsStopped(); i++ {
			stream.Send(watch.Event{Type: watch.Added, Object: pod("a", "busy", strconv.Itoa(i+2))})
			time.Sleep(limit / 10)
		}
	}()
	err := run.nextErr(t)
	if err.Op != opWatchList || err.Reason != ReasonWatchListTimeout {
		t.Fatalf("error %+v, want a WatchListTimeout of the stream", err)
	}
	if took := time.Since(start); took < 3*limit {
		t.Errorf("stream cut after %v, want no sooner than 3×%v", took, limit)
	}
	equalStrings(t, "requests", summarize(waitRequests(t, f, 2)[:2]), []string{reqWatchList, reqList})
}

// fallbackTime runs a Reflector with the default WatchListTimeout on a fake
// clock, lets feed drive the first (WatchList) stream, and steps the clock by
// half a second until the Reflector sends a LIST. It returns the fake time
// the fallback took.
func fallbackTime(t *testing.T, feed func(*informertest.Stream)) time.Duration {
	t.Helper()
	f := informertest.New(&corev1.Pod{})
	f.ServeWatchList(true)
	f.Create(pod("a", "p1", ""))
	f.ScriptWatch(informertest.WatchResponse{})
	fc := clocktesting.NewFakeClock(time.Now())
	run := runReflector(t, f, reflectorOptions{Clock: fc})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := f.WaitForWatch(ctx, 0)
	must(t, err)
	feed(stream)
	listed := func() bool {
		for _, r := range f.Requests() {
			if r.Verb == informertest.VerbList {
				return true
			}
		}
		return false
	}
	start := fc.Now()
	for fc.Since(start) < 5*time.Minute {
		// Let the Reflector take what the stream and the clock gave it.
		deadline := time.Now().Add(20 * time.Millisecond)
		for time.Now().Before(deadline) && !listed() {
			time.Sleep(time.Millisecond)
		}
		if listed() {
			took := fc.Since(start)
			err := run.nextErr(t)
			if err.Op != opWatchList || err.Reason != ReasonWatchListTimeout {
				t.Fatalf("error %+v, want a WatchListTimeout of the stream", err)
			}
			equalStrings(t, "requests", summarize(waitRequests(t, f, 2)[:2]), []string{reqWatchList, reqList})
			return took
		}
		fc.Step(500 * time.Millisecond)
	}
	t.Fatalf("no LIST within %v of fake time", fc.Since(start))
	return 0
}

// A proxy or aggregated server that drops bookmarks: the initial events
// come, the end bookmark never does, the stream stays open and silent. With
// the default WatchListTimeout the Reflector lists within 30 s (before,
// one to two minutes: a race with controller-runtime's CacheSyncTimeout).
func TestWatchListWithoutEndBookmarkFallsBackToListWithin30s(t *testing.T) {
	took := fallbackTime(t, func(s *informertest.Stream) {
		s.Add(pod("a", "p1", "2"))
	})
	if took > 30*time.Second {
		t.Fatalf("fell back to LIST after %v of silence, want within 30s", took)
	}
	if took < defaultWatchListTimeout {
		t.Fatalf("fell back to LIST after %v, sooner than one WatchListTimeout (%v)", took, defaultWatchListTimeout)
	}
}

// The same, in a busy cluster: the end bookmark was dropped and live events
// follow the initial ones. A MODIFIED event cannot be an initial event, so
// the Reflector lists at once instead of waiting for silence that never
// comes (before: after four minutes).
func TestWatchListLiveEventBeforeEndBookmarkFallsBackToListAtOnce(t *testing.T) {
	took := fallbackTime(t, func(s *informertest.Stream) {
		s.Add(pod("a", "p1", "2"))
		go func() {
			for i := 3; !s.IsStopped(); i++ {
				s.Modify(pod("a", "p1", strconv.Itoa(i)))
				time.Sleep(5 * time.Millisecond)
			}
		}()
	})
	if took > 30*time.Second {
		t.Fatalf("fell back to LIST after %v of fake time, want within 30s", took)
	}
}
