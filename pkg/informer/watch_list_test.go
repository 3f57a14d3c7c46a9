package informer

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

func TestWatchListStreamsInitialListThenContinuesOnSameStream(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ServeWatchList(true)
	f.Create(pod("a", "p1", ""))
	f.Create(pod("a", "p2", ""))
	s := newPodInformer(f, Options{WatchList: true})
	rec := newRecorder()
	reg := addHandler(t, s, rec)
	startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	f.Create(pod("a", "p3", ""))
	eventually(t, 10*time.Second, "p3", func() bool { return rec.count() == 3 })

	equalStrings(t, "events", append(sortedCopy(rec.all()[:2]), rec.all()[2]), []string{
		"add a/p1@2 initial", "add a/p2@3 initial", "add a/p3@4",
	})
	reqs := f.Requests()
	if len(reqs) != 1 || reqs[0].Verb != informertest.VerbWatch {
		t.Fatalf("requests = %+v, want one watch", summarize(reqs))
	}
	o := reqs[0].Options
	if o.SendInitialEvents == nil || !*o.SendInitialEvents || o.ResourceVersion != "" ||
		o.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan || !o.AllowWatchBookmarks {
		t.Fatalf("watch-list options = %s", o.String())
	}
	stats, ok := s.LastListStats()
	if !ok || !stats.WatchList || stats.Objects != 2 || stats.ResourceVersion != "3" {
		t.Fatalf("stats = %+v", stats)
	}
}

func TestWatchListFallsBackToListWhenInitialEventsNeverEnd(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ServeWatchList(true)
	f.Create(pod("a", "p1", ""))
	// A server that ignores sendInitialEvents: adds, but no end bookmark.
	f.ScriptWatch(informertest.WatchResponse{Events: []watch.Event{{Type: watch.Added, Object: pod("a", "p1", "2")}}})
	s := newPodInformer(f, Options{WatchList: true, WatchListTimeout: 30 * time.Millisecond})
	rec := newRecorder()
	reg := addHandler(t, s, rec)
	run := startInformer(t, s)
	waitSynced(t, reg.HasSyncedChecker())
	equalStrings(t, "requests", summarize(waitRequests(t, f, 3)[:3]), []string{`watch rv=""`, `list rv="" limit=500`, `watch rv="2"`})
	equalStrings(t, "events", rec.all(), []string{"add a/p1@2 initial"})
	if !f.Watches()[0].IsStopped() {
		t.Fatal("the abandoned stream was not stopped")
	}
	run.stop(t)
}

func TestWatchListErrorEventFallsBackToListAndIsReported(t *testing.T) {
	f := informertest.New(&corev1.Pod{})
	f.ServeWatchList(true)
	f.ScriptWatch(informertest.WatchResponse{Events: []watch.Event{informertest.StatusEvent(informertest.ErrInternal())}})
	f.ScriptList(informertest.ListResponse{ResourceVersion: "5"})
	f.ScriptWatch(informertest.WatchResponse{})
	run := runReflector(t, f, ReflectorOptions{WatchList: true})
	reqs := waitRequests(t, f, 3)
	equalStrings(t, "requests", summarize(reqs[:3]), []string{`watch rv=""`, `list rv="" limit=500`, `watch rv="5"`})
	if e := run.nextErr(t); e.Op != "watchlist" || e.Reason != ReasonServerError {
		t.Fatalf("reported %+v", e)
	}
	equalStrings(t, "store", run.store.all(), []string{"replace [] rv=5"})
}

func TestWatchListNotUsedWhenListerWatcherOptsOut(t *testing.T) {
	f := informertest.New(&corev1.Pod{}) // IsWatchListSemanticsUnSupported() == true
	runReflector(t, f, ReflectorOptions{WatchList: true})
	reqs := waitRequests(t, f, 2)
	equalStrings(t, "requests", summarize(reqs[:2]), []string{`list rv="" limit=500`, `watch rv="1"`})
}
